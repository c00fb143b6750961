"""One convention for every command: `--version`, and files or folders given positionally,
as a repeated flag or comma-separated, in any mix."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest

from tests.cli.run import FIXTURES, RULES, policyext

CRITICAL = str(RULES / "critical-off-spot.yaml")
FREE_CPU = str(RULES / "most-free-cpu.yaml")
MISSING = "/nonexistent/policies.yaml"

# the same two policy files, in each form a user may write them
FORMS: list[tuple[str, list[str]]] = [
    ("positional", [CRITICAL, FREE_CPU]),
    ("a repeated flag", ["--rules", CRITICAL, "--rules", FREE_CPU]),
    ("comma-separated", ["--rules", f"{CRITICAL},{FREE_CPU}"]),
    ("a flag, then a positional path", ["--rules", CRITICAL, FREE_CPU]),
    ("a positional path, then a flag", [CRITICAL, "--rules", FREE_CPU]),
]
FORM_IDS = [name for name, _ in FORMS]


def test_version_prints_the_installed_package_version() -> None:
    done = policyext("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"policyext {metadata.version('policyext')}"


@pytest.mark.parametrize("paths", [paths for _, paths in FORMS], ids=FORM_IDS)
def test_validate_reads_the_same_policies_whichever_form_names_them(paths: list[str]) -> None:
    done = policyext("validate", *paths)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("valid: 2 policies, 2 rules, version ")


@pytest.mark.parametrize("paths", [paths for _, paths in FORMS], ids=FORM_IDS)
def test_simulate_reads_the_same_policies_whichever_form_names_them(paths: list[str]) -> None:
    done = policyext(
        "simulate",
        "--pod",
        FIXTURES / "critical-pod.yaml",
        *paths,
        "--snapshot",
        FIXTURES / "cluster.yaml",
        "-o",
        "json",
    )
    assert done.returncode == 0, done.stderr
    policies = sorted(m["name"] for m in json.loads(done.stdout)["policies"])
    assert policies == ["critical-off-spot", "most-free-cpu"]


@pytest.mark.parametrize(
    "paths",
    [
        [CRITICAL, MISSING],
        ["--rules", CRITICAL, "--rules", MISSING],
        ["--rules", f"{CRITICAL},{MISSING}"],
    ],
    ids=FORM_IDS[:3],
)
def test_serve_reads_every_path_whichever_form_names_them(paths: list[str]) -> None:
    # the missing file, named last in each form, stops serve before anything starts
    done = policyext("serve", *paths, "--snapshot", FIXTURES / "cluster.yaml")
    assert done.returncode == 1
    assert f"{MISSING}:1:1: no such file or directory" in done.stderr


def test_serve_takes_comma_separated_paths_from_its_environment_variable() -> None:
    done = policyext("serve", env={"POLICYEXT_RULES": f"{CRITICAL},{MISSING}"})
    assert done.returncode == 1
    assert f"{MISSING}:1:1: no such file or directory" in done.stderr


def test_a_serve_flag_replaces_the_environment_variable_rather_than_adding_to_it() -> None:
    done = policyext("serve", "--rules", MISSING, env={"POLICYEXT_RULES": "/other/missing"})
    assert done.returncode == 1
    assert MISSING in done.stderr
    assert "/other/missing" not in done.stderr


def test_test_takes_comma_separated_paths(tmp_path: Path) -> None:
    tests = RULES / "tests"
    done = policyext(
        "test", f"{tests / 'critical-off-spot.test.yaml'},{tests / 'most-free-cpu.test.yaml'}"
    )
    assert done.returncode == 0, done.stderr
    assert "PolicyTest critical-off-spot" in done.stdout
    assert "PolicyTest most-free-cpu" in done.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["validate"], "give the policy files or folders"),
        (["test"], "give the PolicyTest files or folders"),
        (
            ["simulate", "--pod", str(FIXTURES / "web-pod.yaml"), "--nodes", CRITICAL],
            "give the policies",
        ),
        (["validate", CRITICAL, "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    ],
    ids=["validate", "test", "simulate", "an unknown flag"],
)
def test_a_command_without_its_paths_is_a_usage_error(args: list[str], says: str) -> None:
    done = policyext(*args)
    assert done.returncode == 2
    assert says in done.stderr


@pytest.mark.parametrize(
    "pods",
    [
        ["--pod", str(FIXTURES / "web-pod.yaml"), "--pod", str(FIXTURES / "critical-pod.yaml")],
        ["--pod", f"{FIXTURES / 'web-pod.yaml'},{FIXTURES / 'critical-pod.yaml'}"],
    ],
    ids=["a repeated flag", "comma-separated"],
)
def test_simulate_takes_several_pod_files_the_same_way(pods: list[str]) -> None:
    done = policyext(
        "simulate", CRITICAL, *pods, "--snapshot", FIXTURES / "cluster.yaml", "-o", "json"
    )
    assert done.returncode == 0, done.stderr
    names = [result["pod"] for result in json.loads(done.stdout)]
    assert names == ["shop/storefront-7c9f6d8b4-vx9rj", "shop/checkout-6f8d9c7b5-r8d2m"]
