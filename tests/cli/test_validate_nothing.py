"""`policyext validate` of a path that holds no SchedulingPolicy fails, as `policyext test`
of a path without a PolicyTest does: a green CI run on a wrong path would check nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.run import RULES, policyext


@pytest.fixture(params=["an empty folder", "an empty file", "a folder of PolicyTests only"])
def nothing(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, int]:
    """A path without a policy, and how many YAML or JSON files it holds."""
    if request.param == "an empty folder":
        return tmp_path, 0
    if request.param == "an empty file":
        (tmp_path / "empty.yaml").write_text("")
        return tmp_path / "empty.yaml", 1
    return RULES / "tests", len(list((RULES / "tests").glob("*.yaml")))


def test_validate_of_no_policy_fails_and_says_where_it_looked(nothing: tuple[Path, int]) -> None:
    path, files = nothing
    done = policyext("validate", path)
    assert done.returncode == 1
    noun = "file" if files == 1 else "files"
    assert (
        f"{path}:1:1: no SchedulingPolicy found: looked in {path} ({files} YAML or JSON {noun} "
        "read, none of kind SchedulingPolicy)"
    ) in done.stderr
    assert "valid:" not in done.stdout


def test_validate_of_no_policy_fails_in_every_output_format(tmp_path: Path) -> None:
    as_json = policyext("validate", tmp_path, "-o", "json")
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["valid"] is False
    assert "no SchedulingPolicy found" in report["problems"][0]["message"]
    as_junit = policyext("validate", tmp_path, "-o", "junit")
    assert as_junit.returncode == 1
    assert 'failures="1"' in as_junit.stdout
    assert "no SchedulingPolicy found" in as_junit.stdout


def test_validate_of_a_folder_with_policies_beside_its_tests_still_passes() -> None:
    done = policyext("validate", RULES)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("valid: 6 policies")
