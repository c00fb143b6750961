"""Through the library: a policy set that loads carries a warning for each rule that reads
an optional field of the pod or node without `?` or `has()`, and a reload serves it all the
same and logs the warning (issue 40, item 3)."""

from __future__ import annotations

import logging

import pytest

from policyext import cel
from policyext.policy import load_policy_texts
from policyext.policy.environment import RULE_VARIABLES
from policyext.store import PolicyStore
from tests.policy.helpers import policy

WARNED = policy(
    "spot",
    """
    variables:
    - name: zone
      expression: "node.metadata.labels['zone']"
    filters:
    - name: off-spot
      expression: "node.metadata.?labels[?'lifecycle'].orValue('') != 'spot'"
    scores:
    - name: untainted
      expression: "size(node.spec.taints) == 0 ? 10 : 0"
      weight: 1
    """,
)


def test_a_loaded_set_holds_a_warning_for_each_rule_that_reads_an_optional_field_unguarded() -> (
    None
):
    policy_set = load_policy_texts({"spot.yaml": WARNED})
    assert [(w.policy, w.rule, w.message.split()[1]) for w in policy_set.warnings] == [
        ("spot", "zone", "node.metadata.labels"),
        ("spot", "untainted", "node.spec.taints"),
    ]
    [first, _] = policy_set.warnings
    assert first.as_warning().startswith(f"{first.location}: warning: spot/zone: reads ")


def test_a_reload_serves_a_set_with_warnings_and_logs_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = PolicyStore()
    with caplog.at_level(logging.WARNING, logger="policyext.reload"):
        status = store.reload(lambda: load_policy_texts({"spot.yaml": WARNED}), "test")
    assert status.ok
    assert len(store.current.policies) == 1
    logged = [r.getMessage() for r in caplog.records]
    assert logged == [w.as_warning() for w in store.current.warnings]
    assert len(logged) == 2


@pytest.mark.parametrize(
    ("expression", "paths"),
    [
        ("node.metadata.labels.zone == 'a'", ["node.metadata.labels"]),
        ("node.metadata.?labels.?zone.orValue('') == 'a'", []),
        ("has(node.metadata.labels) && node.metadata.labels.zone == 'a'", []),
        (
            "has(node.spec.taints) ? node.spec.taints[0].value == 'x' : false",
            ["node.spec.taints[0].value"],
        ),
    ],
)
def test_unguarded_reads_names_each_unguarded_path_with_its_place(
    expression: str, paths: list[str]
) -> None:
    reads = cel.unguarded_reads(cel.check_expression(expression, RULE_VARIABLES))
    assert [r.path for r in reads] == paths
    for read in reads:
        # the column points at the field's name in the expression
        assert expression[read.column - 1 :].startswith(read.field)
