"""Decisions as plain data: what `simulate`, `test` and `explain` print with
`-o json|yaml`, built on the rendering of an Evaluation that /explain serves."""

from __future__ import annotations

from typing import Any

from policyext.offline.scheduler.decision import Decision, scheduler_to_dict
from policyext.policy import score_to_dict, verdict_to_dict


def decision_to_dict(decision: Decision) -> dict[str, Any]:
    """A Decision as plain data: what `simulate -o json|yaml`, `test` and `explain` print.
    Each node keeps the policies' fields of `verdict_to_dict` (`scores` and `score` are
    the policies', as the extender's prioritize would answer) and adds the scheduler's."""
    best = decision.best()
    nodes = []
    for n in decision.nodes:
        entry = verdict_to_dict(n.policy)
        entry["feasible"] = n.feasible
        entry["unresolvable"] = n.unresolvable
        entry["rejectedBy"] = n.rejected_by
        entry["scores"] = [score_to_dict(s) for s in n.policy_scores]
        entry["score"] = n.policy_score
        if decision.emulated:
            entry["scheduler"] = {
                "rejection": None
                if n.scheduler is None
                else {
                    "plugin": n.scheduler.plugin,
                    "reasons": list(n.scheduler.reasons),
                    "unresolvable": n.scheduler.unresolvable,
                },
                "scores": [
                    {"plugin": s.plugin, "score": s.score, "weight": s.weight}
                    for s in n.plugin_scores
                ],
            }
        entry["total"] = n.total
        nodes.append(entry)
    ev = decision.evaluation
    return {
        "scheduler": scheduler_to_dict(decision),
        "policyVersion": ev.version,
        "policies": [
            {"name": m.policy, "applies": m.applies, "reason": m.reason}
            | ({"error": m.error} if m.error else {})
            for m in ev.matches
        ],
        "nodes": nodes,
        "best": best.name if best is not None else None,
        "tiedForBest": decision.tied(),
        "unschedulable": decision.unschedulable_message(),
        "evaluations": ev.evaluations,
        "errors": ev.errors,
    }
