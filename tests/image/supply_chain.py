"""What the image installs: setup.cfg's ranges, the exact versions of constraints.txt, and
the packages policyext needs at run time (its requirements and theirs, as installed here).

`python -m tests.image.supply_chain` prints constraints.txt anew from this environment (the
versions the tests ran with): `make constraints`.
"""

from __future__ import annotations

import configparser
import re
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
SETUP_CFG = ROOT / "setup.cfg"
CONSTRAINTS = ROOT / "constraints.txt"
DOCKERFILE = ROOT / "Dockerfile"
# the installer itself, which the Dockerfile upgrades with the same constraints
INSTALLER = "pip"

HEADER = """\
# The exact versions the image installs (Dockerfile: pip install -c constraints.txt), the
# ones the tests ran with: policyext's run-time requirements and theirs, and pip itself.
# Regenerate with `make constraints` after changing setup.cfg or upgrading the environment;
# tests/image/test_supply_chain.py checks them against setup.cfg's ranges.
"""


def install_requires() -> list[Requirement]:
    """setup.cfg's install_requires, comments left out."""
    config = configparser.ConfigParser()
    config.read(SETUP_CFG)
    lines = config["options"]["install_requires"].splitlines()
    return [Requirement(line) for line in (ln.split("#", 1)[0].strip() for ln in lines) if line]


def constraints(text: str | None = None) -> dict[str, Version]:
    """constraints.txt as {canonical name: exact version}; anything but `name==version` is
    an error, as a range would let the build pick versions nobody tested."""
    pins: dict[str, Version] = {}
    for number, raw in enumerate((text or CONSTRAINTS.read_text()).splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        found = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.+!-]*)", line)
        if found is None:
            raise ValueError(f"constraints.txt line {number}: {raw!r} is not name==version")
        name = canonicalize_name(found.group(1))
        if name in pins:
            raise ValueError(f"constraints.txt line {number}: {name} pinned twice")
        pins[name] = Version(found.group(2))
    return pins


def runtime_closure(root: str = "policyext") -> dict[str, str]:
    """Every distribution policyext needs at run time, as installed in this environment:
    {canonical name: version} (extras and other platforms' markers left out)."""
    found: dict[str, str] = {}
    todo = [root]
    while todo:
        for text in distribution(todo.pop()).requires or []:
            requirement = Requirement(text)
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue
            name = canonicalize_name(requirement.name)
            if name in found:
                continue
            try:
                found[name] = distribution(name).version
            except PackageNotFoundError:  # pragma: no cover - a broken environment
                raise SystemExit(f"{name} is required but not installed: make venv") from None
            todo.append(name)
    return found


def render() -> str:
    pins = {**runtime_closure(), INSTALLER: distribution(INSTALLER).version}
    return HEADER + "".join(f"{name}=={pins[name]}\n" for name in sorted(pins))


def from_images(text: str | None = None) -> list[str]:
    """The image of every FROM line of the Dockerfile (stage names left out)."""
    images = []
    for line in (text or DOCKERFILE.read_text()).splitlines():
        words = line.split()
        if words and words[0].upper() == "FROM":
            images.append(next(w for w in words[1:] if not w.startswith("--")))
    return images


if __name__ == "__main__":
    sys.stdout.write(render())
