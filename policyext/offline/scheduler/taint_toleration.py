"""TaintToleration: a node's NoSchedule and NoExecute taints keep away every pod that
does not tolerate them; its PreferNoSchedule taints lower its score."""

from __future__ import annotations

from typing import Final

from policyext.offline.scheduler.cluster import NodeState
from policyext.offline.scheduler.selectors import as_map, tolerated
from policyext.offline.scheduler.status import Pod, Rejected, default_normalize

NAME: Final = "TaintToleration"
# 1.37 names no taint in the reason (earlier versions wrote `{key: value}`)
REASON: Final = "node(s) had untolerated taint(s)"


def check(pod: Pod, node: NodeState) -> Rejected | None:
    for taint in node.taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not tolerated(pod.tolerations, taint):
            return Rejected(NAME, (REASON,), True)
    return None


def scores(pod: Pod, nodes: list[NodeState]) -> list[int]:
    """Fewer untolerated PreferNoSchedule taints score higher."""
    tolerations = [
        t
        for t in pod.tolerations
        if (as_map(t).get("effect") or "PreferNoSchedule") == "PreferNoSchedule"
    ]
    counts = [
        sum(
            1
            for taint in node.taints
            if taint.get("effect") == "PreferNoSchedule" and not tolerated(tolerations, taint)
        )
        for node in nodes
    ]
    return default_normalize(counts, reverse=True)
