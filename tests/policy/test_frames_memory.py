"""An evaluation holds the pod and the nodes only while it runs: once it is over they are
freed by reference counting alone, without waiting for the cycle collector. A request
body can be tens of megabytes (a large annotation), and a worker that keeps each one until
a full collection grows by that much per request."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.engine import evaluate, prepare
from tests.policy.helpers import NOW, node, pod, policies, policy


class Body(dict[str, Any]):
    """A decoded JSON object that can be watched with a weak reference."""


def watched(obj: dict[str, Any]) -> Body:
    return Body(obj)


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


SPECS = {
    "a filter reading the node": """
        filters:
        - {name: zone, expression: "node.metadata.labels.?zone.orValue('') != 'z9'"}
    """,
    "a node variable and a pod variable": """
        variables:
        - {name: team, expression: "pod.metadata.namespace"}
        - {name: own, expression: "node.metadata.labels.?team.orValue('') == variables.team"}
        filters:
        - {name: own-node, expression: "variables.own || node.metadata.name != ''"}
    """,
    "a variable that fails, read by two rules": """
        variables:
        - {name: missing, expression: "node.metadata.labels.absent"}
        filters:
        - {name: one, expression: "variables.missing == 'x'", failurePolicy: Ignore}
        - {name: two, expression: "variables.missing == 'y' || node.metadata.name != ''"}
    """,
    "a pod-side part that fails, guarded": """
        filters:
        - name: guarded
          expression: "pod.metadata.annotations['absent'] == node.metadata.name || has(node.spec)"
    """,
    "a filter that errors and rejects, with a message expression": """
        filters:
        - name: broken
          expression: "node.metadata.labels.absent == 'x'"
        - name: never
          expression: "false"
          messageExpression: "'no room on ' + node.metadata.name"
    """,
    "scores, Clamp and MinMax": """
        scores:
        - {name: cpu, expression: "nodeInfo.allocatable.cpu.asApproximateFloat()"}
        - {name: spread, expression: "double(size(node.metadata.name))", normalize: MinMax}
        - {name: broken, expression: "double(node.metadata.labels.absent)"}
    """,
    "a match condition that errors": """
        failurePolicy: Fail
        match:
          conditions:
          - {name: broken, expression: "pod.metadata.annotations['absent'] == 'x'"}
        filters:
        - {name: zone, expression: "node.metadata.labels.?zone.orValue('') != 'z9'"}
    """,
}


@pytest.mark.parametrize("spec", SPECS.values(), ids=SPECS.keys())
@pytest.mark.parametrize("cached", [False, True], ids=["request nodes", "node source"])
def test_the_pod_and_nodes_are_freed_by_reference_counting_once_an_evaluation_is_over(
    spec: str, cached: bool, no_cycle_collector: None
) -> None:
    policy_set = policies(policy("p", spec))
    the_pod = watched(pod(annotations={"big": "x" * 1000}))
    nodes = [watched(node(f"n{i}", labels={"zone": f"z{i}"})) for i in range(3)]
    source = SnapshotSource(nodes) if cached else None
    refs = [weakref.ref(the_pod), *(weakref.ref(n) for n in nodes)]

    ev = evaluate(policy_set, the_pod, nodes, source, NOW, cache_nodes=cached)
    again = prepare(policy_set, the_pod, source, NOW).evaluate(nodes, cache_nodes=cached)
    assert len(ev.names) == len(again.names) == 3
    del the_pod, nodes, source, ev, again

    assert [r() is None for r in refs] == [True] * len(refs)
