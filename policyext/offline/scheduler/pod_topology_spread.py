"""PodTopologySpread: the pod's DoNotSchedule constraints keep the number of matching pods
per topology domain within maxSkew of the least loaded domain; its ScheduleAnyway
constraints score the less loaded domains higher.

The system default constraints (applied to pods of a Service, ReplicaSet or StatefulSet
that set none) need those objects, which a snapshot lacks: they are not emulated."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final

from policyext.offline.scheduler import node_affinity, taint_toleration
from policyext.offline.scheduler.cluster import Cluster, NodeState
from policyext.offline.scheduler.selectors import (
    as_list,
    as_map,
    label_selector_matches,
    maps,
    namespace_of,
    selector_is_empty,
)
from policyext.offline.scheduler.status import MAX_NODE_SCORE, Pod, Rejected

NAME: Final = "PodTopologySpread"
REASON: Final = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL_REASON: Final = REASON + " (missing required label)"
HOSTNAME: Final = "kubernetes.io/hostname"


@dataclass
class Constraint:
    max_skew: int
    topology_key: str
    selector: object
    min_domains: int
    honor_affinity: bool
    honor_taints: bool
    counts: dict[str, int] = field(default_factory=dict)  # per domain value

    def admits(self, pod: Pod, node: NodeState) -> bool:
        """Whether the node's domain counts for this constraint (nodeAffinityPolicy and
        nodeTaintsPolicy)."""
        if self.honor_affinity and node_affinity.check(pod, node) is not None:
            return False
        return not (self.honor_taints and taint_toleration.check(pod, node) is not None)

    def matching_pods(self, pod: Pod, node: NodeState) -> int:
        if self.selector is None or selector_is_empty(self.selector):
            return 0
        return sum(
            1
            for p in node.pods
            if not as_map(p.get("metadata")).get("deletionTimestamp")
            and namespace_of(p) == pod.namespace
            and label_selector_matches(self.selector, _labels(p))
        )


def _labels(pod: Any) -> dict[str, str]:
    labels = as_map(as_map(pod.get("metadata")).get("labels"))
    return {str(k): str(v) for k, v in labels.items()}


def constraints(pod: Pod, when: str) -> list[Constraint]:
    out = []
    for raw in maps(pod.spec.get("topologySpreadConstraints")):
        if raw.get("whenUnsatisfiable") != when:
            continue
        selector = raw.get("labelSelector")
        keys = {
            str(k): pod.labels[str(k)]
            for k in as_list(raw.get("matchLabelKeys"))
            if str(k) in pod.labels
        }
        if keys:
            base = as_map(selector)
            selector = {**base, "matchLabels": {**as_map(base.get("matchLabels")), **keys}}
        min_domains = raw.get("minDomains")
        out.append(
            Constraint(
                max_skew=int(raw.get("maxSkew") or 1),
                topology_key=str(raw.get("topologyKey") or ""),
                selector=selector,
                min_domains=min_domains if isinstance(min_domains, int) else 1,
                honor_affinity=raw.get("nodeAffinityPolicy", "Honor") == "Honor",
                honor_taints=raw.get("nodeTaintsPolicy", "Ignore") == "Honor",
            )
        )
    return out


def _has_keys(node: NodeState, spread: list[Constraint]) -> bool:
    return all(c.topology_key in node.labels for c in spread)


def prefilter(pod: Pod, cluster: Cluster) -> list[Constraint]:
    """The DoNotSchedule constraints, with the matching pods counted per domain over all
    the nodes that have every constraint's topology key."""
    spread = constraints(pod, "DoNotSchedule")
    for node in cluster.nodes:
        if not _has_keys(node, spread):
            continue
        for c in spread:
            if c.admits(pod, node):
                value = node.labels[c.topology_key]
                c.counts[value] = c.counts.get(value, 0) + c.matching_pods(pod, node)
    return spread


def check(pod: Pod, spread: list[Constraint], node: NodeState) -> Rejected | None:
    for c in spread:
        value = node.labels.get(c.topology_key)
        if value is None:
            return Rejected(NAME, (MISSING_LABEL_REASON,), True)
        lowest = min(c.counts.values()) if len(c.counts) >= c.min_domains and c.counts else 0
        itself = 1 if label_selector_matches(c.selector, pod.labels) else 0
        if c.counts.get(value, 0) + itself - lowest > c.max_skew:
            return Rejected(NAME, (REASON,), False)
    return None


def scores(pod: Pod, nodes: list[NodeState], cluster: Cluster) -> list[int] | None:
    """None when the pod has no ScheduleAnyway constraint (skipped)."""
    spread = constraints(pod, "ScheduleAnyway")
    if not spread:
        return None
    ignored = {n.name for n in nodes if not _has_keys(n, spread)}
    domains: list[dict[str, int]] = [{} for _ in spread]
    for node in nodes:
        if node.name in ignored:
            continue
        for i, c in enumerate(spread):
            if c.topology_key != HOSTNAME:
                domains[i].setdefault(node.labels[c.topology_key], 0)
    weights = []
    for i, c in enumerate(spread):
        size = len(nodes) - len(ignored) if c.topology_key == HOSTNAME else len(domains[i])
        weights.append(math.log(size + 2))
    for node in cluster.nodes:
        if not _has_keys(node, spread):
            continue
        for i, c in enumerate(spread):
            value = node.labels[c.topology_key]
            if c.admits(pod, node) and value in domains[i]:
                domains[i][value] += c.matching_pods(pod, node)
    raw: list[int | None] = []
    for node in nodes:
        if node.name in ignored:
            raw.append(None)
            continue
        total = 0.0
        for i, c in enumerate(spread):
            key = node.labels.get(c.topology_key)
            if key is None:
                continue
            count = c.matching_pods(pod, node) if c.topology_key == HOSTNAME else domains[i][key]
            total += count * weights[i] + (c.max_skew - 1)
        raw.append(math.floor(total + 0.5))
    valid = [r for r in raw if r is not None]
    low, high = min(valid, default=0), max(valid, default=0)
    out = []
    for r in raw:
        if r is None:
            out.append(0)
        elif high == 0:
            out.append(MAX_NODE_SCORE)
        else:
            out.append(MAX_NODE_SCORE * (high + low - r) // high)
    return out
