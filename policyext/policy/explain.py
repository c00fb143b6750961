"""Evaluations and Decisions as plain data: what /explain returns and `simulate`, `test`
and `explain` print with `-o json|yaml`."""

from __future__ import annotations

from typing import Any

from policyext.policy.engine import Evaluation, NodeVerdict, Rejection, RuleScore
from policyext.policy.scheduler.decision import Decision, scheduler_to_dict


def _rejection(r: Rejection) -> dict[str, Any]:
    out: dict[str, Any] = {"policy": r.policy, "rule": r.rule, "message": r.message}
    if r.unresolvable:
        out["unresolvable"] = True
    if r.error is not None:
        out["error"] = r.error
    return out


def _score(s: RuleScore) -> dict[str, Any]:
    out: dict[str, Any] = {
        "policy": s.policy,
        "rule": s.rule,
        "weight": s.weight,
        "value": s.value,
        "score": round(s.score, 6),
    }
    if s.audit:
        out["mode"] = "Audit"
    if s.error is not None:
        out["error"] = s.error
    return out


def verdict_to_dict(v: NodeVerdict) -> dict[str, Any]:
    out: dict[str, Any] = {"name": v.name, "feasible": v.feasible}
    if v.unresolvable:
        out["unresolvable"] = True
    if not v.feasible:
        out["message"] = v.message()  # what the scheduler is told (FailedNodes)
    out["rejections"] = [_rejection(r) for r in v.rejections]
    out["auditRejections"] = [_rejection(r) for r in v.audits]
    out["ignoredErrors"] = [_rejection(r) for r in v.skipped]
    out["scores"] = [_score(s) for s in v.scores]
    out["score"] = v.score
    return out


def evaluation_to_dict(ev: Evaluation) -> dict[str, Any]:
    best = ev.best()
    return {
        "policyVersion": ev.version,
        "policies": [
            {"name": m.policy, "applies": m.applies, "reason": m.reason}
            | ({"error": m.error} if m.error else {})
            for m in ev.matches
        ],
        "nodes": [verdict_to_dict(v) for v in ev.nodes],
        "best": best.name if best is not None else None,
        "evaluations": ev.evaluations,
        "errors": ev.errors,
    }


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
        entry["scores"] = [_score(s) for s in n.policy_scores]
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
