"""`nodeInfo` as policy-format.md defines it and as kube-scheduler counts it: `requested`
holds every resource the node has allocatable (0 when no pod requests it), each bound pod
counts with its effective requests (init containers, sidecars, overhead, pod-level
requests), and finished pods do not count."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.engine import evaluate
from tests.policy.helpers import NOW, pod, policies, policy

ALLOCATABLE = {
    "cpu": "8",
    "memory": "32Gi",
    "pods": "110",
    "ephemeral-storage": "100Gi",
    "example.com/fpga": "2",
    "hugepages-2Mi": "1Gi",
}


def the_node() -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": "n1", "resourceVersion": "1"},
        "status": {"allocatable": ALLOCATABLE},
    }


def container(name: str, restart: str | None = None, **requests: str) -> dict[str, Any]:
    made: dict[str, Any] = {
        "name": name,
        "resources": {"requests": {k.replace("_", "-"): v for k, v in requests.items()}},
    }
    if restart is not None:
        made["restartPolicy"] = restart
    return made


def bound(
    name: str,
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None = None,
    phase: str = "Running",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}"},
        "spec": {
            "nodeName": "n1",
            "containers": containers,
            "initContainers": init or [],
            **spec,
        },
        "status": {"phase": phase},
    }


def value_of(expression: str, pods: list[dict[str, Any]]) -> object:
    """What `expression` yields on n1 with `pods` bound to it (read through a score)."""
    rule = {"name": "read", "expression": f"double({expression})"}
    text = policy("p", f"scores:\n- {json.dumps(rule)}")
    source = SnapshotSource([the_node(), *pods])
    ev = evaluate(
        policies(text), pod(cpu=None), list(source.nodes.values()), source, NOW, filters=False
    )
    (rule,) = ev.nodes[0].scores
    return rule.value if rule.error is None else rule.error


def as_number(key: str, field: str = "requested") -> str:
    return f"nodeInfo.{field}[{key!r}].asApproximateFloat()"


GiB = 1024.0**3
CASES = [
    ("ephemeral-storage requested by no pod is 0", as_number("ephemeral-storage"), [], 0.0),
    ("an extended resource requested by no pod is 0", as_number("example.com/fpga"), [], 0.0),
    ("hugepages requested by no pod are 0", as_number("hugepages-2Mi"), [], 0.0),
    ("cpu with no pod is 0", as_number("cpu"), [], 0.0),
    (
        "free ephemeral-storage is all of it when no pod requests it",
        as_number("ephemeral-storage", "free"),
        [bound("a", [container("app", cpu="1")])],
        100 * GiB,
    ),
    (
        "an extended resource is the sum over the pods",
        as_number("example.com/fpga"),
        [
            bound("a", [container("app", **{"example.com/fpga": "1"})]),
            bound("b", [container("app", **{"example.com/fpga": "1"})]),
        ],
        2.0,
    ),
    (
        "free of an extended resource is allocatable minus requested",
        as_number("example.com/fpga", "free"),
        [bound("a", [container("app", **{"example.com/fpga": "1"})])],
        1.0,
    ),
    (
        "an init container larger than the containers sets the request",
        as_number("cpu"),
        [bound("a", [container("app", cpu="1")], init=[container("setup", cpu="3")])],
        3.0,
    ),
    (
        "a sidecar runs beside the containers and the init containers after it",
        as_number("cpu"),
        [
            bound(
                "a",
                [container("app", cpu="1")],
                init=[
                    container("proxy", restart="Always", cpu="500m"),
                    container("setup", cpu="2"),
                ],
            )
        ],
        2.5,
    ),
    (
        "the pod overhead is added",
        as_number("cpu"),
        [bound("a", [container("app", cpu="1")], overhead={"cpu": "250m"})],
        1.25,
    ),
    (
        "pod-level requests replace cpu and memory",
        as_number("memory"),
        [bound("a", [container("app", memory="1Gi")], resources={"requests": {"memory": "4Gi"}})],
        4 * GiB,
    ),
    (
        "pod-level requests do not replace an extended resource (kube-scheduler ignores it there)",
        as_number("example.com/fpga"),
        [
            bound(
                "a",
                [container("app", cpu="1", **{"example.com/fpga": "1"})],
                resources={"requests": {"cpu": "2", "example.com/fpga": "2"}},
            )
        ],
        1.0,
    ),
    (
        "succeeded and failed pods are not counted",
        as_number("cpu"),
        [
            bound("done", [container("app", cpu="1")], phase="Succeeded"),
            bound("crashed", [container("app", cpu="1")], phase="Failed"),
            bound("pending", [container("app", cpu="1")], phase="Pending"),
        ],
        1.0,
    ),
    (
        "podCount counts the pods that have not finished",
        "nodeInfo.podCount",
        [
            bound("done", [container("app", cpu="1")], phase="Succeeded"),
            bound("running", [container("app", cpu="1")]),
        ],
        1.0,
    ),
    (
        "pods lists the pods that have not finished",
        "size(nodeInfo.pods.filter(p, p.name == 'running' && p.namespace == 'shop'))",
        [bound("running", [container("app", cpu="1")])],
        1.0,
    ),
]


@pytest.mark.parametrize(
    ("expression", "pods", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_node_info_counts_the_pods_of_a_node_as_kube_scheduler_does(
    expression: str, pods: list[dict[str, Any]], expected: float
) -> None:
    assert value_of(expression, pods) == expected


def test_every_allocatable_resource_is_in_requested_and_free() -> None:
    keys = value_of(
        "size(nodeInfo.allocatable.filter(k, k in nodeInfo.requested && k in nodeInfo.free))",
        [],
    )
    assert keys == float(len(ALLOCATABLE))
