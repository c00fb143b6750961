"""The image's supply chain: the base image pinned by digest, every package at an exact,
tested version within setup.cfg's ranges, and setup.cfg's floors past known vulnerabilities."""

from __future__ import annotations

import re

import pytest
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.image.supply_chain import (
    CONSTRAINTS,
    DOCKERFILE,
    constraints,
    from_images,
    install_requires,
    render,
    runtime_closure,
)

DIGEST = re.compile(r"^[^@\s]+:[^@\s]+@sha256:[0-9a-f]{64}$")


def test_every_from_line_of_the_dockerfile_pins_its_image_by_digest() -> None:
    images = from_images()
    assert len(images) == 2  # the build stage and the image
    for image in images:
        assert DIGEST.match(image), f"{image}: FROM needs name:tag@sha256:<64 hex digits>"
    assert len(set(images)) == 1, "both stages must be one base (the venv's paths)"


@pytest.mark.parametrize(
    ("line", "pinned"),
    [
        ("FROM python:3.11-slim-bookworm AS build", False),
        ("FROM python@sha256:" + "a" * 64, False),  # no tag: nobody can tell what it is
        ("FROM --platform=linux/amd64 python:3.11-slim@sha256:" + "0" * 64 + " AS b", True),
        ("FROM python:3.11-slim@sha256:abc", False),
    ],
)
def test_the_digest_check_tells_a_pinned_from_line_from_a_floating_one(
    line: str, pinned: bool
) -> None:
    (image,) = from_images(line)
    assert bool(DIGEST.match(image)) is pinned


def test_the_image_installs_with_the_constraints() -> None:
    text = DOCKERFILE.read_text()
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    installs = [line for line in code if "pip install" in line]
    assert installs, "no pip install in the Dockerfile"
    assert all("-c constraints.txt" in line for line in installs), installs
    assert re.search(r"^COPY constraints\.txt ", text, re.M)


def test_the_constraints_pin_exact_versions_within_setup_cfgs_ranges() -> None:
    pins = constraints()
    for requirement in install_requires():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is in setup.cfg but not pinned in constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {name}=={pins[name]}, outside setup.cfg's {requirement}"
        )


def test_the_constraints_pin_everything_the_extender_needs_at_run_time() -> None:
    """Nothing is left for the build to resolve: each distribution policyext needs (its
    requirements and theirs) has an exact version."""
    missing = set(runtime_closure()) - set(constraints())
    assert missing == set(), f"not pinned in constraints.txt: {sorted(missing)} (make constraints)"


def test_the_constraints_are_the_versions_the_tests_run_with() -> None:
    # `make venv` installs constraints.txt; after an upgrade, `make constraints` writes it anew
    assert CONSTRAINTS.read_text() == render(), (
        "constraints.txt and this environment differ: `make venv` installs the constraints, "
        "`make constraints` writes this environment's versions"
    )


@pytest.mark.parametrize(
    "text",
    ["flask>=3.1\n", "flask\n", "flask==3.1.3\nFlask==3.1.4\n", "flask==3.1.*\n"],
)
def test_a_constraint_that_is_not_one_exact_version_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"constraints\.txt line"):
        constraints(text)


# (package, the first version past the vulnerabilities setup.cfg names beside it)
SECURITY_FLOORS = [
    ("orjson", "3.9.15"),  # CVE-2024-27454
    ("pyyaml", "5.4"),  # CVE-2020-14343
    ("gunicorn", "23.0"),  # CVE-2024-1135, CVE-2024-6827
    ("flask", "3.1.1"),  # CVE-2025-47278
    ("werkzeug", "3.1.4"),  # CVE-2024-34069, CVE-2024-49766/49767, CVE-2025-66221
    ("jinja2", "3.1.6"),  # CVE-2024-56326, CVE-2025-27516
    ("urllib3", "2.6.3"),  # CVE-2025-50181, CVE-2025-66418/66471, CVE-2026-21441
    ("requests", "2.32.4"),  # CVE-2024-47081
    ("idna", "3.7"),  # CVE-2024-3651
    ("certifi", "2024.7.4"),  # CVE-2024-39689
]


@pytest.mark.parametrize(("package", "fixed"), SECURITY_FLOORS)
def test_setup_cfg_refuses_the_versions_with_known_vulnerabilities(
    package: str, fixed: str
) -> None:
    (requirement,) = [r for r in install_requires() if canonicalize_name(r.name) == package]
    floor = min(
        (Version(s.version) for s in requirement.specifier if s.operator in (">=", ">")),
        default=None,
    )
    assert floor is not None, f"{requirement}: no floor"
    assert floor >= Version(fixed), f"{requirement} admits versions before {fixed}"
    assert not SpecifierSet(str(requirement.specifier)).contains(_just_before(fixed))


def _just_before(version: str) -> str:
    """A version just below `version` (3.9.15 -> 3.9.14.999)."""
    parts = [int(p) for p in Version(version).release]
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] > 0:
            parts[index] -= 1
            return ".".join(map(str, parts[: index + 1])) + ".999"
    raise ValueError(version)
