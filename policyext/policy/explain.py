"""Evaluations as plain data: what /explain returns. (A scheduler's Decision, which
`simulate`, `test` and `explain` print with `-o json|yaml`, is rendered by
policyext/offline/explain.py from these.)"""

from __future__ import annotations

from typing import Any

from policyext.policy.engine import Evaluation, NodeVerdict, Rejection, RuleScore


def _rejection(r: Rejection) -> dict[str, Any]:
    out: dict[str, Any] = {"policy": r.policy, "rule": r.rule, "message": r.message}
    if r.unresolvable:
        out["unresolvable"] = True
    if r.error is not None:
        out["error"] = r.error
    return out


def score_to_dict(s: RuleScore) -> dict[str, Any]:
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
    out["scores"] = [score_to_dict(s) for s in v.scores]
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
