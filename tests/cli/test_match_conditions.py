"""A match condition that reads what only the rules see (`node`, `nodeInfo`,
`podRequests`, `variables`) is told why: match conditions see the pod alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.run import policyext

POLICY = """apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {{name: m}}
spec:
  match:
    conditions:
      - name: reads
        expression: "{expression}"
  filters:
    - name: f
      expression: "true"
"""


@pytest.mark.parametrize(
    ("expression", "name"),
    [
        ("node.metadata.name == 'gpu-a'", "node"),
        ("nodeInfo.podCount > 3", "nodeInfo"),
        ("'cpu' in podRequests", "podRequests"),
        ("variables.x", "variables"),
    ],
)
def test_a_match_condition_that_reads_a_rule_input_is_told_it_sees_the_pod_alone(
    tmp_path: Path, expression: str, name: str
) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(POLICY.format(expression=expression))
    done = policyext("validate", path)
    assert done.returncode == 1
    assert f"{path}:8:" in done.stderr
    assert f"m/reads: undeclared reference to '{name}'" in done.stderr
    assert (
        "match conditions see only `pod` and `now`: they decide once per pod whether the "
        f"policy applies, before any node is looked at; read `{name}` in a filter or a score "
        "rule"
    ) in done.stderr


def test_a_rule_that_reads_an_unknown_name_gets_no_such_hint(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(POLICY.format(expression="pod.metadata.name == 'x'").replace('"true"', "nod"))
    done = policyext("validate", path)
    assert done.returncode == 1
    assert "undeclared reference to 'nod'" in done.stderr
    assert "match conditions see" not in done.stderr
