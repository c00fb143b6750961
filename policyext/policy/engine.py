"""The engine: which nodes a pod may use and how it scores them, as pure functions of
(compiled policy set, pod, nodes, node information, time).

filter, prioritize, preempt, /explain, `simulate` and `test` all call `evaluate`, so what
they report can never disagree. Evaluation errors are values: each rule's failurePolicy
decides what an error means for the node.

A rule is evaluated once per request when it reads only the pod; per node otherwise, with
its pod-side parts evaluated once (plan.py). When the nodes come from a node source, the
per-node results of a plan are cached by node version, and a filter pass is then a few set
operations: only the nodes a rule does not accept are visited.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Final

from policyext.cel import DEFAULT_LIMITS, CELEvalError, Timestamp, UInt, type_name
from policyext.policy.compile import CompiledExpression, CompiledFilter, CompiledPolicy, PolicySet
from policyext.policy.frames import (
    MISS,
    Counters,
    Failure,
    NodeFrame,
    Request,
    node_key,
    node_name,
)
from policyext.policy.match import PolicyMatch, policy_applies
from policyext.policy.plan import Plan, Results, typed
from policyext.policy.resources import NodeSource
from policyext.policy.verdicts import AuditScore, Evaluation, NodeVerdict, Rejection, RuleScore

MAX_SCORE: Final = 10
Json = Mapping[str, Any]

__all__ = [
    "Evaluation",
    "NodeVerdict",
    "PolicyMatch",
    "Prepared",
    "Rejection",
    "RuleScore",
    "evaluate",
    "final_score",
    "prepare",
]


class Prepared:
    """The pod-side half of an evaluation: which policies apply to the pod, and (computed on
    demand, once) the values the rules read of the pod. `signature` sums them up."""

    __slots__ = ("_signatures", "applied", "matches", "policy_set", "request")

    def __init__(
        self,
        policy_set: PolicySet,
        pod: Json,
        source: NodeSource | None,
        now: Timestamp,
        budget: int | None,
        deadline: float | None = None,
    ) -> None:
        counters = Counters(
            budget if budget is not None else DEFAULT_LIMITS.cost_budget, deadline=deadline
        )
        matches: list[PolicyMatch] = []
        applied: list[CompiledPolicy] = []
        for policy in policy_set.policies:
            match = policy_applies(policy, pod, now)
            matches.append(match)
            if match.error is not None:
                counters.errors += 1
            if match.applies:
                applied.append(policy)
        self.policy_set = policy_set
        self.matches = matches
        self.applied = applied
        self.request = Request(applied, pod, now, source, counters)
        self._signatures: dict[tuple[bool, bool], Hashable | None] = {}

    @property
    def counters(self) -> Counters:
        return self.request.counters

    def signature(self, filters: bool, scores: bool) -> Hashable | None:
        """Everything of the pod (and of the time) that the rules' results can depend on,
        when each rule's per-node results are a function of these values and of the node's
        version alone (see plan.py); None otherwise (a rule reads the node and the pod
        together beyond what its plan can key, or writes a message that reads the node).
        Two pods with equal signatures get the same answer for the same nodes in the same
        versions."""
        wanted = (filters, scores)
        if wanted not in self._signatures:
            self._signatures[wanted] = self._signature(filters, scores)
        return self._signatures[wanted]

    def _signature(self, filters: bool, scores: bool) -> Hashable | None:
        request = self.request
        values: list[object] = [tuple(self.matches)]
        for policy in self.applied:
            exprs: list[CompiledExpression] = []
            if filters:
                for rule in policy.filters:
                    if rule.message is not None:
                        # a message that reads only the pod is the same on every node
                        if not rule.message.pod_only:
                            return None
                        exprs.append(rule.message)
                    exprs.append(rule.compiled)
            if scores:
                exprs.extend(rule.compiled for rule in policy.scores)
            for expr in exprs:
                if expr.pod_only:
                    value = request.pod_value(policy.name, expr)
                    if isinstance(value, Failure):  # an error: it need not be hashable
                        if any(expr is rule.message for rule in policy.filters):
                            return None  # counted as an error on each node it is written
                        values.append((Failure, value.error.message))
                    else:
                        values.append((type(value), value))
                    continue
                plan = expr.plan
                if plan is None or not plan.cacheable:
                    return None
                params = request.plan_params(policy.name, plan)
                if not isinstance(params, tuple):
                    return None
                values.append(typed(params))
        key = tuple(values)
        try:
            hash(key)
        except TypeError:  # a value is a list or a map
            return None
        return key


def prepare(
    policy_set: PolicySet,
    pod: Json,
    source: NodeSource | None = None,
    now: Timestamp | None = None,
    budget: int | None = None,
    deadline: float | None = None,
) -> Prepared:
    """The pod-side half of `evaluate`, to inspect (`Prepared.signature`) before deciding
    whether to evaluate at all; pass it to `evaluate` to reuse it. `deadline`: a
    time.perf_counter() value past which evaluations fail with DeadlineExceeded."""
    return Prepared(
        policy_set,
        pod,
        source,
        now if now is not None else Timestamp(time.time_ns()),
        budget,
        deadline,
    )


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
    names: Sequence[str] | None = None,
    prepared: Prepared | None = None,
    deadline: float | None = None,
) -> Evaluation:
    """Filter and/or score `nodes` for `pod`. With both, only feasible nodes are scored.

    `cache_nodes`: the nodes come from `source` (so their resourceVersion identifies their
    content) and rule results may be cached per node version. Without `detail` the result
    carries final scores but not each rule's (what the prioritize verb needs). `names`: the
    nodes' names when the caller knows them already. `prepared`: `prepare`'s result for
    the same policy set, pod, source and time."""
    if prepared is None:
        prepared = prepare(policy_set, pod, source, now, budget, deadline)
    matches, applied, request = prepared.matches, prepared.applied, prepared.request
    counters = request.counters
    run = _Run(request, nodes, cache_nodes and source is not None)
    node_names = list(names) if names is not None else [node_name(n) for n in nodes]
    ev = Evaluation(policy_set.version, matches, node_names)
    if filters:
        for policy in applied:
            for rule in policy.filters:
                bad = _not_true(run, policy.name, rule.compiled)
                if not bad:
                    continue
                plain = _plain_rejection(policy, rule)
                for i in sorted(bad):
                    outcome = bad[i]
                    if outcome is False and plain is not None:  # the common case, shared
                        verdict = _verdict(ev, i)
                        verdict.rejections = [*verdict.rejections, plain]
                        verdict.feasible = False
                        verdict.unresolvable = verdict.unresolvable or plain.unresolvable
                    else:
                        _reject(run, ev, i, policy, rule, outcome)
    if scores:
        infeasible = {i for i, v in ev.verdicts.items() if not v.feasible}
        indices = [i for i in range(len(nodes)) if i not in infeasible]
        _score(run, ev, applied, indices, detail)
    ev.evaluations = counters.evaluations
    ev.errors += counters.errors
    ev.timed_out = counters.timed_out
    return ev


class _Run:
    """The nodes of one call: their frames (made on demand) and cache keys."""

    def __init__(self, request: Request, nodes: Sequence[Json], cache: bool) -> None:
        self.request = request
        self.nodes = nodes
        self.frames: list[NodeFrame | None] = [None] * len(nodes)
        self.keys: list[Hashable] | None = None
        self._indexes: dict[bool, tuple[list[Hashable], dict[Hashable, int]]] = {}
        source = request.source
        if cache and source is not None:
            keys: list[Hashable] = list(source.node_keys(nodes))
            if None in keys:
                keys = [node_key(n) for n in nodes]
            if None not in keys and len(set(keys)) == len(keys):  # no duplicates
                self.keys = keys

    def frame(self, i: int) -> NodeFrame:
        frame = self.frames[i]
        if frame is None:
            frame = self.frames[i] = NodeFrame(self.request, self.nodes[i])
        return frame

    def indexed_keys(self, with_info: bool) -> tuple[list[Hashable], dict[Hashable, int]]:
        """The cache keys of the nodes, and their positions. A result that read nodeInfo is
        also keyed by the node information's generation (it changes as pods come and go)."""
        source = self.request.source
        if with_info and source is not None and source.static_node_info:
            with_info = False
        entry = self._indexes.get(with_info)
        if entry is None:
            assert self.keys is not None
            keys = self.keys
            if with_info:
                # straight from the source: a node frame is only worth making for the few
                # nodes whose results are not cached
                assert source is not None
                info = source.node_info
                nodes = self.nodes
                keys = [(k, info(nodes[i]).generation) for i, k in enumerate(keys)]
            entry = self._indexes[with_info] = (keys, {k: i for i, k in enumerate(keys)})
        return entry

    def cached(self, plan: Plan | None, params: object) -> Results | None:
        if self.keys is None or plan is None or not plan.cacheable:
            return None
        if not isinstance(params, tuple):
            return None
        try:
            return plan.cache.results(params)
        except TypeError:  # a part's value is a list or a map: not a cache key
            return None


def _not_true(run: _Run, policy: str, expr: CompiledExpression) -> dict[int, object]:
    """The nodes for which the expression is not `true`, with what it was instead."""
    request = run.request
    count = len(run.nodes)
    if expr.pod_only:
        value = request.pod_value(policy, expr)
        return {} if value is True else dict.fromkeys(range(count), value)
    plan = expr.plan
    params = None if plan is None else request.plan_params(policy, plan)
    results = run.cached(plan, params)
    if results is None:
        out: dict[int, object] = {}
        for i in range(count):
            value = run.frame(i).evaluate(policy, expr, params)
            if value is not True:
                out[i] = value
        return out
    assert plan is not None
    _, index_of = run.indexed_keys(plan.reads_node_info)
    # walks this request's nodes, never the whole table (it holds every node seen)
    known = results.values
    fresh = {
        key: run.frame(i).evaluate(policy, expr, params)
        for key, i in index_of.items()
        if key not in known
    }
    not_true = results.not_true
    if request.counters.timed_out:  # some results are the deadline's, not the nodes': kept out
        out = {i: not_true[k] for k, i in index_of.items() if k in not_true}
        out.update((index_of[k], v) for k, v in fresh.items() if v is not True)
        return out
    for key, value in fresh.items():
        results.store(key, value)
    return {i: not_true[k] for k, i in index_of.items() if k in not_true}


def _scores(run: _Run, policy: str, expr: CompiledExpression, indices: list[int]) -> list[object]:
    """A score expression for each of the given nodes: a float, or what it was instead of a
    number (a Failure, a string...). Numbers are converted once, when they are cached."""
    request = run.request
    if expr.pod_only:
        return [_as_score(request.pod_value(policy, expr))] * len(indices)
    plan = expr.plan
    params = None if plan is None else request.plan_params(policy, plan)
    results = run.cached(plan, params)
    if results is None:
        return [_as_score(run.frame(i).evaluate(policy, expr, params)) for i in indices]
    assert plan is not None
    keys, _ = run.indexed_keys(plan.reads_node_info)
    if len(indices) != len(keys):
        keys = [keys[i] for i in indices]
    known = results.values
    out = [known.get(k, MISS) for k in keys]
    for position, known_value in enumerate(out):
        if known_value is MISS:
            value = _as_score(run.frame(indices[position]).evaluate(policy, expr, params))
            out[position] = value
            if not request.counters.timed_out:
                results.store(keys[position], value)
    return out


def _as_score(value: object) -> object:
    """A number as a float (what the score pass computes with); anything else as it is.
    NaN and the infinities are not scores: they would make every other node's MinMax
    score 0 (docs/policies.md)."""
    t = type(value)
    if t is int or t is UInt:
        return float(value)  # type: ignore[arg-type]
    if t is float and not math.isfinite(value):  # type: ignore[arg-type]
        return Failure(CELEvalError(f"a score must be a finite number, got {value}"))
    return value


def _plain_rejection(policy: CompiledPolicy, rule: CompiledFilter) -> Rejection | None:
    """The rejection of an Enforce rule with a fixed message: the same for every node."""
    spec = rule.rule
    if spec.mode == "Audit" or rule.message is not None:
        return None
    message = spec.message or f"{policy.name}/{spec.name}"
    return Rejection(policy.name, spec.name, message, False, spec.unresolvable)


def _verdict(ev: Evaluation, i: int) -> NodeVerdict:
    verdict = ev.verdicts.get(i)
    if verdict is None:
        verdict = ev.verdicts[i] = NodeVerdict(ev.names[i])
    return verdict


def _reject(
    run: _Run, ev: Evaluation, i: int, policy: CompiledPolicy, rule: CompiledFilter, outcome: object
) -> None:
    counters = run.request.counters
    spec = rule.rule
    verdict = _verdict(ev, i)
    if outcome is False:
        error = None
    else:
        counters.errors += 1
        if isinstance(outcome, Failure):
            error = outcome.error.message
        else:
            error = f"a filter must yield a bool, got {type_name(outcome)}"
    audit = spec.mode == "Audit"
    if error is not None:
        rejection = Rejection(
            policy.name,
            spec.name,
            f"{policy.name}/{spec.name} could not be evaluated",
            audit,
            spec.unresolvable,
            error,
        )
        # an Audit rule never rejects, so its failurePolicy has nothing to decide: its
        # error is a would-be rejection like any other (docs/policies.md)
        if rule.failure_policy == "Ignore" and not audit:
            verdict.skipped = [*verdict.skipped, rejection]
            return
    else:
        message = _message(run, i, policy.name, rule)
        rejection = Rejection(policy.name, spec.name, message, audit, spec.unresolvable)
    if audit:
        verdict.audits = [*verdict.audits, rejection]
        return
    verdict.rejections = [*verdict.rejections, rejection]
    verdict.feasible = False
    if spec.unresolvable:
        verdict.unresolvable = True


def _message(run: _Run, i: int, policy: str, rule: CompiledFilter) -> str:
    """messageExpression, else message, else `<policy>/<rule>`."""
    if rule.message is not None:
        counters = run.request.counters
        text = counters.attempt(rule.message.program, run.frame(i).frame_for(policy))
        if isinstance(text, str) and text:
            return text
        counters.errors += 1
    if rule.rule.message:
        return rule.rule.message
    return f"{policy}/{rule.rule.name}"


def _score(
    run: _Run, ev: Evaluation, applied: list[CompiledPolicy], indices: list[int], detail: bool
) -> None:
    """Every scored node's final score; with `detail`, each rule's value and score too."""
    counters = run.request.counters
    totals = [0.0] * len(indices)
    weights = 0
    details: list[list[RuleScore]] = [[] for _ in indices] if detail else []
    errors: Counter[tuple[str, str]] = Counter()
    for policy in applied:
        for rule in policy.scores:
            spec = rule.rule
            values = _scores(run, policy.name, rule.compiled, indices)
            raw: list[float | None] = [v if type(v) is float else None for v in values]
            failed = raw.count(None)
            if failed:
                counters.errors += failed
                errors[policy.name, spec.name] += failed
            normalized = _normalize(raw, spec.normalize)
            audit = spec.mode == "Audit"
            if not audit:
                weights += spec.weight
                totals = [t + spec.weight * s for t, s in zip(totals, normalized, strict=True)]
            elif normalized:
                best = max(range(len(normalized)), key=normalized.__getitem__)
                ev.audit_scores[policy.name, spec.name] = AuditScore(
                    len(normalized), sum(normalized), ev.names[indices[best]]
                )
            if detail:
                for k, node_details in enumerate(details):
                    why = None if raw[k] is not None else _why_not_a_number(values[k])
                    node_details.append(
                        RuleScore(
                            policy.name, spec.name, spec.weight, raw[k], normalized[k], audit, why
                        )
                    )
    ev.scored = indices
    if weights:
        # final_score for every node at once: each normalised score is in [0, 10], so the
        # weighted mean is too and int() is floor()
        inverse = 1.0 / weights
        ev.scores = [int(t * inverse + 0.5) for t in totals]
    else:
        ev.scores = [0] * len(indices)
    ev.score_errors = dict(errors)
    if detail:
        for k, i in enumerate(indices):
            _verdict(ev, i).scores = details[k]


def final_score(weighted_sum: float, weights: int) -> int:
    """floor(Σ wᵢ·sᵢ / Σ wᵢ + 0.5): an integer 0..10; 0 when no score rule applies."""
    if weights == 0:
        return 0
    return max(0, min(MAX_SCORE, math.floor(weighted_sum / weights + 0.5)))


def _why_not_a_number(value: object) -> str:
    if isinstance(value, Failure):
        return value.error.message
    return f"a score must be a number, got {type_name(value)}"


def _normalize(raw: list[float | None], mode: str) -> list[float]:
    """Clamp into [0, 10], or rescale the request's values linearly to [0, 10] (MinMax).
    A value that failed scores 0."""
    if mode == "MinMax":
        values = [v for v in raw if v is not None]
        if not values:
            return [0.0] * len(raw)
        low, high = min(values), max(values)
        if high == low:
            return [0.0] * len(raw)
        span = high - low
        if math.isinf(span):  # finite values more than the largest double apart
            # halving is exact, and the halves' span is finite: the same ratios
            half = low / 2
            span = high / 2 - half
            return [0.0 if v is None else (v / 2 - half) / span * MAX_SCORE for v in raw]
        return [0.0 if v is None else (v - low) / span * MAX_SCORE for v in raw]
    top = float(MAX_SCORE)
    return [
        0.0 if v is None or v <= 0.0 else (v if v <= top else top)  # the clamp, inline
        for v in raw
    ]
