"""What a policy report on a pod says (pure functions; the writer is policy_reports.py):
the findings of a pod's last filter call that Audit filters applied to, and the report of
them about the node the pod was bound to, as a `wgpolicyk8s.io/v1alpha2` PolicyReport or an
`openreports.io/v1alpha1` Report (the same fields under two names)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from policyext.policy import Evaluation, PolicySet

Json = dict[str, Any]

SOURCE: Final = "policyext"
MESSAGE_LIMIT: Final = 1024


class ReportApi(NamedTuple):
    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


POLICY_REPORT: Final = ReportApi("wgpolicyk8s.io", "v1alpha2", "policyreports", "PolicyReport")
OPEN_REPORT: Final = ReportApi("openreports.io", "v1alpha1", "reports", "Report")
REPORT_APIS: Final = {api.api_version: api for api in (POLICY_REPORT, OPEN_REPORT)}


def audit_filters(policies: PolicySet) -> dict[str, tuple[str, ...]]:
    """Policy name -> the names of its Audit filter rules (policies without one left out)."""
    out: dict[str, tuple[str, ...]] = {}
    for policy in policies.policies:
        names = tuple(f.rule.name for f in policy.filters if f.rule.mode == "Audit")
        if names:
            out[policy.name] = names
    return out


@dataclass(frozen=True, slots=True)
class RuleFinding:
    """What one Audit filter rule said of the nodes of one filter call."""

    policy: str
    rule: str
    rejected: frozenset[str]  # the nodes it would have rejected
    errors: Mapping[str, str]  # node -> why it could not be evaluated there


@dataclass(frozen=True, slots=True)
class Filtered:
    """A pod's last filter call that Audit filters applied to, kept until it binds."""

    namespace: str
    name: str
    uid: str
    version: str
    # the nodes evaluated: the evaluation's own list, not a copy (thousands of names, for
    # each of up to WAITING pods; nothing changes it once the reply is made)
    nodes: Sequence[str]
    rules: tuple[RuleFinding, ...]
    at: float  # when it was offered (the thread's clock)


def filtered(
    pod: Mapping[str, Any],
    ev: Evaluation,
    audited: Mapping[str, tuple[str, ...]],
    at: float,
) -> Filtered | None:
    """The finding of a filter evaluation for a report: every Audit filter rule of the
    policies that apply to the pod; None when none applies or the pod has no UID."""
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("uid") or not meta.get("name"):
        return None
    applied = (m.policy for m in ev.matches if m.applies)
    rules = [(policy, rule) for policy in applied for rule in audited.get(policy, ())]
    if not rules:
        return None
    rejected: dict[tuple[str, str], set[str]] = {}
    errors: dict[tuple[str, str], dict[str, str]] = {}
    names = ev.names
    for i, verdict in ev.own.items():  # Audit would-rejects are always a node's own
        for r in verdict.audits:
            if r.error is None:
                rejected.setdefault((r.policy, r.rule), set()).add(names[i])
            else:
                errors.setdefault((r.policy, r.rule), {})[names[i]] = r.error
    return Filtered(
        str(meta.get("namespace") or "default"),
        str(meta["name"]),
        str(meta["uid"]),
        ev.version,
        names,
        tuple(
            RuleFinding(p, r, frozenset(rejected.get((p, r), ())), errors.get((p, r), {}))
            for p, r in sorted(rules)
        ),
        at,
    )


def _nodes(count: int) -> str:
    return f"{count} node" if count == 1 else f"{count} nodes"


def results(finding: Filtered, node: str, now: float) -> list[Json]:
    """One result per Audit rule, about `node`, where the pod was bound."""
    evaluated = len(finding.nodes)
    stamp = {"seconds": int(now), "nanos": 0}
    out: list[Json] = []
    for rule in finding.rules:
        would = len(rule.rejected)
        of = f"{_nodes(would)} of the {_nodes(evaluated)} evaluated"
        error = rule.errors.get(node)
        if error is not None:
            result = "error"
            message = f"could not be evaluated on node {node}, where the pod was bound: {error}"
        elif node in rule.rejected:
            result = "fail"
            message = f"would have rejected node {node}, where the pod was bound ({of})"
        else:
            result = "pass"
            message = f"accepts node {node}, where the pod was bound (it would have rejected {of})"
        if len(message) > MESSAGE_LIMIT:
            message = message[: MESSAGE_LIMIT - 3] + "..."
        out.append(
            {
                "source": SOURCE,
                "policy": rule.policy,
                "rule": rule.rule,
                "result": result,
                "message": message,
                "scored": True,
                "category": "Scheduling",
                "timestamp": stamp,
                "properties": {
                    "node": node,
                    "rejectedNodes": str(would),
                    "evaluatedNodes": str(evaluated),
                    "errorNodes": str(len(rule.errors)),
                    "policyVersion": finding.version,
                },
            }
        )
    return out


def report_name(uid: str) -> str:
    """One report per pod, named after its UID (as Kyverno names its per-resource
    reports), with a prefix of our own so that both can report on the same pod."""
    return f"policyext-{uid}"


def report_body(api: ReportApi, finding: Filtered, node: str, now: float) -> Json:
    pod_ref = {"apiVersion": "v1", "kind": "Pod", "name": finding.name, "uid": finding.uid}
    found = results(finding, node, now)
    summary = {key: 0 for key in ("pass", "fail", "warn", "error", "skip")}
    for result in found:
        summary[result["result"]] += 1
    return {
        "apiVersion": api.api_version,
        "kind": api.kind,
        "metadata": {
            "name": report_name(finding.uid),
            "namespace": finding.namespace,
            "labels": {"app.kubernetes.io/managed-by": SOURCE},
            "ownerReferences": [pod_ref],
        },
        "scope": {**pod_ref, "namespace": finding.namespace},
        "summary": summary,
        "results": found,
    }
