"""NodeUnschedulable: a cordoned node (spec.unschedulable) takes only pods that tolerate
its unschedulable taint."""

from __future__ import annotations

from typing import Final

from policyext.offline.scheduler.cluster import NodeState
from policyext.offline.scheduler.selectors import as_map, tolerated
from policyext.offline.scheduler.status import Pod, Rejected

NAME: Final = "NodeUnschedulable"
REASON: Final = "node(s) were unschedulable"
_TAINT: Final = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def check(pod: Pod, node: NodeState) -> Rejected | None:
    if not as_map(node.node.get("spec")).get("unschedulable"):
        return None
    if tolerated(pod.tolerations, _TAINT):
        return None
    return Rejected(NAME, (REASON,), True)
