"""A YAML (or JSON) syntax error in any file a command reads is one line,
`file:line:col: YAML syntax error: ...`, like every other error: never PyYAML's several
lines naming "<unicode string>"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.run import FIXTURES, RULES, policyext

# the flow sequence opened on line 4 is never closed: PyYAML notices on line 5
BROKEN = "kind: Pod\nmetadata:\n  name: x\n  labels: [a\nspec: {}\n"
SAYS = (
    ":5:5: YAML syntax error: did not find expected ',' or ']' "
    "(while parsing a flow sequence that starts at 4:11)"
)


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    return path


def _one_line(stderr: str, path: Path, says: str = SAYS) -> None:
    assert stderr == f"error: {path}{says}\n"


def test_a_broken_pod_file_is_one_line_with_its_position(broken: Path) -> None:
    done = policyext("simulate", RULES, "--pod", broken, "--snapshot", FIXTURES / "cluster.yaml")
    assert done.returncode == 1
    _one_line(done.stderr, broken)


def test_a_broken_snapshot_is_one_line_with_its_position(broken: Path) -> None:
    done = policyext("simulate", RULES, "--pod", FIXTURES / "web-pod.yaml", "--snapshot", broken)
    assert done.returncode == 1
    _one_line(done.stderr, broken)


def test_eval_of_a_broken_pod_is_one_line_with_its_position(broken: Path) -> None:
    done = policyext("eval", "pod.metadata.name", "--pod", broken)
    assert done.returncode == 1
    _one_line(done.stderr, broken)


def test_broken_json_is_one_line_with_its_position(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    path.write_text('{"kind": "List", "items": [1,}')
    done = policyext("simulate", RULES, "--pod", FIXTURES / "web-pod.yaml", "--snapshot", path)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: {path}:1:30: YAML syntax error: ")
    assert done.stderr.count("\n") == 1


def test_a_character_yaml_refuses_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text('kind: Pod\nmetadata: {name: "\x01"}\n')
    done = policyext("eval", "1", "--pod", path)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: {path}: YAML syntax error: unacceptable character")
    assert done.stderr.count("\n") == 1
    assert "<unicode string>" not in done.stderr


def test_a_broken_pod_of_a_policy_test_is_one_line_with_its_position(
    tmp_path: Path, broken: Path
) -> None:
    (tmp_path / "t.yaml").write_text(
        "apiVersion: policyext.io/v1alpha1\nkind: PolicyTest\nmetadata: {name: t}\n"
        f"spec:\n  policies: [{RULES / 'critical-off-spot.yaml'}]\n"
        f"  snapshot: {FIXTURES / 'cluster.yaml'}\n"
        "  cases:\n    - {name: c, pod: broken.yaml, expect: {feasible: []}}\n"
    )
    done = policyext("test", tmp_path / "t.yaml")
    assert done.returncode == 1
    assert f"cannot load the case: broken.yaml{SAYS}" in done.stdout
    assert "<unicode string>" not in done.stdout
