"""What a rules change would do to the pods waiting for a node: each pending pod evaluated
against the same nodes under the current and the candidate rules, side by side.

Each pod is placed on its own, as if it were the only one waiting (a burst of pending pods
would fill nodes in turn; that is the scheduler's business, not a what-if's). The pod is
judged as kube-scheduler would with the rules as its extender (scheduler/decision.py), so
"schedulable" means "some node passes the scheduler's filters and every policy filter";
without the emulation, the policies alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from policyext.cel import Timestamp
from policyext.offline.scheduler.cluster import Cluster
from policyext.offline.scheduler.decision import Decision, decide
from policyext.policy import NodeSource, PolicySet

Json = Mapping[str, Any]

BECOMES_SCHEDULABLE: Final = "becomes schedulable"
BECOMES_UNSCHEDULABLE: Final = "becomes unschedulable"
BEST_NODE_CHANGES: Final = "best node changes"
UNCHANGED: Final = "unchanged"
# the order a summary lists them in: what needs attention first
VERDICTS: Final = (BECOMES_UNSCHEDULABLE, BECOMES_SCHEDULABLE, BEST_NODE_CHANGES, UNCHANGED)
DEFAULT_SCHEDULER: Final = "default-scheduler"


@dataclass(frozen=True)
class Placement:
    """Where one set of rules would put a pod: how many nodes pass, the best of them, and
    how many nodes each filter rule (or scheduler plugin, as `scheduler/<plugin>`)
    rejected."""

    feasible: int
    best: str | None
    score: int | None
    rejections: Mapping[str, int]

    @classmethod
    def of(cls, decision: Decision) -> Placement:
        best = decision.best()
        counts: Counter[str] = Counter()
        for n in decision.nodes:
            if n.scheduler is not None:
                counts[f"scheduler/{n.scheduler.plugin}"] += 1
            else:
                counts.update(r.rule_id for r in n.policy.rejections)
        return cls(
            feasible=len(decision.feasible()),
            best=best.name if best is not None else None,
            score=best.total if best is not None else None,
            rejections=dict(sorted(counts.items())),
        )


@dataclass(frozen=True)
class PodChange:
    namespace: str
    name: str
    before: Placement
    after: Placement

    @property
    def verdict(self) -> str:
        return verdict(self.before, self.after)


@dataclass(frozen=True)
class WhatIf:
    """The comparison of two rule sets for every pending pod, over `nodes` nodes."""

    current_version: str
    candidate_version: str
    nodes: int
    pods: Sequence[PodChange]

    def summary(self) -> dict[str, int]:
        counts = Counter(change.verdict for change in self.pods)
        return {v: counts[v] for v in VERDICTS}


def verdict(before: Placement, after: Placement) -> str:
    if not before.feasible and after.feasible:
        return BECOMES_SCHEDULABLE
    if before.feasible and not after.feasible:
        return BECOMES_UNSCHEDULABLE
    if before.best != after.best:
        return BEST_NODE_CHANGES
    return UNCHANGED


def is_pending(pod: Json, scheduler_name: str | None = None) -> bool:
    """A pod waiting for a scheduler: phase Pending, no node, not being deleted (the
    scheduler skips those too), and, when asked, for the named scheduler."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    if spec.get("nodeName") or meta.get("deletionTimestamp"):
        return False
    if status.get("phase", "Pending") != "Pending":
        return False
    return scheduler_name is None or spec.get("schedulerName", DEFAULT_SCHEDULER) == scheduler_name


def compare(
    current: PolicySet,
    candidate: PolicySet,
    pods: Iterable[Json],
    nodes: Sequence[Json],
    source: NodeSource | None,
    now: Timestamp,
    cluster: Cluster | None = None,
    extender_weight: int = 1,
) -> WhatIf:
    """Every pod of `pods` under both rule sets, in namespace/name order. `nodes` are the
    objects `source` holds (when there is one) and `cluster` was built from (None: the
    policies alone decide). One `now` for both, so a time-dependent rule cannot make a
    difference of its own."""
    changes = []
    for pod in sorted(pods, key=_pod_key):
        namespace, name = _pod_key(pod)
        placements = [
            # the nodes are the source's own, so per-node results may be reused across pods
            Placement.of(
                decide(
                    rules,
                    pod,
                    nodes,
                    source,
                    now,
                    cluster,
                    extender_weight=extender_weight,
                    cache_nodes=True,
                )
            )
            for rules in (current, candidate)
        ]
        changes.append(PodChange(namespace, name, placements[0], placements[1]))
    return WhatIf(current.version, candidate.version, len(nodes), changes)


def _pod_key(pod: Json) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace", "default")), str(meta.get("name", ""))


def _placement_to_dict(p: Placement) -> dict[str, Any]:
    return {
        "feasible": p.feasible,
        "best": p.best,
        "score": p.score,
        "rejections": dict(p.rejections),
    }


def whatif_to_dict(result: WhatIf) -> dict[str, Any]:
    """The comparison as plain data: what `simulate --pending -o json|yaml` prints."""
    return {
        "currentPolicyVersion": result.current_version,
        "candidatePolicyVersion": result.candidate_version,
        "nodes": result.nodes,
        "pods": [
            {
                "namespace": c.namespace,
                "name": c.name,
                "verdict": c.verdict,
                "before": _placement_to_dict(c.before),
                "after": _placement_to_dict(c.after),
            }
            for c in result.pods
        ],
        "summary": result.summary(),
    }
