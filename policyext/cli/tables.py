"""Human-readable output of the CLI: the simulate tables and the test report."""

from __future__ import annotations

from collections.abc import Sequence

from policyext.offline.scheduler.decision import Decision, NodeDecision, describe
from policyext.offline.testing import TestResult
from policyext.offline.whatif import BECOMES_UNSCHEDULABLE, Placement, WhatIf
from policyext.policy import NodeVerdict, RuleScore


def _format_number(value: float | None) -> str:
    if value is None:
        return "error"
    return f"{value:g}"


def _policy_lines(v: NodeVerdict, scores: Sequence[RuleScore]) -> list[str]:
    lines = [
        f"rejected by {r.rule_id}: {r.message}" + (f" ({r.error})" if r.error else "")
        for r in v.rejections
    ]
    lines += [f"rule error {r.rule_id} (ignored): {r.error}" for r in v.skipped]
    lines += [
        f"audit: would be rejected by {r.rule_id}: {r.message}"
        + (f" ({r.error})" if r.error else "")
        for r in v.audits
    ]
    for s in scores:
        tag = " (audit)" if s.audit else ""
        error = f" [{s.error}]" if s.error else ""
        lines.append(
            f"score {s.policy}/{s.rule}{tag}: value {_format_number(s.value)}"
            f" -> {s.score:.2f} x weight {s.weight}{error}"
        )
    return lines


def _scheduler_lines(d: Decision, n: NodeDecision) -> list[str]:
    if n.scheduler is not None:
        reasons = ", ".join(n.scheduler.reasons)
        return [f"rejected by scheduler {n.scheduler.plugin}: {reasons}"]
    if not d.emulated or n.total is None:
        return []
    parts = [f"{s.plugin} {s.score}x{s.weight}" for s in n.plugin_scores]
    plugins = sum(s.weighted for s in n.plugin_scores)
    return [f"scheduler: {', '.join(parts)} = {plugins}"]


def _details(d: Decision, n: NodeDecision) -> list[str]:
    lines = _scheduler_lines(d, n) + _policy_lines(n.policy, n.policy_scores)
    if d.emulated and n.policy_score is not None:
        factor = d.extender_weight * 10
        lines.append(f"policies: {n.policy_score} x{factor} = {n.policy_score * factor}")
    return lines or ["-"]


def _order(n: NodeDecision) -> tuple[int, int, str]:
    return (0 if n.feasible else 1, -(n.total or 0), n.name)


def decision_table(d: Decision) -> str:
    """What decided, which policies apply, then the nodes ranked best first: feasible or
    not, the scheduler's and the policies' reasons, each score, the total; then the node
    the scheduler would pick, or its FailedScheduling message."""
    ev = d.evaluation
    out = describe(d)
    for m in ev.matches:
        state = "applies" if m.applies else "does not apply"
        detail = f": {m.reason}" if not m.applies or m.error else ""
        error = f" ({m.error})" if m.error else ""
        out.append(f"policy {m.policy} {state}{detail}{error}")
    if not ev.matches:
        out.append("no policies loaded")
    out.append("")
    rows = sorted(d.nodes, key=_order)
    width = max([len("NODE"), *(len(n.name) for n in rows)])
    out.append(f"{'NODE':<{width}}  {'FEASIBLE':<8}  {'SCORE':>5}  DETAILS")
    for n in rows:
        score = "-" if n.total is None or not n.feasible else str(n.total)
        details = _details(d, n)
        feasible = "yes" if n.feasible else ("no*" if n.unresolvable else "no")
        out.append(f"{n.name:<{width}}  {feasible:<8}  {score:>5}  {details[0]}")
        out.extend(f"{'':<{width}}  {'':<8}  {'':>5}  {line}" for line in details[1:])
    out.append("")
    count = len(d.feasible())
    summary = f"{count} of {len(d.nodes)} nodes feasible (no*: unresolvable)"
    if d.emulated:
        by_scheduler = sum(n.rejected_by == "scheduler" for n in d.nodes)
        by_policies = sum(n.rejected_by == "policies" for n in d.nodes)
        summary += f"; rejected by the scheduler: {by_scheduler}, by the policies: {by_policies}"
    out.append(summary)
    best = d.best()
    if best is None:
        out.append("no node fits this pod")
        message = d.unschedulable_message()
        if d.emulated and message:
            out.append(f"kube-scheduler would report: {message}")
    else:
        tied = [name for name in d.tied() if name != best.name]
        also = f", tied with {', '.join(tied)}" if tied else ""
        out.append(f"best node is {best.name} (score {best.total}{also})")
    return "\n".join(out) + "\n"


def _best(p: Placement) -> str:
    return "-" if p.best is None else f"{p.best} ({p.score})"


def whatif_table(result: WhatIf) -> str:
    """One row per pending pod: feasible nodes and the best node (its score) under the
    current rules -> under the candidate rules, and the verdict. A pod that would lose its
    place also gets the candidate rules' rejections, each with the nodes it rejected."""
    out = [
        f"current rules {result.current_version} -> candidate rules "
        f"{result.candidate_version}, {result.nodes} node{'' if result.nodes == 1 else 's'}",
        "",
    ]
    if not result.pods:
        return "\n".join([*out, "no pending pods"]) + "\n"
    rows = [
        (
            f"{c.namespace}/{c.name}",
            f"{c.before.feasible} -> {c.after.feasible}",
            f"{_best(c.before)} -> {_best(c.after)}",
            c.verdict,
        )
        for c in result.pods
    ]
    header = ("POD", "FEASIBLE", "BEST NODE", "VERDICT")
    widths = [max(len(header[k]), *(len(r[k]) for r in rows)) for k in range(3)]
    indent = sum(w + 2 for w in widths)

    def line(cells: Sequence[str]) -> str:
        return "".join(f"{cell:<{w}}  " for cell, w in zip(cells, widths, strict=False)) + cells[3]

    out.append(line(header))
    for row, change in zip(rows, result.pods, strict=True):
        out.append(line(row))
        if change.verdict == BECOMES_UNSCHEDULABLE:
            out.extend(
                f"{'':<{indent}}rejected by {rule} on {nodes} node{'' if nodes == 1 else 's'}"
                for rule, nodes in change.after.rejections.items()
            )
    out.append("")
    counts = ", ".join(f"{n} {v}" for v, n in result.summary().items())
    pods = len(result.pods)
    out.append(f"{pods} pending pod{'' if pods == 1 else 's'}: {counts}")
    return "\n".join(out) + "\n"


def test_report(results: Sequence[TestResult]) -> tuple[str, int, int]:
    lines: list[str] = []
    passed = failed = 0
    for result in results:
        lines.append(f"PolicyTest {result.name} ({result.file})")
        for issue in result.issues:
            lines.append(f"  ERROR {issue}")
        for case in result.cases:
            lines.append(f"  {'PASS' if case.passed else 'FAIL'} {case.name}")
            lines.extend(f"       {d}" for d in case.differences)
        passed += result.passed
        failed += result.failed
    return ("\n".join(lines) + "\n" if lines else ""), passed, failed
