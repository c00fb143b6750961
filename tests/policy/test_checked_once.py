"""Loading a policy checks each expression once: the plan of a rule that reads the pod
and the node (its pod-side parts, its residual, the residual's node columns) is made from
the tree checked for the whole rule, not by parsing and checking its pieces again."""

from __future__ import annotations

import pytest

from policyext.cel import ast
from policyext.cel.checker import Checker
from tests.policy.helpers import policies, policy

SPEC = """variables:
  - name: zone
    expression: "node.metadata.?labels[?'zone'].orValue('')"
  - name: preferred
    expression: "pod.metadata.?annotations[?'zone'].orValue('')"
filters:
  - name: off-spot
    expression: >-
      pod.metadata.?labels[?'critical'].orValue('') != 'true' ||
      node.metadata.?labels[?'lifecycle'].orValue('') != 'spot'
  - name: fits
    expression: "nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0"
scores:
  - name: near
    expression: "variables.zone == variables.preferred ? 10 : 0"
"""


def test_each_expression_of_a_policy_is_checked_once_when_it_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked: list[str] = []
    run = Checker.run

    def counted(self: Checker, tree: ast.Node) -> object:
        checked.append(self.source)
        return run(self, tree)

    monkeypatch.setattr(Checker, "run", counted)
    loaded = policies(policy("p", SPEC))
    (compiled,) = loaded.policies
    off_spot, fits = compiled.filters
    # the rules are split and planned over columns all the same
    for rule in (off_spot, fits):
        plan = rule.compiled.plan
        assert plan is not None and plan.parts and plan.columns is not None
    assert sorted(checked) == sorted(
        [
            "node.metadata.?labels[?'zone'].orValue('')",
            "pod.metadata.?annotations[?'zone'].orValue('')",
            off_spot.rule.expression.source,
            "nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0",
            "variables.zone == variables.preferred ? 10 : 0",
        ]
    )
