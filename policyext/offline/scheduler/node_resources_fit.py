"""NodeResourcesFit: the pod's requests must fit in what the node's pods leave of its
allocatable resources (cpu, memory, ephemeral-storage, extended resources, the pod count);
the default LeastAllocated strategy scores the nodes with the most left higher."""

from __future__ import annotations

from typing import Final

from policyext.offline.scheduler.cluster import NodeState, non_zero_requests_of, requests_of
from policyext.offline.scheduler.status import MAX_NODE_SCORE, Pod, Rejected

NAME: Final = "NodeResourcesFit"
TOO_MANY_PODS: Final = "Too many pods"
_NAMED: Final = ("cpu", "memory", "ephemeral-storage")
# the resources LeastAllocated and BalancedAllocation score, with their default weights
SCORED: Final = (("cpu", 1), ("memory", 1))


def is_scalar(name: str) -> bool:
    """Extended resources, hugepages and other prefixed resources: counted by the unit."""
    return "/" in name or name.startswith(("hugepages-", "attachable-volumes-"))


def check(pod: Pod, node: NodeState) -> Rejected | None:
    """Every resource that does not fit; unresolvable when the pod asks for more than the
    whole node has (evicting pods cannot help)."""
    reasons: list[str] = []
    unresolvable = False
    if len(node.pods) + 1 > node.allocatable.get("pods", 0):
        reasons.append(TOO_MANY_PODS)
    wanted = requests_of(pod.obj)
    for name in (*_NAMED, *sorted(k for k in wanted if is_scalar(k))):
        amount = wanted.get(name, 0)
        capacity = node.allocatable.get(name, 0)
        if amount > 0 and amount > capacity - node.requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
            unresolvable = unresolvable or amount > capacity
    if reasons:
        return Rejected(NAME, tuple(reasons), unresolvable)
    return None


def scores(pod: Pod, nodes: list[NodeState]) -> list[int]:
    """LeastAllocated: per scored resource, the share left free (0..100), weighted."""
    wanted = non_zero_requests_of(pod.obj)
    out = []
    for node in nodes:
        total = weights = 0
        for name, weight in SCORED:
            capacity = node.allocatable.get(name, 0)
            if capacity == 0:
                continue
            requested = node.non_zero_requested.get(name, 0) + wanted.get(name, 0)
            left = (
                0 if requested > capacity else (capacity - requested) * MAX_NODE_SCORE // capacity
            )
            total += left * weight
            weights += weight
        out.append(total // weights if weights else 0)
    return out
