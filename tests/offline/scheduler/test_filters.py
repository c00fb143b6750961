"""The emulated filter plugins, node by node: what each rejects, with kube-scheduler
1.37's reason and whether preemption could help."""

from __future__ import annotations

from typing import Any

import pytest

from policyext.offline.scheduler.cluster import Cluster
from policyext.offline.scheduler.framework import run_filters


def node(
    name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110", **extra: Any
) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name, **extra.pop("labels", {})}
    spec = extra.pop("spec", {})
    status: dict[str, Any] = {
        "allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **extra.pop("more", {})}
    }
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": status,
    }


def pod(
    name: str = "p", *, cpu: str = "100m", labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    containers = spec.pop("containers", [{"name": "c", "resources": {"requests": {"cpu": cpu}}}])
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": labels or {}},
        "spec": {"containers": containers, **spec},
    }


def bound(name: str, on: str, **kwargs: Any) -> dict[str, Any]:
    p = pod(name, **kwargs)
    p["spec"]["nodeName"] = on
    return p


TAINTED = node("t", spec={"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]})
ZONED = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
ANTI_WEB = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
        ]
    }
}
WITH_DB = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
        ]
    }
}
SPREAD_WEB = [
    {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]


@pytest.mark.parametrize(
    ("nodes", "pods", "incoming", "expected"),
    [
        pytest.param(
            [TAINTED],
            [],
            pod(),
            {"t": ("TaintToleration", ("node(s) had untolerated taint(s)",), True)},
            id="an untolerated NoSchedule taint",
        ),
        pytest.param(
            [TAINTED],
            [],
            pod(tolerations=[{"key": "gpu", "operator": "Exists"}]),
            {"t": None},
            id="a toleration of the key",
        ),
        pytest.param(
            [TAINTED],
            [],
            pod(tolerations=[{"key": "gpu", "value": "no"}]),
            {"t": ("TaintToleration", ("node(s) had untolerated taint(s)",), True)},
            id="a toleration of another value",
        ),
        pytest.param(
            [node("pref", spec={"taints": [{"key": "k", "effect": "PreferNoSchedule"}]})],
            [],
            pod(),
            {"pref": None},
            id="PreferNoSchedule only scores",
        ),
        pytest.param(
            [node("c", spec={"unschedulable": True})],
            [],
            pod(),
            {"c": ("NodeUnschedulable", ("node(s) were unschedulable",), True)},
            id="a cordoned node",
        ),
        pytest.param(
            [node("c", spec={"unschedulable": True})],
            [],
            pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]),
            {"c": None},
            id="a cordon tolerated",
        ),
        pytest.param(
            [node("x"), node("y")],
            [],
            pod(nodeName="y"),
            {"x": ("NodeName", ("node(s) didn't match the requested node name",), True), "y": None},
            id="spec.nodeName",
        ),
        pytest.param(
            ZONED,
            [],
            pod(nodeSelector={"zone": "b"}),
            {
                "a1": (
                    "NodeAffinity",
                    ("node(s) didn't match Pod's node affinity/selector",),
                    True,
                ),
                "b1": None,
            },
            id="a nodeSelector",
        ),
        pytest.param(
            ZONED,
            [],
            pod(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "zone", "operator": "NotIn", "values": ["b"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            ),
            {
                "a1": None,
                "b1": (
                    "NodeAffinity",
                    ("node(s) didn't match Pod's node affinity/selector",),
                    True,
                ),
            },
            id="required node affinity",
        ),
        pytest.param(
            [node("s", cpu="1")],
            [bound("old", "s", cpu="600m")],
            pod(cpu="500m"),
            {"s": ("NodeResourcesFit", ("Insufficient cpu",), False)},
            id="cpu taken by a bound pod",
        ),
        pytest.param(
            [node("s", cpu="1")],
            [],
            pod(cpu="2"),
            {"s": ("NodeResourcesFit", ("Insufficient cpu",), True)},
            id="more cpu than the whole node",
        ),
        pytest.param(
            [node("s", pods="1")],
            [bound("old", "s")],
            pod(),
            {"s": ("NodeResourcesFit", ("Too many pods",), False)},
            id="the pod count",
        ),
        pytest.param(
            [node("g", more={"example.com/gpu": "1"})],
            [],
            pod(containers=[{"name": "c", "resources": {"requests": {"example.com/gpu": "2"}}}]),
            {"g": ("NodeResourcesFit", ("Insufficient example.com/gpu",), True)},
            id="an extended resource",
        ),
        pytest.param(
            [node("s", cpu="1")],
            [],
            pod(initContainers=[{"name": "i", "resources": {"requests": {"cpu": "1500m"}}}]),
            {"s": ("NodeResourcesFit", ("Insufficient cpu",), True)},
            id="an init container's peak",
        ),
        pytest.param(
            [node("h")],
            [
                bound(
                    "old",
                    "h",
                    containers=[{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
                )
            ],
            pod(containers=[{"name": "c", "ports": [{"containerPort": 81, "hostPort": 8080}]}]),
            {
                "h": (
                    "NodePorts",
                    ("node(s) didn't have free ports for the requested pod ports",),
                    False,
                )
            },
            id="a host port in use",
        ),
        pytest.param(
            ZONED,
            [bound("w", "a1", labels={"app": "web"})],
            pod(labels={"app": "web"}, topologySpreadConstraints=SPREAD_WEB),
            {
                "a1": (
                    "PodTopologySpread",
                    ("node(s) didn't match pod topology spread constraints",),
                    False,
                ),
                "b1": None,
            },
            id="a spread constraint's skew",
        ),
        pytest.param(
            [*ZONED, node("none")],
            [],
            pod(labels={"app": "web"}, topologySpreadConstraints=SPREAD_WEB),
            {
                "a1": None,
                "b1": None,
                "none": (
                    "PodTopologySpread",
                    (
                        "node(s) didn't match pod topology spread constraints (missing required label)",
                    ),
                    True,
                ),
            },
            id="a node without the topology key",
        ),
        pytest.param(
            ZONED,
            [bound("w", "a1", labels={"app": "web"})],
            pod(affinity=ANTI_WEB),
            {
                "a1": (
                    "InterPodAffinity",
                    ("node(s) didn't match pod anti-affinity rules",),
                    False,
                ),
                "b1": None,
            },
            id="required anti-affinity",
        ),
        pytest.param(
            ZONED,
            [bound("w", "a1", labels={"app": "other"}, affinity=ANTI_WEB)],
            pod(labels={"app": "web"}),
            {
                "a1": (
                    "InterPodAffinity",
                    ("node(s) didn't satisfy existing pods anti-affinity rules",),
                    False,
                ),
                "b1": None,
            },
            id="a running pod's anti-affinity",
        ),
        pytest.param(
            ZONED,
            [bound("d", "b1", labels={"app": "db"})],
            pod(affinity=WITH_DB),
            {
                "a1": ("InterPodAffinity", ("node(s) didn't match pod affinity rules",), True),
                "b1": None,
            },
            id="required affinity",
        ),
        pytest.param(
            ZONED,
            [],
            pod(labels={"app": "db"}, affinity=WITH_DB),
            {"a1": None, "b1": None},
            id="the first pod of a self-affine group",
        ),
        pytest.param(
            ZONED,
            [],
            pod(affinity=WITH_DB),
            {
                "a1": ("InterPodAffinity", ("node(s) didn't match pod affinity rules",), True),
                "b1": ("InterPodAffinity", ("node(s) didn't match pod affinity rules",), True),
            },
            id="affinity to pods that do not exist",
        ),
    ],
)
def test_each_filter_plugin_rejects_as_kube_scheduler_does(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    incoming: dict[str, Any],
    expected: dict[str, Any],
) -> None:
    verdicts = run_filters(incoming, Cluster(nodes, pods))
    got = {
        name: None if r is None else (r.plugin, r.reasons, r.unresolvable)
        for name, r in verdicts.items()
    }
    assert got == expected


def test_the_first_plugin_that_rejects_a_node_is_its_only_reason() -> None:
    # tainted and too small: TaintToleration runs before NodeResourcesFit
    small = node("t", cpu="1", spec={"taints": [{"key": "gpu", "effect": "NoSchedule"}]})
    verdict = run_filters(pod(cpu="2"), Cluster([small], []))["t"]
    assert verdict is not None and verdict.plugin == "TaintToleration"
