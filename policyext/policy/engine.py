"""The engine: which nodes a pod may use and how it scores them, as pure functions of
(compiled policy set, pod, nodes, node information, time).

filter, prioritize, preempt, /explain, `simulate` and `test` all call `evaluate`, so what
they report can never disagree. Evaluation errors are values: each rule's failurePolicy
decides what an error means for the node.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from policyext.cel import CELError, CELEvalError, Program, Timestamp
from policyext.cel.program import COST, DEFAULT_LIMITS
from policyext.cel.values import type_name
from policyext.policy.compile import CompiledExpression, CompiledFilter, CompiledPolicy, PolicySet
from policyext.policy.match import PolicyMatch, policy_applies
from policyext.policy.resources import (
    NodeInfo,
    NodeSource,
    build_node_info,
    node_allocatable,
    pod_requests,
)

MAX_SCORE: Final = 10
Json = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Rejection:
    """A filter that rejected a node (or, in Audit mode, would have)."""

    policy: str
    rule: str
    message: str
    audit: bool = False
    unresolvable: bool = False
    error: str | None = None  # set when the rule failed to evaluate

    @property
    def rule_id(self) -> str:
        return f"{self.policy}/{self.rule}"


@dataclass(frozen=True, slots=True)
class RuleScore:
    policy: str
    rule: str
    weight: int
    value: float | None  # what the expression yielded (None: it failed)
    score: float  # normalised to 0..10
    audit: bool = False
    error: str | None = None


@dataclass(slots=True)
class NodeVerdict:
    name: str
    feasible: bool = True
    unresolvable: bool = False
    rejections: list[Rejection] = field(default_factory=list)  # Enforce rejections
    audits: list[Rejection] = field(default_factory=list)  # Audit would-rejects
    skipped: list[Rejection] = field(default_factory=list)  # errors ignored (Ignore)
    scores: list[RuleScore] = field(default_factory=list)
    score: int | None = None  # the final 0..10 score, when scored

    def message(self) -> str:
        """The first rejection's message: what the scheduler reports for this node."""
        return self.rejections[0].message if self.rejections else ""


@dataclass(slots=True)
class Evaluation:
    version: str
    matches: list[PolicyMatch]
    nodes: list[NodeVerdict]
    evaluations: int = 0  # CEL evaluations performed
    errors: int = 0  # evaluation errors (all kinds)

    def applied(self) -> list[str]:
        return [m.policy for m in self.matches if m.applies]

    def feasible(self) -> list[NodeVerdict]:
        return [v for v in self.nodes if v.feasible]

    def best(self) -> NodeVerdict | None:
        """The feasible node with the highest final score (the first of equals)."""
        best: NodeVerdict | None = None
        for v in self.nodes:
            if v.feasible and v.score is not None and (best is None or v.score > best.score):  # type: ignore[operator]
                best = v
        return best


class _Variables(dict[str, object]):
    """`variables` of one policy for one (pod, node): evaluated on first use, at most once
    (a failure too); variables that read only the pod come from the request-wide cache."""

    __slots__ = ("_compiled", "_ctx", "_failures", "_frame", "_shared")
    cel_type_name = "map"

    def __init__(
        self,
        compiled: Mapping[str, CompiledExpression],
        frame: dict[Any, Any],
        shared: _Variables | None,
        ctx: _Context,
    ) -> None:
        super().__init__()
        self._compiled = compiled
        self._frame = frame
        self._shared = shared
        self._ctx = ctx
        self._failures: dict[str, CELError] = {}

    def __missing__(self, name: str) -> object:
        failure = self._failures.get(name)
        if failure is not None:
            raise failure
        expr = self._compiled.get(name)
        if expr is None:
            raise KeyError(name)
        try:
            if expr.pod_only and self._shared is not None:
                value = self._shared[name]
            else:
                value = self._ctx.run_cached(expr.program, self._frame)
        except CELError as e:
            self._failures[name] = e
            raise
        self[name] = value
        return value


def _pod_variables(
    declared: dict[str, CompiledExpression], base: dict[Any, Any], ctx: _Context
) -> _Variables:
    """A policy's request-wide variables: evaluated in a frame of their own (no node), in
    which `variables` are these same variables, so a pod-only variable may read another."""
    frame = dict(base)
    frame[COST] = [0, ctx.budget]
    variables = _Variables(declared, frame, None, ctx)
    frame["variables"] = variables
    return variables


class _Failure:
    """A filter's evaluation error kept as a value (pod-only filters are cached)."""

    __slots__ = ("error",)

    def __init__(self, error: CELError) -> None:
        self.error = error


@dataclass(slots=True)
class _Context:
    budget: int
    evaluations: int = 0
    errors: int = 0

    def run(self, program: Program, frame: dict[Any, Any]) -> object:
        """Evaluate in a frame shared by the rules of one node: the cost meter restarts."""
        frame[COST][0] = 0
        self.evaluations += 1
        return program.run(frame)

    def run_cached(self, program: Program, frame: dict[Any, Any]) -> object:
        # a variable is evaluated in its own meter, so that its cost is not charged twice
        saved = frame[COST]
        frame[COST] = [0, self.budget]
        try:
            self.evaluations += 1
            return program.run(frame)
        finally:
            frame[COST] = saved


def evaluate(
    policy_set: PolicySet,
    pod: Json,
    nodes: Sequence[Json],
    source: NodeSource | None = None,
    now: Timestamp | None = None,
    *,
    filters: bool = True,
    scores: bool = True,
    budget: int | None = None,
) -> Evaluation:
    """Filter and/or score `nodes` for `pod`. With both, only feasible nodes are scored."""
    if now is None:
        now = Timestamp(time.time_ns())
    ctx = _Context(budget if budget is not None else DEFAULT_LIMITS.cost_budget)
    matches: list[PolicyMatch] = []
    applied: list[CompiledPolicy] = []
    for policy in policy_set.policies:
        match = policy_applies(policy, pod, now)
        matches.append(match)
        if match.error is not None:
            ctx.errors += 1
        if match.applies:
            applied.append(policy)
    result = Evaluation(policy_set.version, matches, [])
    requests = pod_requests(pod) if applied else {}
    base: dict[Any, Any] = {
        "pod": pod,
        "now": now,
        "podRequests": requests,
        "node": None,
        "nodeInfo": None,
        "variables": None,
        COST: [0, ctx.budget],
    }
    declared = {p.name: {v.name: c for v, c in p.variables} for p in applied}
    shared = {p.name: _pod_variables(declared[p.name], base, ctx) for p in applied}
    pod_only_filters: dict[tuple[str, str], object] = {}
    frames: list[tuple[NodeVerdict, dict[Any, Any]]] = []
    for node in nodes:
        verdict = NodeVerdict(_name(node))
        frame = dict(base)
        frame[COST] = [0, ctx.budget]
        frame["node"] = node
        frame["nodeInfo"] = _node_info(node, source)
        frames.append((verdict, frame))
        result.nodes.append(verdict)
        if filters:
            for policy in applied:
                frame["variables"] = _Variables(
                    declared[policy.name], frame, shared[policy.name], ctx
                )
                _filter(policy, frame, verdict, ctx, pod_only_filters)
    if scores:
        scored = [(v, f) for v, f in frames if v.feasible or not filters]
        _score(applied, scored, declared, shared, ctx)
    result.evaluations = ctx.evaluations
    result.errors += ctx.errors
    return result


def _name(node: Json) -> str:
    meta = node.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, Mapping) else ""


def _node_info(node: Json, source: NodeSource | None) -> NodeInfo:
    if source is not None:
        return source.node_info(node)
    return build_node_info(node_allocatable(node), None, None)


def _filter(
    policy: CompiledPolicy,
    frame: dict[Any, Any],
    verdict: NodeVerdict,
    ctx: _Context,
    pod_only: dict[tuple[str, str], object],
) -> None:
    for rule in policy.filters:
        spec = rule.rule
        key = (policy.name, spec.name)
        error: str | None = None
        try:
            if rule.compiled.pod_only:
                outcome = pod_only.get(key, _UNSET)
                if outcome is _UNSET:
                    outcome = pod_only[key] = _outcome(rule.compiled.program, frame, ctx)
            else:
                outcome = _outcome(rule.compiled.program, frame, ctx)
            if isinstance(outcome, _Failure):
                raise outcome.error
        except CELError as e:
            ctx.errors += 1
            error = e.message
            outcome = None
        if outcome is True:
            continue
        audit = spec.mode == "Audit"
        if error is not None:
            rejection = Rejection(
                policy.name,
                spec.name,
                f"{policy.name}/{spec.name} could not be evaluated",
                audit=audit,
                unresolvable=spec.unresolvable,
                error=error,
            )
            if rule.failure_policy == "Ignore":  # Audit or not, an ignored error is skipped
                verdict.skipped.append(rejection)
                continue
        else:
            rejection = Rejection(
                policy.name,
                spec.name,
                _message(policy.name, rule, frame, ctx),
                audit=audit,
                unresolvable=spec.unresolvable,
            )
        if audit:
            verdict.audits.append(rejection)
            continue
        verdict.rejections.append(rejection)
        verdict.feasible = False
        if spec.unresolvable:
            verdict.unresolvable = True


_UNSET: Final = object()


def _outcome(program: Program, frame: dict[Any, Any], ctx: _Context) -> object:
    """A filter's result, with an error or a non-bool kept as a _Failure value."""
    try:
        value = ctx.run(program, frame)
    except CELError as e:
        return _Failure(e)
    if type(value) is not bool:
        return _Failure(CELEvalError(f"a filter must yield a bool, got {type_name(value)}"))
    return value


def _message(policy: str, rule: CompiledFilter, frame: dict[Any, Any], ctx: _Context) -> str:
    """messageExpression, else message, else `<policy>/<rule>`."""
    if rule.message is not None:
        try:
            text = ctx.run(rule.message.program, frame)
            if isinstance(text, str) and text:
                return text
        except CELError:
            ctx.errors += 1
    if rule.rule.message:
        return rule.rule.message
    return f"{policy}/{rule.rule.name}"


def _score(
    applied: list[CompiledPolicy],
    scored: list[tuple[NodeVerdict, dict[Any, Any]]],
    declared: dict[str, dict[str, CompiledExpression]],
    shared: dict[str, _Variables],
    ctx: _Context,
) -> None:
    totals = [0.0] * len(scored)
    weights = 0
    for policy in applied:
        if not policy.scores:
            continue
        per_node_variables = [
            _Variables(declared[policy.name], frame, shared[policy.name], ctx)
            for _, frame in scored
        ]
        for rule in policy.scores:
            spec = rule.rule
            raw: list[float | None] = []
            errors: list[str | None] = []
            pod_value: object = _UNSET
            for (_verdict, frame), variables in zip(scored, per_node_variables, strict=True):
                frame["variables"] = variables
                try:
                    if rule.compiled.pod_only:
                        if pod_value is _UNSET:
                            pod_value = ctx.run(rule.compiled.program, frame)
                        value = pod_value
                    else:
                        value = ctx.run(rule.compiled.program, frame)
                    raw.append(_number(value))
                    errors.append(None)
                except (CELError, TypeError) as e:
                    ctx.errors += 1
                    raw.append(None)
                    errors.append(getattr(e, "message", str(e)))
            normalized = _normalize(raw, spec.normalize)
            audit = spec.mode == "Audit"
            for i, (verdict, _frame) in enumerate(scored):
                verdict.scores.append(
                    RuleScore(
                        policy.name,
                        spec.name,
                        spec.weight,
                        raw[i],
                        normalized[i],
                        audit=audit,
                        error=errors[i],
                    )
                )
                if not audit:
                    totals[i] += spec.weight * normalized[i]
            if not audit:
                weights += spec.weight
    for i, (verdict, _frame) in enumerate(scored):
        verdict.score = final_score(totals[i], weights)


def final_score(weighted_sum: float, weights: int) -> int:
    """floor(Σ wᵢ·sᵢ / Σ wᵢ + 0.5): an integer 0..10; 0 when no score rule applies."""
    if weights == 0:
        return 0
    return max(0, min(MAX_SCORE, math.floor(weighted_sum / weights + 0.5)))


def _number(value: object) -> float:
    if type(value) in (int, float) or (isinstance(value, int) and type(value) is not bool):
        number = float(value)  # type: ignore[arg-type]
        if math.isnan(number):
            raise TypeError("a score must not be NaN")
        return number
    raise TypeError(f"a score must be a number, got {type_name(value)}")


def _normalize(raw: list[float | None], mode: str) -> list[float]:
    """Clamp into [0, 10], or rescale the request's values linearly to [0, 10] (MinMax).
    A value that failed scores 0."""
    if mode == "MinMax":
        values = [v for v in raw if v is not None]
        if not values:
            return [0.0] * len(raw)
        low, high = min(values), max(values)
        if high == low or math.isinf(high - low):
            return [0.0] * len(raw)
        return [0.0 if v is None else (v - low) / (high - low) * MAX_SCORE for v in raw]
    return [0.0 if v is None else min(max(v, 0.0), float(MAX_SCORE)) for v in raw]
