"""The scheduling cycle of kube-scheduler 1.37's default profile, for one pod: the filter
plugins in the profile's order (a node's verdict is the first plugin that rejects it), then
the score plugins, each normalised to 0..100 and multiplied by its weight."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policyext.offline.scheduler import (
    balanced_allocation,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    pod_topology_spread,
    taint_toleration,
)
from policyext.offline.scheduler.cluster import Cluster, NodeState
from policyext.offline.scheduler.status import Pod, Rejected

Json = Mapping[str, Any]

FILTERS: Final = (
    node_name.NAME,
    node_unschedulable.NAME,
    taint_toleration.NAME,
    node_affinity.NAME,
    node_ports.NAME,
    node_resources_fit.NAME,
    pod_topology_spread.NAME,
    inter_pod_affinity.NAME,
)
WEIGHTS: Final = {
    taint_toleration.NAME: 3,
    node_affinity.NAME: 2,
    node_resources_fit.NAME: 1,
    pod_topology_spread.NAME: 2,
    inter_pod_affinity.NAME: 2,
    balanced_allocation.NAME: 1,
    image_locality.NAME: 1,
}


@dataclass(frozen=True)
class PluginScore:
    plugin: str
    score: int  # normalised, 0..100
    weight: int

    @property
    def weighted(self) -> int:
        return self.score * self.weight


def run_filters(pod_obj: Json, cluster: Cluster) -> dict[str, Rejected | None]:
    """Per node name, the plugin that rejects the pod there (None: every filter passes)."""
    pod = Pod(pod_obj)
    spread = pod_topology_spread.prefilter(pod, cluster)
    counts = inter_pod_affinity.prefilter(pod, cluster)
    out: dict[str, Rejected | None] = {}
    for node in cluster.nodes:
        out[node.name] = (
            node_name.check(pod, node)
            or node_unschedulable.check(pod, node)
            or taint_toleration.check(pod, node)
            or node_affinity.check(pod, node)
            or node_ports.check(pod, node)
            or node_resources_fit.check(pod, node)
            or pod_topology_spread.check(pod, spread, node)
            or inter_pod_affinity.check(counts, node)
        )
    return out


def run_scores(pod_obj: Json, cluster: Cluster, nodes: list[NodeState]) -> list[list[PluginScore]]:
    """Per given node (the feasible ones), the score of each plugin that did not skip."""
    pod = Pod(pod_obj)
    results: list[tuple[str, list[int] | None]] = [
        (taint_toleration.NAME, taint_toleration.scores(pod, nodes)),
        (node_affinity.NAME, node_affinity.scores(pod, nodes)),
        (node_resources_fit.NAME, node_resources_fit.scores(pod, nodes)),
        (pod_topology_spread.NAME, pod_topology_spread.scores(pod, nodes, cluster)),
        (inter_pod_affinity.NAME, inter_pod_affinity.scores(pod, nodes, cluster)),
        (balanced_allocation.NAME, balanced_allocation.scores(pod, nodes)),
        (
            image_locality.NAME,
            image_locality.scores(pod, nodes, dict(cluster.image_nodes), len(cluster.nodes)),
        ),
    ]
    out: list[list[PluginScore]] = [[] for _ in nodes]
    for plugin, scores in results:
        if scores is None:
            continue
        for per_node, score in zip(out, scores, strict=True):
            per_node.append(PluginScore(plugin, score, WEIGHTS[plugin]))
    return out
