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
from tests.policy.unguarded_cases import CASES

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
        ("spot", "zone", "node.metadata.labels['zone']"),
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
        ("node.metadata.labels.zone == 'a'", ["node.metadata.labels['zone']"]),
        ("node.metadata.?labels.?zone.orValue('') == 'a'", []),
        (
            "has(node.metadata.labels) && node.metadata.labels.zone == 'a'",
            ["node.metadata.labels['zone']"],
        ),
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
        # the column points at the field's name, or at the key (`.zone`, `['zone']`)
        at = expression[read.column - 1 :]
        assert at.startswith(read.field) if read.field else at.startswith(("zone", "['zone']"))


@pytest.mark.parametrize(
    ("expression", "safe_form"),
    [
        ("node.metadata.labels.zone == 'a'", "node.metadata.?labels[?'zone']"),
        (
            "has(node.metadata.labels) && node.metadata.labels.zone == 'a'",
            "node.metadata.labels[?'zone']",
        ),
        ("size(node.spec.taints) == 0", "node.spec.?taints"),
    ],
)
def test_an_unguarded_read_offers_its_optional_form(expression: str, safe_form: str) -> None:
    [read] = cel.unguarded_reads(cel.check_expression(expression, RULE_VARIABLES))
    assert read.safe_form == safe_form


def _meta(name: str, **more: object) -> dict[str, object]:
    return {"name": name, "uid": f"uid-{name}", "creationTimestamp": "2026-01-01T00:00:00Z", **more}


RESOURCES = {"cpu": "4", "memory": "8Gi", "pods": "110"}
# nodes and pods without each optional field and key the table reads, and with them
NODES = [
    {
        "metadata": _meta("bare"),
        "spec": {},
        "status": {"allocatable": RESOURCES, "capacity": RESOURCES},
    },
    {
        "metadata": _meta("labelled", labels={"a": "x"}),
        "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
        "status": {"allocatable": RESOURCES, "capacity": RESOURCES},
    },
    {
        "metadata": _meta(
            "full", labels={"zone": "a", "b": "y", "lifecycle": "spot"}, annotations={"a": "b"}
        ),
        "spec": {
            "taints": [{"key": "k", "value": "x", "effect": "NoSchedule"}],
            "unschedulable": False,
        },
        "status": {
            "allocatable": {**RESOURCES, "nvidia.com/gpu": "1"},
            "capacity": {**RESOURCES, "nvidia.com/gpu": "1"},
        },
    },
]
PODS = [
    {
        "metadata": _meta("bare", namespace="default"),
        "spec": {"containers": [{"name": "c"}]},
        "status": {},
    },
    {
        "metadata": _meta("selecting", namespace="default", annotations={"a": "b"}),
        "spec": {"nodeSelector": {"zone": "a"}, "containers": [{"name": "c"}]},
        "status": {},
    },
]


@pytest.mark.parametrize(("expression", "warned"), CASES, ids=[c[0] for c in CASES])
def test_a_rule_warned_of_fails_on_some_object_and_one_not_warned_of_on_none(
    expression: str, warned: list[str]
) -> None:
    if "nodeInfo" in expression:
        pytest.skip("reads policyext's own variables, which are never incomplete")
    program = cel.compile(expression, RULE_VARIABLES)
    failed = []
    for node in NODES:
        for pod in PODS:
            try:
                program.evaluate({"node": node, "pod": pod})
            except cel.CELEvalError as e:
                failed.append((node["metadata"]["name"], pod["metadata"]["name"], str(e)))  # type: ignore[index]
    if warned:
        assert failed, "warned of, but it evaluates on every pod and node"
    else:
        assert failed == []


def test_tests_nested_as_deep_as_an_expression_may_nest_are_walked_in_a_few_steps() -> None:
    # `&&` nested to the right by parentheses, and conditions inside conditions: each level
    # would double the work of a walk that asked each side twice
    chained = "node.metadata.labels.zone == 'a'"
    tower = "has(node.metadata.labels)"
    for n in range(45):
        chained = f"(has(node.metadata.labels.a{n}) && {chained})"
        tower = f"({tower} ? has(node.metadata.labels.a{n}) : false)"
    expected = {
        chained: ["node.metadata.labels", "node.metadata.labels['zone']"],
        f"{tower} ? node.metadata.labels.zone : ''": ["node.metadata.labels['zone']"],
    }
    for expression, paths in expected.items():
        checked = cel.check_expression(expression, RULE_VARIABLES)
        assert [r.path for r in cel.unguarded_reads(checked)] == paths
