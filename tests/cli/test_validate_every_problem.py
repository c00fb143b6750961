"""`policyext validate` shows every problem of an expression in one run, each at its line
and column in the file, not only the first."""

from __future__ import annotations

from pathlib import Path

from tests.cli.run import policyext

POLICY = """apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: two-problems}
spec:
  filters:
    - name: zone
      expression: |
        node.metadata.labels.?zone.orValue('') == 1 + 'a' ||
          size(pod.spec.nodName) > 0
"""


def test_an_expression_with_two_independent_type_errors_shows_both_at_their_places(
    tmp_path: Path,
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(POLICY)
    done = policyext("validate", path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"{path}:8:53: two-problems/zone: found no matching overload for '_+_' applied to "
        "'(int, string)' (expression 1:45)",
        f"{path}:9:25: two-problems/zone: no field 'nodName' in PodSpec; did you mean "
        "'nodeName'? (expression 2:17)",
        "2 problems found",
    ]
