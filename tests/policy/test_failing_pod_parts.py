"""A pod-side part that fails for a pod (a missing annotation, say) does not stop the
per-node cache: the part's error is its value, raised only where the rest of the
expression reads it, so results equal the whole expression's and stay cacheable."""

from __future__ import annotations

import pytest

from policyext.policy.engine import Evaluation, evaluate
from tests.policy.helpers import NOW, node, pod, policies, policy
from tests.policy.test_engine import snapshot_of

NODES = [
    node("a", labels={"zone": "z1"}),
    node("b", labels={"zone": "z2"}),
    node("c", labels={"zone": "z1"}),
]
GUARDED = (
    "pod.metadata.?annotations[?'zone'].orValue('') == '' || "
    "node.metadata.labels.zone == pod.metadata.annotations['zone']"
)
UNGUARDED = "node.metadata.labels.zone == pod.metadata.annotations['zone']"


def zone_rule(expression: str) -> str:
    return policy(
        "p", f'filters:\n- {{name: zone, expression: "{expression}", failurePolicy: Fail}}'
    )


def with_zone(zone: str | None, name: str = "pod") -> dict[str, object]:
    made = pod(name=name)
    if zone is not None:
        made["metadata"]["annotations"] = {"zone": zone}  # type: ignore[index]
    return made


@pytest.mark.parametrize(
    ("expression", "zone", "feasible"),
    [
        (GUARDED, None, ["a", "b", "c"]),
        (GUARDED, "z1", ["a", "c"]),
        (UNGUARDED, "z2", ["b"]),
        (UNGUARDED, None, []),
    ],
    ids=[
        "a guard that short-circuits never reads the failed part",
        "a part that succeeds is used",
        "an unguarded part that succeeds is used",
        "an unguarded failed part is an evaluation error on every node",
    ],
)
def test_cached_results_equal_the_whole_expressions(
    expression: str, zone: str | None, feasible: list[str]
) -> None:
    policy_set = policies(zone_rule(expression))
    source = snapshot_of(NODES)
    nodes = list(source.nodes.values())
    whole = evaluate(policy_set, with_zone(zone), NODES, None, NOW)
    cached = evaluate(policy_set, with_zone(zone), nodes, source, NOW, cache_nodes=True)
    assert whole.feasible_names() == cached.feasible_names() == feasible
    errors = [r.error for v in cached.nodes for r in v.rejections]
    assert errors == [r.error for v in whole.nodes for r in v.rejections], "the same errors"
    if zone is None and expression == UNGUARDED:
        assert errors == ["no such key: zone"] * 3


def test_pods_whose_part_fails_alike_share_the_per_node_results() -> None:
    policy_set = policies(zone_rule(GUARDED))
    source = snapshot_of(NODES)
    nodes = list(source.nodes.values())

    def node_by_node(name: str) -> Evaluation:
        the_pod = with_zone(None, name)
        return evaluate(policy_set, the_pod, nodes, source, NOW, cache_nodes=True, columns=False)

    first, second = node_by_node("one"), node_by_node("two")
    assert first.evaluations >= len(NODES)
    assert second.evaluations < len(NODES), "the nodes' results came from the cache"
    assert second.feasible_names() == first.feasible_names()


def test_a_guard_that_decides_for_every_node_reads_no_node_over_columns() -> None:
    policy_set = policies(zone_rule(GUARDED))
    source = snapshot_of(NODES)
    nodes = list(source.nodes.values())
    ev = evaluate(policy_set, with_zone(None), nodes, source, NOW, cache_nodes=True)
    assert ev.feasible_names() == ["a", "b", "c"]
    assert ev.evaluations == 2  # the pod-side parts: the guard, and the part it guards
