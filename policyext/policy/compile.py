"""From policy files to an immutable, compiled PolicySet; every issue is collected first.

Loading goes: files → YAML documents (with positions) → JSON Schema → model → CEL compiled
with the environment of each field → cross-checks. Nothing is served unless all of it
passes; then `PolicyError` carries every issue found, each at its file, line and column.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from policyext import cel
from policyext.policy.environment import MATCH_VARIABLES, rule_variables
from policyext.policy.lists import open_lists
from policyext.policy.loader import (
    Document,
    PathKey,
    discover_files,
    expression_location,
    parse_documents,
    read_documents,
)
from policyext.policy.model import (
    API_VERSION,
    POLICY_KIND,
    TEST_KIND,
    Expression,
    Filter,
    Issue,
    LabelSelector,
    Location,
    Match,
    MatchCondition,
    PolicyError,
    Requirement,
    SchedulingPolicy,
    Score,
    Variable,
)
from policyext.policy.node_reads import fields_read_pods
from policyext.policy.plan import Plan, make_plan
from policyext.policy.rejection import Rejection
from policyext.policy.schema import validate

# the variables that do not depend on the node
POD_ONLY_INPUTS: Final = frozenset(("pod", "now", "podRequests"))
# the variables that depend on the node alone
NODE_INPUTS: Final = frozenset(("node", "nodeInfo"))
_NUMBER_TYPES: Final = frozenset(("int", "uint", "double", "dyn"))
# what a match condition is told when it reads what only the rules see
_MATCH_SEES_THE_POD: Final = (
    "match conditions see only `pod` and `now`: they decide once per pod whether the policy "
    "applies, before any node is looked at; read {name} in a filter or a score rule"
)
_RULE_ONLY: Final = frozenset(("node", "nodeInfo", "podRequests", "variables"))


@dataclass(frozen=True, slots=True)
class CompiledExpression:
    expression: Expression
    program: cel.Program
    pod_only: bool  # reads neither the node nor node-dependent variables
    plan: Plan | None = None  # how to evaluate it over many nodes (see plan.py)


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    rule: Filter
    compiled: CompiledExpression
    message: CompiledExpression | None
    failure_policy: str
    # the rejection of an Enforce rule with a fixed message, the same for every node it
    # rejects (None: an Audit rule, or a message of each node's own)
    plain: Rejection | None = None


def plain_rejection(
    policy: str, rule: Filter, message: CompiledExpression | None
) -> Rejection | None:
    """What an Enforce rule with a fixed message says of every node it rejects."""
    if rule.mode == "Audit" or message is not None:
        return None
    text = rule.message or f"{policy}/{rule.name}"
    return Rejection(policy, rule.name, text, False, rule.unresolvable)


@dataclass(frozen=True, slots=True)
class CompiledScore:
    rule: Score
    compiled: CompiledExpression


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    policy: SchedulingPolicy
    conditions: tuple[tuple[MatchCondition, cel.Program], ...]
    variables: tuple[tuple[Variable, CompiledExpression], ...]
    filters: tuple[CompiledFilter, ...]
    scores: tuple[CompiledScore, ...]
    # the policy's name, read on every request: a field, not a property (a call each time)
    name: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.policy.name)


@dataclass(frozen=True, slots=True)
class PolicySet:
    """The policies being served: immutable, in name order, with a content version."""

    policies: tuple[CompiledPolicy, ...]
    version: str
    sources: tuple[str, ...]
    # the parts of a Node the policies can read, as (field,) or (field, subfield) paths;
    # None when some expression reads the node as a whole. A server decoding full Node
    # objects may skip everything else (see server/wire.py).
    node_fields: frozenset[tuple[str, ...]] | None = None
    # whether what a score depends on reads `now` (a match condition, a variable, a score
    # rule): then the same pod's scores on the same nodes may be others a moment later.
    # Unknown (a set not made by `load_policy_texts`): assumed so.
    scores_read_time: bool = True
    # what loads but may fail on some nodes (an optional field read without `?` or has()):
    # shown by `validate`, logged on a reload, never a reason to refuse the set
    warnings: tuple[Issue, ...] = ()

    def rule_count(self) -> int:
        return sum(len(p.filters) + len(p.scores) for p in self.policies)


EMPTY_POLICY_SET: Final = PolicySet((), "empty", (), frozenset(), scores_read_time=False)
# what a server holds before its policies were loaded once (e.g. the ConfigMap not read
# yet): unlike a loaded empty set, it must not let every node through
NOT_LOADED: Final = PolicySet((), "none", (), frozenset())
# what the engine itself reads of a node, whatever the policies say
ENGINE_NODE_FIELDS: Final = frozenset({("metadata",), ("status", "allocatable")})


def _programs(policy: CompiledPolicy) -> list[cel.Program]:
    out: list[cel.Program] = []
    expressions = [c for _, c in policy.variables]
    expressions += [f.compiled for f in policy.filters]
    expressions += [f.message for f in policy.filters if f.message is not None]
    expressions += [s.compiled for s in policy.scores]
    for expr in expressions:
        out.append(expr.program)
        if expr.plan is not None:
            out.extend((*expr.plan.parts, *expr.plan.key_parts, expr.plan.residual))
    return out


def scores_read_time(policies: Sequence[CompiledPolicy]) -> bool:
    """Whether a match condition, a variable or a score rule of the policies reads `now`
    (filters and their messages aside: scoring does not evaluate them)."""
    for policy in policies:
        programs = [program for _, program in policy.conditions]
        programs += [c.program for _, c in policy.variables]
        programs += [s.compiled.program for s in policy.scores]  # (their plans' parts are parts)
        if any("now" in program.references for program in programs):
            return True
    return False


def node_fields(policies: Sequence[CompiledPolicy]) -> frozenset[tuple[str, ...]] | None:
    """The (field,) and (field, subfield) paths of Node that any expression reads."""
    fields = set(ENGINE_NODE_FIELDS)
    for policy in policies:
        for program in _programs(policy):
            if "node" in program.opaque_references:
                return None
            fields.update(path[1:3] for path in program.paths if path[0] == "node")
    return frozenset(fields)


# -- entry points ---------------------------------------------------------------------------
def load_policy_set(paths: Iterable[str | Path], limits: cel.Limits | None = None) -> PolicySet:
    """Load every SchedulingPolicy under `paths`; raise PolicyError with all issues."""
    return load_policies(paths, {}, limits)


def load_policy_texts(texts: Mapping[str, str], limits: cel.Limits | None = None) -> PolicySet:
    """Load policies from named texts (e.g. the keys of a ConfigMap)."""
    return load_policies((), texts, limits)


def load_policies(
    paths: Iterable[str | Path], texts: Mapping[str, str], limits: cel.Limits | None = None
) -> PolicySet:
    """One policy set from files and folders plus named texts (e.g. the keys of a ConfigMap,
    named as they should appear in errors); raise PolicyError with every issue of all."""
    files, issues = discover_files(paths)
    documents: list[Document] = []
    for path, shown in files:
        docs, file_issues = read_documents(path, shown)
        documents.extend(docs)
        issues.extend(file_issues)
    for name in sorted(texts):
        if name.rsplit("/", 1)[-1].startswith("."):
            continue
        docs, text_issues = parse_documents(texts[name], name)
        documents.extend(docs)
        issues.extend(text_issues)
    documents, list_issues = open_lists(documents)  # kubectl's output: a List of objects
    issues.extend(list_issues)
    sources = [shown for _path, shown in files] + sorted(texts)
    return compile_documents(documents, issues, sources, limits)


def compile_documents(
    documents: Sequence[Document],
    issues: list[Issue],
    sources: Sequence[str],
    limits: cel.Limits | None = None,
) -> PolicySet:
    compiler = _PolicyCompiler(issues, limits)
    warnings = compiler.warnings
    compiled: list[CompiledPolicy] = []
    normalized: list[object] = []
    policy_files: list[str] = []
    for doc in documents:
        kind = _kind(doc, issues)
        if kind == TEST_KIND:  # PolicyTests may live beside policies: checked, not served
            issues.extend(validate(doc, TEST_KIND))
        if kind != POLICY_KIND:
            continue
        schema_issues = validate(doc, POLICY_KIND)
        if schema_issues:
            issues.extend(schema_issues)
            continue
        policy = compiler.policy(doc)
        if doc.file not in policy_files:
            policy_files.append(doc.file)
        if policy is not None:
            compiled.append(policy)
            normalized.append(cast(dict[str, Any], doc.data)["spec"] | {"name": policy.name})
    _check_unique_names(compiled, issues)
    if issues:
        raise PolicyError(sorted(issues, key=_issue_order))
    compiled.sort(key=lambda p: p.name)
    digest = hashlib.sha256(
        json.dumps(sorted(normalized, key=lambda n: n["name"]), sort_keys=True).encode()
    ).hexdigest()
    return PolicySet(
        tuple(compiled),
        digest[:12] if compiled else "empty",
        tuple(f for f in sources if f in policy_files),  # the files that hold policies
        node_fields(compiled),
        scores_read_time(compiled),
        tuple(sorted(warnings, key=_issue_order)),
    )


def _node_only_variables(variables: list[tuple[Variable, CompiledExpression]]) -> set[str]:
    """The variables that read the node (or its information) and nothing of the pod."""
    out: set[str] = set()
    for variable, compiled in variables:
        program = compiled.program
        if compiled.pod_only or "variables" in program.opaque_references:
            continue
        if not program.references <= NODE_INPUTS | {"variables"}:
            continue
        used = {field for root, field in program.selections if root == "variables"}
        if used <= out:
            out.add(variable.name)
    return out


def _variables_of_pods(
    variables: list[tuple[Variable, CompiledExpression]], node_variables: set[str]
) -> frozenset[str]:
    """The node-only variables whose value may change when a pod is bound to the node or
    leaves it: those that read nodeInfo other than what it holds of the Node alone (its
    allocatable), or such a variable. The others are kept by the Node's version
    (columns/kept.py). (A node-only variable reads only earlier ones: _node_only_variables.)"""
    out: set[str] = set()
    for variable, compiled in variables:
        if variable.name not in node_variables:
            continue
        program = compiled.program
        whole = [(name, "") for name in program.opaque_references]
        if fields_read_pods([*program.selections, *whole], out):
            out.add(variable.name)
    return frozenset(out)


def _issue_order(issue: Issue) -> tuple[str, int, int]:
    return (issue.location.file, issue.location.line, issue.location.column)


def _kind(doc: Document, issues: list[Issue]) -> str | None:
    data = doc.data
    if not isinstance(data, dict):
        issues.append(Issue(doc.location(), "a document must be a mapping (an object)"))
        return None
    kind, version = data.get("kind"), data.get("apiVersion")
    if kind not in (POLICY_KIND, TEST_KIND):
        issues.append(
            Issue(
                doc.location(("kind",)),
                f"unknown kind {kind!r}: expected {POLICY_KIND} or {TEST_KIND}",
            )
        )
        return None
    if version != API_VERSION:
        issues.append(
            Issue(
                doc.location(("apiVersion",)),
                f"unknown apiVersion {version!r}: expected {API_VERSION}",
            )
        )
        return None
    return str(kind)


def _check_unique_names(policies: list[CompiledPolicy], issues: list[Issue]) -> None:
    seen: dict[str, Location] = {}
    for p in policies:
        first = seen.setdefault(p.name, p.policy.location)
        if first is not p.policy.location:
            issues.append(
                Issue(
                    p.policy.location,
                    f"duplicate policy name (first defined at {first})",
                    policy=p.name,
                )
            )


class _PolicyCompiler:
    """Builds the model of one document and compiles its expressions, collecting issues."""

    def __init__(self, issues: list[Issue], limits: cel.Limits | None) -> None:
        self.issues = issues
        self.warnings: list[Issue] = []
        self.limits = limits
        self.broken_variables: set[str] = set()  # of the policy being compiled
        self.variable_names: set[str] = set()  # all the variables of that policy

    def policy(self, doc: Document) -> CompiledPolicy | None:
        data = cast(dict[str, Any], doc.data)
        name = data["metadata"]["name"]
        spec = data["spec"]
        before = len(self.issues)
        default_failure = spec.get("failurePolicy", "Fail")
        match, conditions = self.match(doc, name, spec.get("match") or {})
        variables = self.variables(doc, name, spec.get("variables") or [])
        pod_only_variables = {v.name for v, c in variables if c.pod_only}
        rule_names: dict[str, Location] = {}
        filters: list[CompiledFilter] = []
        for i, raw in enumerate(spec.get("filters") or []):
            path: PathKey = ("spec", "filters", i)
            rule = Filter(
                name=raw["name"],
                expression=doc.expression((*path, "expression")),
                location=doc.location(path),
                message=raw.get("message"),
                message_expression=(
                    doc.expression((*path, "messageExpression"))
                    if "messageExpression" in raw
                    else None
                ),
                failure_policy=raw.get("failurePolicy", default_failure),
                mode=raw.get("mode", "Enforce"),
                unresolvable=raw.get("unresolvable", False),
            )
            self.unique_rule(name, rule.name, rule.location, rule_names)
            compiled = self.expression(
                name, rule.name, rule.expression, variables, pod_only_variables, ("bool",)
            )
            message = None
            if rule.message_expression is not None:
                message = self.expression(
                    name,
                    rule.name,
                    rule.message_expression,
                    variables,
                    pod_only_variables,
                    ("string",),
                )
            if compiled is not None:
                plain = plain_rejection(name, rule, message)
                filters.append(CompiledFilter(rule, compiled, message, rule.failure_policy, plain))
        scores: list[CompiledScore] = []
        for i, raw in enumerate(spec.get("scores") or []):
            path = ("spec", "scores", i)
            score = Score(
                name=raw["name"],
                expression=doc.expression((*path, "expression")),
                location=doc.location(path),
                weight=raw.get("weight", 1),
                normalize=raw.get("normalize", "Clamp"),
                mode=raw.get("mode", "Enforce"),
            )
            self.unique_rule(name, score.name, score.location, rule_names)
            compiled = self.expression(
                name, score.name, score.expression, variables, pod_only_variables, ("number",)
            )
            if compiled is not None:
                scores.append(CompiledScore(score, compiled))
        if len(self.issues) > before:
            return None
        policy = SchedulingPolicy(
            name=name,
            location=doc.location(("metadata", "name")),
            failure_policy=default_failure,
            match=match,
            variables=tuple(v for v, _ in variables),
            filters=tuple(f.rule for f in filters),
            scores=tuple(s.rule for s in scores),
        )
        return CompiledPolicy(policy, conditions, tuple(variables), tuple(filters), tuple(scores))

    def unique_rule(
        self, policy: str, rule: str, location: Location, seen: dict[str, Location]
    ) -> None:
        first = seen.setdefault(rule, location)
        if first is not location:
            self.issues.append(
                Issue(location, f"duplicate rule name (first defined at {first})", policy, rule)
            )

    def match(
        self, doc: Document, policy: str, raw: dict[str, Any]
    ) -> tuple[Match, tuple[tuple[MatchCondition, cel.Program], ...]]:
        selector = None
        if "podSelector" in raw:
            sel = raw["podSelector"] or {}
            selector = LabelSelector(
                tuple(sorted((sel.get("matchLabels") or {}).items())),
                tuple(
                    Requirement(e["key"], e["operator"], tuple(e.get("values") or ()))
                    for e in sel.get("matchExpressions") or []
                ),
            )
        conditions: list[tuple[MatchCondition, cel.Program]] = []
        for i, c in enumerate(raw.get("conditions") or []):
            expr = doc.expression(("spec", "match", "conditions", i, "expression"))
            condition = MatchCondition(c["name"], expr)
            compiled = self.cel(
                policy, c["name"], expr, MATCH_VARIABLES, ("bool",), _MATCH_SEES_THE_POD
            )
            if compiled is not None:
                conditions.append((condition, compiled[0]))
        match = Match(
            namespaces=frozenset(raw["namespaces"]) if "namespaces" in raw else None,
            exclude_namespaces=frozenset(raw.get("excludeNamespaces") or ()),
            pod_selector=selector,
            scheduler_names=frozenset(raw["schedulerNames"]) if "schedulerNames" in raw else None,
            conditions=tuple(c for c, _ in conditions),
        )
        return match, tuple(conditions)

    def variables(
        self, doc: Document, policy: str, raw: list[dict[str, Any]]
    ) -> list[tuple[Variable, CompiledExpression]]:
        out: list[tuple[Variable, CompiledExpression]] = []
        seen: dict[str, Location] = {}
        self.broken_variables = set()
        self.variable_names = {v["name"] for v in raw}
        for i, v in enumerate(raw):
            path: PathKey = ("spec", "variables", i)
            variable = Variable(
                v["name"], doc.expression((*path, "expression")), doc.location(path)
            )
            first = seen.setdefault(variable.name, variable.location)
            if first is not variable.location:
                self.issues.append(
                    Issue(
                        variable.location,
                        f"duplicate variable name (first defined at {first})",
                        policy,
                        variable.name,
                    )
                )
                continue
            pod_only = {name for name, c in ((w.name, c) for w, c in out) if c.pod_only}
            compiled = self.expression(
                policy, variable.name, variable.expression, out, pod_only, ("any",)
            )
            if compiled is not None:
                out.append((variable, compiled))
            else:
                self.broken_variables.add(variable.name)  # reported once, where it is defined
        return out

    def expression(
        self,
        policy: str,
        rule: str,
        expr: Expression,
        variables: list[tuple[Variable, CompiledExpression]],
        pod_only_variables: set[str],
        expect: tuple[str, ...],
    ) -> CompiledExpression | None:
        declarations = rule_variables(
            {v.name: c.program.type for v, c in variables}, self.variable_names
        )
        compiled = self.cel(policy, rule, expr, declarations, expect)
        if compiled is None:
            return None
        program, checked = compiled
        self.warn_unguarded(policy, rule, expr, checked)
        defined = {v.name for v, _ in variables}
        used = {field for root, field in program.selections if root == "variables"}
        if used & self.broken_variables:
            return None  # the variable's own error says what is wrong
        for name in sorted(used - defined):
            listed = ", ".join(sorted(defined)) or "none defined before this point"
            self.issues.append(
                Issue(
                    expr.location,
                    f"unknown variable 'variables.{name}' (variables: {listed})",
                    policy,
                    rule,
                )
            )
        if used - defined:
            return None
        reads = set(program.references)
        node_free = reads <= POD_ONLY_INPUTS | {"variables"}
        if "variables" in program.opaque_references:
            pod_only = node_free and defined <= pod_only_variables
        else:
            pod_only = node_free and used <= pod_only_variables
        if pod_only:
            return CompiledExpression(expr, program, True)

        def known(read: str) -> bool:
            if read in POD_ONLY_INPUTS:
                return True
            return read.startswith("variables.") and read[10:] in pod_only_variables

        # the variables that read the node, with plans whose results may be cached
        variable_plans = {
            v.name: c.plan for v, c in variables if c.plan is not None and c.plan.cacheable
        }
        node_variables = _node_only_variables(variables)

        def node_only(read: str) -> bool:
            if read in NODE_INPUTS:
                return True
            return read.startswith("variables.") and read[10:] in node_variables

        try:
            plan = make_plan(
                program,
                checked,
                known,
                variable_plans,
                node_only,
                _variables_of_pods(variables, node_variables),
            )
        except cel.CELError:  # the whole expression compiled: a part always does too
            plan = None
        return CompiledExpression(expr, program, False, plan)

    def warn_unguarded(
        self, policy: str, rule: str, expr: Expression, checked: cel.CheckedExpression
    ) -> None:
        """A warning for each optional field of the pod or node read without `?` or has():
        the rule errors on an object without it (load time only, never on a request)."""
        for read in cel.unguarded_reads(checked):
            location = expression_location(expr, read.line, read.column)
            self.warnings.append(Issue(location, _unguarded_message(read), policy, rule))

    def cel(
        self,
        policy: str,
        rule: str,
        expr: Expression,
        declarations: Mapping[str, cel.Type],
        expect: tuple[str, ...],
        rule_only: str = "",
    ) -> tuple[cel.Program, cel.CheckedExpression] | None:
        """The compiled expression and the checked tree it was compiled from (what its plan
        is made from: the expression is checked once), or None after recording its issues;
        `rule_only` explains a reference to what only the rules see (`{name}` in it names
        what was read)."""
        try:
            checked = cel.check_expression(expr.source, declarations, limits=self.limits)
            program = cel.plan(checked)
        except cel.CELError as e:
            for problem in e.issues:  # every problem of the expression, each at its place
                self.issues.append(_cel_issue(policy, rule, expr, problem, rule_only))
            return None
        result = program.result_type
        if expect == ("bool",) and result not in ("bool", "dyn"):
            message = f"the expression must yield a bool, but it yields {result}"
        elif expect == ("string",) and result not in ("string", "dyn"):
            message = f"the message expression must yield a string, but it yields {result}"
        elif expect == ("number",) and result not in _NUMBER_TYPES:
            message = f"a score must yield a number (int, uint or double), but it yields {result}"
        else:
            return program, checked
        self.issues.append(Issue(expr.location, message, policy, rule))
        return None


def _unguarded_message(read: cel.UnguardedRead) -> str:
    root = read.path.partition(".")[0]
    what = f"a {root}" if root in ("pod", "node") else f"an item of {read.owner}"
    if not read.key:
        return (
            f"reads {read.path} without ? or has(): errors on {what} without "
            f"{read.field} ({read.owner}.{read.field} is optional in Kubernetes' schema; "
            f"use {read.safe_form}... or guard it with has({read.path}))"
        )
    if read.field:
        return (
            f"reads {read.path} without ? or a test: errors on {what} without "
            f"{read.field} or without the key {read.key} in it ({read.owner}.{read.field} is "
            f"optional in Kubernetes' schema, and a map holds only the keys it was given; use "
            f"{read.safe_form}...)"
        )
    return (
        f"reads {read.path} without ? or a test of the key: errors on {what} whose "
        f"{read.map_path.rpartition('.')[2]} has no key {read.key} (a map holds only the keys "
        f"it was given; use {read.safe_form}... or guard it with {read.key} in {read.map_path})"
    )


def _cel_issue(
    policy: str, rule: str, expr: Expression, problem: cel.CELError, rule_only: str
) -> Issue:
    """One problem of an expression as an issue at its place in the file."""
    location = expression_location(expr, problem.line, problem.column)
    line, column = problem.line, problem.column
    where = f" (expression {line}:{column})" if line is not None else ""
    undeclared = "undeclared reference to '"
    if rule_only and problem.message.startswith(undeclared):
        name = problem.message[len(undeclared) :].partition("'")[0].partition(".")[0]
        if name in _RULE_ONLY:
            where += ": " + rule_only.format(name=f"`{name}`")
    return Issue(location, f"{problem.message}{where}", policy, rule)
