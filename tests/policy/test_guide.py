"""The five-minute guide of docs/policies.md, followed as written: the files it says to
save are new ones (not the finished examples in rules/), and each command it shows prints
what it shows."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from policyext.cli import main

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "policies.md").read_text(encoding="utf-8")
GUIDE = DOC.split("## A first policy in five minutes", 1)[1].split("\n## ", 1)[0]
SAVED = re.findall(r"save this as `([^`]+)`:\s*```yaml\n(.*?)```", GUIDE, re.S | re.I)


def _commands() -> list[tuple[str, str]]:
    """(command, the output shown) for each command of the guide that reads the saved files
    as they are (not the variants with a typo or a wrong expectation)."""
    found = []
    for block in re.findall(r"```console\n(.*?)```", GUIDE, re.S):
        for command, output in re.findall(r"^\$ (.*)\n((?:(?!\$ ).*\n)*)", block, re.M):
            if "my-rules/" in command and "problem found" not in output and "FAIL" not in output:
                found.append((command, output))
    return found


def test_the_guide_saves_two_files_that_do_not_exist_yet() -> None:
    paths = [path for path, _ in SAVED]
    assert paths == ["my-rules/most-free-cpu.yaml", "my-rules/tests/most-free-cpu.test.yaml"]
    for path in paths:
        assert not (REPO / path).exists(), f"{path} is in the repository already"


@pytest.fixture
def followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout with the guide's files saved where it says."""
    for shared in ("rules", "schemas"):
        (tmp_path / shared).symlink_to(REPO / shared)
    for path, content in SAVED:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(content)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("command", "shown"), _commands(), ids=[c for c, _ in _commands()])
def test_each_command_of_the_guide_prints_what_the_guide_shows(
    followed: Path, command: str, shown: str
) -> None:
    argv = shlex.split(command)
    assert argv[0] == "policyext"
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(argv[1:])
    assert code == 0
    assert out.getvalue().rstrip("\n") == shown.rstrip("\n")


def test_the_guide_runs_its_commands() -> None:
    assert [c.split()[1] for c, _ in _commands()] == ["validate", "test", "simulate"]
