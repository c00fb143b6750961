"""The engine: which nodes a pod may use and how it scores them, as pure functions of
(compiled policy set, pod, nodes, node information, time).

filter, prioritize, preempt, /explain, `simulate` and `test` all call `evaluate`, so what
they report can never disagree. Evaluation errors are values: each rule's failurePolicy
decides what an error means for the node.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from policyext.cel import CELError, Program, Timestamp
from policyext.cel.program import COST, DEFAULT_LIMITS
from policyext.cel.values import UInt, type_name
from policyext.policy.compile import CompiledExpression, CompiledFilter, CompiledPolicy, PolicySet
from policyext.policy.match import PolicyMatch, policy_applies
from policyext.policy.plan import Plan
from policyext.policy.resources import (
    NodeInfo,
    NodeSource,
    build_node_info,
    node_allocatable,
    pod_requests,
)

MAX_SCORE: Final = 10
Json = Mapping[str, Any]


class Rejection(NamedTuple):
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


class RuleScore(NamedTuple):
    policy: str
    rule: str
    weight: int
    value: float | None  # what the expression yielded (None: it failed)
    score: float  # normalised to 0..10
    audit: bool = False
    error: str | None = None


class NodeVerdict:
    """What the policies decided for one node. The lists start as a shared empty tuple and
    become lists when something is added: most nodes of a request need none."""

    __slots__ = (
        "audits",
        "feasible",
        "name",
        "rejections",
        "score",
        "scores",
        "skipped",
        "unresolvable",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.feasible = True
        self.unresolvable = False
        self.rejections: Sequence[Rejection] = ()  # Enforce rejections
        self.audits: Sequence[Rejection] = ()  # Audit would-rejects
        self.skipped: Sequence[Rejection] = ()  # errors ignored (Ignore)
        self.scores: Sequence[RuleScore] = ()  # per rule, when scored with detail
        self.score: int | None = None  # the final 0..10 score, when scored

    def __repr__(self) -> str:
        state = "feasible" if self.feasible else f"rejected by {len(self.rejections)}"
        return f"NodeVerdict({self.name!r}, {state}, score={self.score})"

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
    # score rules that failed, by (policy, rule): counted even without per-rule detail
    score_errors: dict[tuple[str, str], int] = field(default_factory=dict)

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


_MISS: Final = object()
_UNUSABLE: Final = object()  # a plan whose pod-side parts failed for this pod


class _Request:
    """What one engine call shares across its nodes: the pod-side frame and values."""

    def __init__(
        self,
        applied: list[CompiledPolicy],
        pod: Json,
        now: Timestamp,
        source: NodeSource | None,
        ctx: _Context,
        cache_nodes: bool,
    ) -> None:
        self.ctx = ctx
        self.source = source
        self.cache_nodes = cache_nodes
        self.base: dict[Any, Any] = {
            "pod": pod,
            "now": now,
            "podRequests": pod_requests(pod) if applied else {},
            "node": None,
            "nodeInfo": None,
            "variables": None,
            COST: [0, ctx.budget],
        }
        self.declared = {p.name: {v.name: c for v, c in p.variables} for p in applied}
        self.shared = {
            p.name: _pod_variables(self.declared[p.name], self.base, ctx) for p in applied
        }
        self.pod_values: dict[int, object] = {}  # id(expression) -> value or _Failure
        self.score_errors: Counter[tuple[str, str]] = Counter()
        self.params: dict[int, object] = {}  # id(plan) -> tuple of part values or _UNUSABLE

    def pod_value(self, policy: str, expr: CompiledExpression) -> object:
        """A pod-only expression, once per request."""
        value = self.pod_values.get(id(expr), _MISS)
        if value is _MISS:
            frame = self.shared[policy]._frame
            value = self.pod_values[id(expr)] = _attempt(self.ctx, expr.program, frame)
        return value

    def plan_params(self, policy: str, plan: Plan) -> object:
        """The values of a plan's pod-side parts, once per request (_UNUSABLE if one fails:
        then the whole expression is evaluated per node, errors and all)."""
        params = self.params.get(id(plan), _MISS)
        if params is _MISS:
            frame = self.shared[policy]._frame
            values = tuple(_attempt(self.ctx, part, frame) for part in plan.parts)
            failed = any(isinstance(v, _Failure) for v in values)
            params = self.params[id(plan)] = _UNUSABLE if failed else values
        return params


def _values(
    request: _Request, policy: str, expr: CompiledExpression, states: list[_Node]
) -> list[object]:
    """The expression's value (or a _Failure) for each node, by the cheapest way: once for
    the request when it reads only the pod; from the cache of its plan when it may be; else
    evaluated per node (with the pod-side parts evaluated once)."""
    ctx = request.ctx
    if expr.pod_only:
        return [request.pod_value(policy, expr)] * len(states)
    plan = expr.plan
    params = _UNUSABLE if plan is None else request.plan_params(policy, plan)
    if plan is None or not isinstance(params, tuple):
        return [_attempt(ctx, expr.program, s.frame_for(policy)) for s in states]
    table: dict[Hashable, object] | None = None
    if plan.cacheable and request.cache_nodes and request.source is not None:
        try:
            table = plan.cache.results(params)
        except TypeError:  # a part's value is a list or a map: not a cache key
            table = None
    if table is None:
        return [s.residual(policy, plan, params) for s in states]
    out: list[object] = []
    with_info = plan.reads_node_info
    for state in states:
        key: Hashable = state.key
        if with_info:
            key = (key, state.node_info().generation)
        value = table.get(key, _MISS)
        if value is _MISS:
            value = table[key] = state.residual(policy, plan, params)
        out.append(value)
    return out


class _Node:
    """One candidate node; its frame (the variables of CEL) is built only when a rule has
    to be evaluated, which a cached plan often spares."""

    __slots__ = ("frame", "info", "key", "node", "request", "variables_of", "verdict")

    def __init__(self, request: _Request, node: Json) -> None:
        self.request = request
        self.node = node
        self.verdict = NodeVerdict(_name(node))
        self.frame: dict[Any, Any] | None = None
        self.variables_of = ""
        source = request.source
        self.info: NodeInfo | None = None
        self.key: Hashable | None = None
        if request.cache_nodes and source is not None:
            self.key = (self.verdict.name, _version(node))

    def node_info(self) -> NodeInfo:
        if self.info is None:
            self.info = _node_info(self.node, self.request.source)
        return self.info

    def frame_for(self, policy: str) -> dict[Any, Any]:
        frame = self.frame
        request = self.request
        if frame is None:
            frame = self.frame = dict(request.base)
            frame[COST] = [0, request.ctx.budget]
            frame["node"] = self.node
            frame["nodeInfo"] = self.node_info()
        if self.variables_of != policy:
            frame["variables"] = _Variables(
                request.declared[policy], frame, request.shared[policy], request.ctx
            )
            self.variables_of = policy
        return frame

    def residual(self, policy: str, plan: Plan, params: tuple[object, ...]) -> object:
        frame = self.frame_for(policy)
        for name, param in zip(plan.placeholders, params, strict=True):
            frame[name] = param
        return _attempt(self.request.ctx, plan.residual, frame)


def _attempt(ctx: _Context, program: Program, frame: dict[Any, Any]) -> object:
    """A value, or the error as a _Failure value."""
    try:
        return ctx.run(program, frame)
    except CELError as e:
        return _Failure(e)


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
    cache_nodes: bool = False,
    detail: bool = True,
) -> Evaluation:
    """Filter and/or score `nodes` for `pod`. With both, only feasible nodes are scored.

    `cache_nodes`: the nodes come from `source` (so their resourceVersion identifies their
    content) and rule results may be cached per node version. Without `detail` the verdicts
    carry final scores but not each rule's (what the prioritize verb needs)."""
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
    request = _Request(applied, pod, now, source, ctx, cache_nodes)
    states = [_Node(request, node) for node in nodes]
    result = Evaluation(policy_set.version, matches, [s.verdict for s in states])
    if filters:
        for policy in applied:
            _filter(request, policy, states)
    if scores:
        scored = [s for s in states if s.verdict.feasible or not filters]
        _score(request, applied, scored, detail)
    result.score_errors = dict(request.score_errors)
    result.evaluations = ctx.evaluations
    result.errors += ctx.errors
    return result


def _name(node: Json) -> str:
    return _metadata_field(node, "name")


def _version(node: Json) -> str:
    return _metadata_field(node, "resourceVersion")


def _metadata_field(node: Json, key: str) -> str:
    try:  # every node has metadata: the fast path
        return str(node["metadata"][key])
    except (KeyError, TypeError):
        return ""


def _node_info(node: Json, source: NodeSource | None) -> NodeInfo:
    if source is not None:
        return source.node_info(node)
    return build_node_info(node_allocatable(node), None, None)


def _filter(request: _Request, policy: CompiledPolicy, states: list[_Node]) -> None:
    ctx = request.ctx
    for rule in policy.filters:
        outcomes = _values(request, policy.name, rule.compiled, states)
        for state, outcome in zip(states, outcomes, strict=True):
            if outcome is not True:
                _reject(policy, rule, state, outcome, ctx)


def _reject(
    policy: CompiledPolicy, rule: CompiledFilter, state: _Node, outcome: object, ctx: _Context
) -> None:
    verdict = state.verdict
    spec = rule.rule
    if outcome is False:
        error = None
    else:
        ctx.errors += 1
        if isinstance(outcome, _Failure):
            error = outcome.error.message
        else:
            error = f"a filter must yield a bool, got {type_name(outcome)}"
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
            verdict.skipped = [*verdict.skipped, rejection]
            return
    else:
        frame = state.frame_for(policy.name) if rule.message is not None else None
        rejection = Rejection(
            policy.name,
            spec.name,
            _message(policy.name, rule, frame, ctx),
            audit=audit,
            unresolvable=spec.unresolvable,
        )
    if audit:
        verdict.audits = [*verdict.audits, rejection]
        return
    verdict.rejections = [*verdict.rejections, rejection]
    verdict.feasible = False
    if spec.unresolvable:
        verdict.unresolvable = True


def _message(policy: str, rule: CompiledFilter, frame: dict[Any, Any] | None, ctx: _Context) -> str:
    """messageExpression, else message, else `<policy>/<rule>`."""
    if rule.message is not None and frame is not None:
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
    request: _Request, applied: list[CompiledPolicy], states: list[_Node], detail: bool
) -> None:
    """Every node's final score; with `detail`, each rule's value and score too."""
    ctx = request.ctx
    totals = [0.0] * len(states)
    weights = 0
    details: list[list[RuleScore]] = [[] for _ in states] if detail else []
    for policy in applied:
        for rule in policy.scores:
            spec = rule.rule
            raw: list[float | None] = []
            errors: list[str | None] = []
            for value in _values(request, policy.name, rule.compiled, states):
                number = _number(value)
                raw.append(number)
                if number is None:
                    ctx.errors += 1
                    errors.append(_why_not_a_number(value))
                    request.score_errors[policy.name, spec.name] += 1
                elif detail:
                    errors.append(None)
            normalized = _normalize(raw, spec.normalize)
            audit = spec.mode == "Audit"
            if not audit:
                weight = spec.weight
                weights += weight
                for i, score in enumerate(normalized):
                    totals[i] += weight * score
            if detail:
                for i, node_details in enumerate(details):
                    node_details.append(
                        RuleScore(
                            policy.name,
                            spec.name,
                            spec.weight,
                            raw[i],
                            normalized[i],
                            audit,
                            errors[i],
                        )
                    )
    for i, state in enumerate(states):
        state.verdict.score = final_score(totals[i], weights)
        if detail:
            state.verdict.scores = details[i]


def final_score(weighted_sum: float, weights: int) -> int:
    """floor(Σ wᵢ·sᵢ / Σ wᵢ + 0.5): an integer 0..10; 0 when no score rule applies."""
    if weights == 0:
        return 0
    return max(0, min(MAX_SCORE, math.floor(weighted_sum / weights + 0.5)))


def _number(value: object) -> float | None:
    """A score as a float; None when the rule failed or did not yield a number."""
    t = type(value)
    if t is float:
        return None if math.isnan(value) else value  # type: ignore[arg-type, return-value]
    if t is int or t is UInt:
        return float(value)  # type: ignore[arg-type]
    return None


def _why_not_a_number(value: object) -> str:
    if isinstance(value, _Failure):
        return value.error.message
    if type(value) is float:
        return "a score must not be NaN"
    return f"a score must be a number, got {type_name(value)}"


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
