"""NodeResourcesBalancedAllocation: nodes whose cpu and memory the pod would bring closer
to the same proportion of use score higher (1.37 scores the change the pod makes, not
only the balance after it)."""

from __future__ import annotations

import math
from typing import Final

from policyext.offline.scheduler.cluster import Amounts, NodeState, requests_of
from policyext.offline.scheduler.node_resources_fit import SCORED
from policyext.offline.scheduler.status import MAX_NODE_SCORE, Pod

NAME: Final = "NodeResourcesBalancedAllocation"


def _balance(used: Amounts, capacity: Amounts) -> int:
    """100 times one minus the standard deviation of the used fractions."""
    fractions = [
        min(used.get(name, 0) / capacity[name], 1.0) for name, _ in SCORED if capacity.get(name)
    ]
    deviation = 0.0
    if len(fractions) == 2:
        deviation = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        deviation = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - deviation) * MAX_NODE_SCORE)


def scores(pod: Pod, nodes: list[NodeState]) -> list[int] | None:
    """None for a pod that requests none of the scored resources (the plugin skips it, so
    that best-effort pods do not all pile onto one node)."""
    wanted = requests_of(pod.obj)
    if not any(wanted.get(name, 0) for name, _ in SCORED):
        return None
    half = MAX_NODE_SCORE // 2
    out = []
    for node in nodes:
        before = {name: node.requested.get(name, 0) for name, _ in SCORED}
        after = {name: before[name] + wanted.get(name, 0) for name in before}
        change = _balance(after, node.allocatable) - _balance(before, node.allocatable)
        out.append(half + (half + change) // 2)
    return out
