"""NodeName: a pod that names its node (spec.nodeName) fits only there."""

from __future__ import annotations

from typing import Final

from policyext.offline.scheduler.cluster import NodeState
from policyext.offline.scheduler.status import Pod, Rejected

NAME: Final = "NodeName"
REASON: Final = "node(s) didn't match the requested node name"


def check(pod: Pod, node: NodeState) -> Rejected | None:
    wanted = pod.spec.get("nodeName")
    if not wanted or wanted == node.name:
        return None
    return Rejected(NAME, (REASON,), True)
