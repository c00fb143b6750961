"""PolicyTest: cases that pin what policies decide, run by `policyext test`.

A test names its policies and a snapshot of Nodes and Pods; each case gives a pod and what
to expect: the exact feasible set, a rule (or scheduler plugin) that rejects a node, the
Audit rules that would have, the best node, the policies' final scores. Cases are judged as
kube-scheduler would decide with the policies as its extender (scheduler/decision.py),
unless the test turns the emulation off (`spec.schedulerEmulation: false`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any, cast

import yaml

from policyext.cel import CELError, parse_timestamp
from policyext.offline.scheduler.cluster import Cluster
from policyext.offline.scheduler.decision import Decision, decide
from policyext.offline.scheduler.framework import FILTERS
from policyext.offline.workloads import pod_from, pods_from
from policyext.policy import (
    TEST_KIND,
    Document,
    Issue,
    NodeSource,
    NodeVerdict,
    PolicyError,
    PolicySet,
    discover,
    load_policy_set,
    load_yaml_all,
    open_lists,
    pod_requests,
    read_documents,
    validate_schema,
    yaml_error_line,
)

SourceLoader = Callable[[Path], NodeSource]


@dataclass
class CaseResult:
    name: str
    passed: bool
    differences: list[str] = field(default_factory=list)


@dataclass
class TestResult:
    name: str
    file: str
    cases: list[CaseResult] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)  # the test itself could not run
    scheduler_emulation: bool = True  # the test's spec.schedulerEmulation

    @property
    def passed(self) -> int:
        return sum(c.passed for c in self.cases)

    @property
    def failed(self) -> int:
        return sum(not c.passed for c in self.cases) + (1 if self.issues else 0)


def find_tests(paths: Iterable[str | Path]) -> tuple[list[Document], list[Issue]]:
    files, issues = discover(paths)
    tests: list[Document] = []
    for path in files:
        docs, file_issues = read_documents(path)
        docs, list_issues = open_lists(docs)
        issues.extend(file_issues + list_issues)
        tests.extend(
            d for d in docs if isinstance(d.data, dict) and d.data.get("kind") == TEST_KIND
        )
    return tests, issues


def wants_scheduler_emulation(spec: dict[str, Any]) -> bool:
    """The test's switch for the scheduler emulation, `spec.schedulerEmulation` (default
    true): false judges its cases by the policies alone, as `--policies-only` does. The
    emulation itself is the caller's to pass in; this says whether the test wants it."""
    return bool(spec.get("schedulerEmulation", True))


def run_test(doc: Document, load_source: SourceLoader) -> TestResult:
    data = cast(dict[str, Any], doc.data)
    name = str((data.get("metadata") or {}).get("name", "")) if isinstance(data, dict) else ""
    result = TestResult(name, doc.file)
    schema_issues = validate_schema(doc, TEST_KIND)
    if schema_issues:
        result.issues = schema_issues
        return result
    spec = data["spec"]
    result.scheduler_emulation = wants_scheduler_emulation(spec)
    folder = Path(doc.file).parent
    try:
        policies = load_policy_set([folder / p for p in spec["policies"]])
    except PolicyError as e:
        result.issues = e.issues
        return result
    source = None
    if "snapshot" in spec:
        try:
            source = load_source(folder / spec["snapshot"])
        except Exception as e:  # a snapshot that cannot be read fails the test, not the run
            result.issues = [Issue(doc.location(("spec", "snapshot")), str(e), name)]
            return result
    nodes = list(getattr(source, "nodes", {}).values()) if source is not None else []
    pods = getattr(source, "pods", None)
    namespaces = getattr(source, "namespaces", None)
    cluster = Cluster(nodes, pods, namespaces) if result.scheduler_emulation else None
    known = filter_names(policies)
    for i, case in enumerate(spec["cases"]):
        result.cases.append(_run_case(doc, i, case, spec, folder, policies, source, cluster, known))
    return result


def _run_case(
    doc: Document,
    index: int,
    case: dict[str, Any],
    spec: dict[str, Any],
    folder: Path,
    policies: PolicySet,
    source: NodeSource | None,
    cluster: Cluster | None,
    known: Collection[str],
) -> CaseResult:
    result = CaseResult(case["name"], True)
    try:
        pod = _pod(case["pod"], folder)
        now_text = case.get("now") or spec.get("now")
        now = parse_timestamp(now_text) if now_text else None
    except (OSError, yaml.YAMLError, ValueError, CELError) as e:
        return CaseResult(case["name"], False, [f"cannot load the case: {e}"])
    nodes = list(getattr(source, "nodes", {}).values()) if source is not None else []
    decision = decide(policies, pod, nodes, source, now, cluster)
    result.differences = compare(case["expect"], decision, known)
    result.passed = not result.differences
    return result


def _pod(value: object, folder: Path) -> dict[str, Any]:
    """The case's pod: inline or in a file, a Pod or a workload's pod template; ValueError
    when it is not one, or when one of its requests is not a quantity kube-scheduler can
    count (InvalidQuantity names the field)."""
    if isinstance(value, dict):
        pod = pod_from(value, "the inline pod").pod
    else:
        path = folder / str(value)
        try:
            documents = load_yaml_all(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as e:
            raise ValueError(yaml_error_line(e, str(value))) from None
        pods = pods_from(documents, str(value))
        if len(pods) != 1:
            raise ValueError(f"{value}: a case takes one pod, the file stands for {len(pods)}")
        pod = pods[0].pod
    pod_requests(pod)
    return pod


def filter_names(policies: PolicySet) -> list[str]:
    """What `rejected:` may name: each filter rule (`policy/rule`) and each filter plugin of
    the emulated kube-scheduler."""
    rules = [f"{p.name}/{f.rule.name}" for p in policies.policies for f in p.filters]
    return [*rules, *FILTERS]


def unknown_name(field: str, name: str, known: Collection[str] | None) -> str | None:
    """The difference to report when `name` is none of `known` (None: not checked): a
    misspelt name would otherwise read as a rule that did not reject the node."""
    if known is None or name in known:
        return None
    rule = name.rpartition("/")[2]  # the rule under another policy's name, or misspelt
    close = [k for k in known if k.endswith("/" + rule)] or get_close_matches(name, known, 1)
    if close:
        hint = f"did you mean {close[0]}?"
    else:
        rules = ", ".join(k for k in known if "/" in k) or "none"
        hint = f"the filter rules: {rules}; or a scheduler plugin, as TaintToleration"
    return f"{field}: no filter rule or scheduler plugin named {name!r} ({hint})"


def compare(
    expect: dict[str, Any], decision: Decision, known: Collection[str] | None = None
) -> list[str]:
    """Every way the decision differs from the expectation, as readable lines; with
    `known` (see `filter_names`), a rule name that is none of them is a difference too."""
    diffs: list[str] = []
    by_name = {n.name: n for n in decision.nodes}
    verdicts = {n.name: n.policy for n in decision.nodes}
    feasible = sorted(n.name for n in decision.feasible())
    if "feasible" in expect:
        wanted = sorted(expect["feasible"])
        if wanted != feasible:
            missing = sorted(set(wanted) - set(feasible))
            extra = sorted(set(feasible) - set(wanted))
            diffs.append(
                f"feasible: expected {wanted}, got {feasible}"
                f" (missing {missing or '-'}, unexpected {extra or '-'})"
            )
    for node, rule in sorted((expect.get("rejected") or {}).items()):
        misnamed = unknown_name("rejected", rule, known)
        if misnamed is not None:
            diffs.append(misnamed)
            continue
        found = by_name.get(node)
        if found is None:
            diffs.append(f"rejected: node {node!r} is not in the snapshot")
            continue
        rules = [r.rule_id for r in found.policy.rejections]
        if found.scheduler is not None:
            rules.insert(0, found.scheduler.plugin)
        if rule not in rules:
            got = ", ".join(rules) if rules else "not rejected"
            diffs.append(f"rejected: expected {node} rejected by {rule}, got {got}")
    for node, wanted in sorted((expect.get("auditRejected") or {}).items()):
        named = [wanted] if isinstance(wanted, str) else wanted
        wrong = [m for m in (unknown_name("auditRejected", r, known) for r in named) if m]
        diffs.extend(wrong or _audit_differences(node, wanted, verdicts.get(node)))
    if "best" in expect:
        best = decision.best()
        wanted_best = expect["best"]
        got_best = best.name if best is not None else None
        if got_best != wanted_best and wanted_best not in decision.tied():
            diffs.append(f"best: expected {wanted_best}, got {got_best}")
    for node, score in sorted((expect.get("scores") or {}).items()):
        found = by_name.get(node)
        final = found.policy_score if found is not None and found.feasible else None
        if final != score:
            diffs.append(f"scores: expected {node}={score}, got {final}")
    return diffs


def _audit_differences(
    node: str, wanted: str | list[str], verdict: NodeVerdict | None
) -> list[str]:
    """`auditRejected: {node: rule}` or `{node: [rules]}`: each rule is among the Audit
    rules that would have rejected the node; `[]`: no Audit rule would have."""
    if verdict is None:
        return [f"auditRejected: node {node!r} is not in the snapshot"]
    got = [r.rule_id for r in verdict.audits]
    shown = ", ".join(got) if got else "no Audit rule"
    rules = [wanted] if isinstance(wanted, str) else wanted
    if not rules and got:
        return [f"auditRejected: expected no Audit rule to reject {node}, got {shown}"]
    return [
        f"auditRejected: expected {node} rejected by Audit rule {rule}, got {shown}"
        for rule in rules
        if rule not in got
    ]
