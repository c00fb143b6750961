"""NodeAffinity: the pod's nodeSelector and required node affinity must hold; its
preferred node affinity terms add their weights to the score."""

from __future__ import annotations

from typing import Final

from policyext.offline.scheduler.cluster import NodeState
from policyext.offline.scheduler.selectors import (
    as_list,
    as_map,
    maps,
    node_selector_matches,
    node_selector_term_matches,
)
from policyext.offline.scheduler.status import Pod, Rejected, default_normalize

NAME: Final = "NodeAffinity"
REASON: Final = "node(s) didn't match Pod's node affinity/selector"


def check(pod: Pod, node: NodeState) -> Rejected | None:
    for key, value in as_map(pod.spec.get("nodeSelector")).items():
        if node.labels.get(str(key)) != str(value):
            return Rejected(NAME, (REASON,), True)
    required = as_map(pod.affinity.get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is not None and not node_selector_matches(required, node.node):
        return Rejected(NAME, (REASON,), True)
    return None


def scores(pod: Pod, nodes: list[NodeState]) -> list[int] | None:
    """None when the pod prefers nothing (the plugin skips scoring)."""
    preferred = as_list(
        as_map(pod.affinity.get("nodeAffinity")).get(
            "preferredDuringSchedulingIgnoredDuringExecution"
        )
    )
    if not preferred:
        return None
    raw = []
    for node in nodes:
        total = 0
        for term in maps(preferred):
            weight = term.get("weight")
            if (
                isinstance(weight, int)
                and weight
                and node_selector_term_matches(term.get("preference"), node.node)
            ):
                total += weight
        raw.append(total)
    return default_normalize(raw, reverse=False)
