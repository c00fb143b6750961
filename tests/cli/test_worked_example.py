"""docs/policies.md's worked example of fixing errors is true: its two files give the
problems it shows, and the fixes it lists, every one of them, leave exactly the problems
it says the next run finds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.run import REPO, policyext

GUIDE = (REPO / "docs" / "policies.md").read_text(encoding="utf-8")
SECTION = GUIDE[GUIDE.index("Two files with mistakes of every kind") :]
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)

# each fix the example lists, as (the text it replaces, the text that replaces it, what the
# list of fixes shows of it)
FIXES = [
    ("more.yaml", "mesage:", "message:", "`message`"),
    ("more.yaml", "name: Ready", "name: ready", "a lower-case rule name"),
    ("more.yaml", "weight: 0", "weight: 1", "a weight of at least 1"),
    ("more.yaml", "kind: SchedulingPolicies", "kind: SchedulingPolicy", "`SchedulingPolicy`"),
    ("zone-spread.yaml", "variables.zoen", "variables.zone", "`variables.zone`"),
    ("zone-spread.yaml", "startWith(", "startsWith(", "`startsWith`"),
    ("zone-spread.yaml", "c.status = 'True'", "c.status == 'True'", "`==`"),
    ("zone-spread.yaml", "t.efect", "t.effect", "`t.effect`"),
    (
        "zone-spread.yaml",
        "node.status.allocatable.cpu > 4",
        "quantity(node.status.allocatable.cpu).isGreaterThan(quantity('4'))",
        "`quantity(node.status.allocatable.cpu).isGreaterThan(quantity('4'))`",
    ),
    (
        "zone-spread.yaml",
        "variables.zone == 'eu-west-1a'\"",
        "variables.zone == 'eu-west-1a' ? 10 : 0\"",
        "`variables.zone == 'eu-west-1a' ? 10 : 0`",
    ),
]


def _blocks() -> tuple[list[str], dict[str, str]]:
    """The example's console outputs, in order, and its files by name."""
    blocks = BLOCK.findall(SECTION[: SECTION.index("Duplicate rule names")])
    consoles = [text for kind, text in blocks if kind == "console"]
    files = [text for kind, text in blocks if kind == "yaml"]
    return consoles, {"zone-spread.yaml": files[0], "more.yaml": files[1]}


def _problems(console: str) -> list[str]:
    """What `policyext validate rules/` printed, without the command."""
    return [line for line in console.splitlines() if not line.startswith("$ ")]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    rules = tmp_path / "rules"
    rules.mkdir()
    for name, text in _blocks()[1].items():
        (rules / name).write_text(text)
    return tmp_path


def test_the_example_files_give_the_problems_shown(folder: Path) -> None:
    done = policyext("validate", "rules/", cwd=folder)
    assert done.returncode == 1
    assert done.stderr.splitlines() == _problems(_blocks()[0][0])


def test_the_fixes_listed_leave_the_problems_the_next_run_shows(folder: Path) -> None:
    listed = SECTION[SECTION.index("The fixes:") : SECTION.index("The\nnext run")]
    for name, old, new, shown in FIXES:
        assert shown in " ".join(listed.split()), f"the list of fixes leaves out {shown}"
        path = folder / "rules" / name
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new))
    done = policyext("validate", "rules/", cwd=folder)
    assert done.returncode == 1
    assert done.stderr.splitlines() == _problems(_blocks()[0][1])
