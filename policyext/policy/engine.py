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
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from policyext.cel import COST, DEFAULT_LIMITS, CELEvalError, Program, Timestamp, UInt, type_name
from policyext.policy.columns import UNDECIDED, ColumnPlan, Costs, Known, Placement, Scalar
from policyext.policy.compile import CompiledExpression, CompiledFilter, CompiledPolicy, PolicySet
from policyext.policy.frames import (
    MISS,
    Counters,
    Failure,
    NodeFrame,
    Request,
    node_name,
)
from policyext.policy.masks import Mask, every, some
from policyext.policy.match import PolicyMatch, policy_applies
from policyext.policy.node_source import NodeSource
from policyext.policy.plan import Plan, Results, typed
from policyext.policy.rejection import Rejection
from policyext.policy.rows import NodeRows
from policyext.policy.verdicts import (
    AuditScore,
    Evaluation,
    NodeVerdict,
    RuleScore,
)

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

    def for_scores(self, deadline: float | None) -> Prepared | None:
        """This pod side again, for the scores of the nodes its filters passed (what
        kube-scheduler asks prioritize next), when nothing of it depends on the time: its
        counters start over (the scores' evaluations and errors alone, their own
        deadline). None when the filters ran out of time (what it kept may be the
        deadline's errors)."""
        counters = self.request.counters
        if counters.timed_out:
            return None
        counters.evaluations = 0
        counters.errors = sum(1 for match in self.matches if match.error is not None)
        counters.deadline = deadline
        return self

    def evaluate(
        self,
        nodes: Sequence[Json] | NodeRows,
        *,
        names: Sequence[str] | None = None,
        filters: bool = True,
        scores: bool = True,
        detail: bool = True,
        cache_nodes: bool = False,
        columns: bool = True,
    ) -> Evaluation:
        """Filter and/or score `nodes` for the pod. With both, only feasible nodes are
        scored.

        `nodes`: Node objects, or rows of the node source's table (rows.py: NodeNames
        requests), whose values are then kept per node version. `names`: the nodes' names
        when the caller knows them already. Without `detail` the result carries final
        scores but not each rule's (what prioritize needs). `cache_nodes`: the Node objects
        are the node source's own, so what the rules read of them may be kept per node
        version as for rows. `columns`: evaluate rules over all nodes at once where they
        allow it (policy/columns/); False: node by node, with the same answers."""
        if isinstance(nodes, NodeRows):
            rows: NodeRows | None = nodes
        else:
            rows = _rows_of(self.request.source, nodes, names) if cache_nodes else None
        if rows is not None:
            nodes, names = rows.nodes, rows.names
        return _evaluate(self, nodes, names, rows, filters, scores, detail, columns)  # type: ignore[arg-type]

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
    """The engine's entry point: what of the pod the rules read (`Prepared.signature`,
    to decide whether to evaluate at all), then `Prepared.evaluate(nodes)`. `deadline`: a
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
    cache_nodes: bool = False,
    budget: int | None = None,
    deadline: float | None = None,
    columns: bool = True,
) -> Evaluation:
    """`prepare(...).evaluate(...)` in one call, for the callers that evaluate a pod once
    (simulate, test, explain, preemption, what-if)."""
    prepared = prepare(policy_set, pod, source, now, budget, deadline)
    return prepared.evaluate(
        nodes, filters=filters, scores=scores, cache_nodes=cache_nodes, columns=columns
    )


def _rows_of(
    source: NodeSource | None, nodes: Sequence[Json], names: Sequence[str] | None
) -> NodeRows | None:
    """The rows of Node objects that are the source's own (each one, by identity), or
    None when some node is not (then nothing is kept: it may be another version)."""
    if source is None:
        return None
    rows = source.node_rows(list(names) if names is not None else [node_name(n) for n in nodes])
    if rows is None or not rows.every_known():
        return None
    if any(record.node is not node for record, node in zip(rows.records(), nodes, strict=True)):
        return None
    if len(set(rows.versions.tolist())) != len(rows):  # a node named twice
        return None
    return rows


def _evaluate(
    prepared: Prepared,
    nodes: Sequence[Json],
    names: Sequence[str] | None,
    rows: NodeRows | None,
    filters: bool,
    scores: bool,
    detail: bool,
    columns: bool,
) -> Evaluation:
    matches, applied, request = prepared.matches, prepared.applied, prepared.request
    policy_set = prepared.policy_set
    counters = request.counters
    run = _Run(request, nodes, rows, columns)
    node_names = list(names) if names is not None else [node_name(n) for n in nodes]
    ev = Evaluation(policy_set.version, matches, node_names)
    if filters:
        for policy in applied:
            name = policy.name
            for rule in policy.filters:
                # the common case first: the values kept decide every node (a new pod
                # over nodes seen before); else the general path
                decided = _decided(run, name, rule.compiled)
                if decided is UNDECIDED:
                    false, others = _not_true(run, name, rule.compiled)
                else:
                    false, others = decided, {}  # type: ignore[assignment]
                plain = rule.plain
                if false is not None:
                    if plain is not None:
                        ev.add_plain(plain, false)
                    else:
                        others.update(dict.fromkeys(false.nonzero()[0].tolist(), False))
                if others:
                    for i in sorted(others):
                        _reject(run, ev, i, policy, rule, others[i])
    if scores:
        indices = (~ev.infeasible()).nonzero()[0].tolist()
        _score(run, ev, applied, indices, detail)
    ev.evaluations = counters.evaluations
    ev.errors += counters.errors
    ev.timed_out = counters.timed_out
    return ev


class _Run:
    """The nodes of one call: their frames (made on demand), and where their values are
    kept (`rows`: the node source's table; None: nodes sent in the request, nothing kept)."""

    def __init__(
        self, request: Request, nodes: Sequence[Json], rows: NodeRows | None, columns: bool
    ) -> None:
        self.request = request
        self.nodes = nodes
        self.rows = rows
        # (the rows' own count: the length of their nodes is two calls of Python)
        self.count = count = len(rows.names) if rows is not None else len(nodes)
        self.frames: list[NodeFrame | None] = [None] * count
        self._keys: dict[bool, tuple[list[Hashable], dict[Hashable, int]]] = {}
        self._placements: dict[bool, Placement] = {}
        # evaluate over columns where a rule allows it; the run is then the columns' view
        # of the nodes (columns.Rows)
        self.columns = columns
        self.budget = request.counters.budget
        self.cost: Costs | None = None

    def placement(self, reads_info: bool) -> Placement | None:
        """Where the nodes' values are kept: their slots in the source's table and the
        versions the values must have (the node information's too, when they read it)."""
        rows = self.rows
        if rows is None:
            return None
        found = self._placements.get(reads_info)
        if found is None:
            if reads_info:
                versions, changes, whole = (
                    rows.info_versions,
                    rows.changes,
                    rows.table_info_versions,
                )
            else:  # (a pod bound or gone changes no Node object)
                versions, changes, whole = rows.versions, rows.node_changes, rows.table_versions
            found = self._placements[reads_info] = Placement(
                rows.table, rows.size, rows.slots, versions, changes, whole
            )
        return found

    def versions_of(self, positions: list[int], reads_info: bool) -> npt.NDArray[np.int64]:
        assert self.rows is not None
        # the versions of the records the frames are made from (the arrays the request
        # read may be a writer's step apart from them)
        records = [self.rows.record(i) for i in positions]
        if reads_info:
            return np.fromiter((r.info_version for r in records), np.int64, len(records))
        return np.fromiter((r.version for r in records), np.int64, len(records))

    def evaluate_on(self, i: int, policy: str, program: Program) -> tuple[object, int]:
        """A node-only subexpression on node i, and the cost it charged."""
        frame = self.frame(i).frame_for(policy)
        value = self.request.counters.attempt(program, frame)
        return value, frame[COST][0]

    def timed_out(self) -> bool:
        counters = self.request.counters
        if counters.timed_out:
            return True
        deadline = counters.deadline
        return deadline is not None and time.perf_counter() > deadline

    def frame(self, i: int) -> NodeFrame:
        frame = self.frames[i]
        if frame is None:
            rows = self.rows
            if rows is None:
                frame = NodeFrame(self.request, self.nodes[i])
            else:
                record = rows.record(i)
                frame = NodeFrame(self.request, record.node)
                if record.info is not None:
                    frame.info = record.info
            self.frames[i] = frame
        return frame

    def indexed_keys(self, with_info: bool) -> tuple[list[Hashable], dict[Hashable, int]]:
        """The nodes' versions as keys of a plan's result cache, and their positions. A
        result that read nodeInfo is keyed by the node information's version too."""
        entry = self._keys.get(with_info)
        if entry is None:
            assert self.rows is not None
            versions = self.rows.info_versions if with_info else self.rows.versions
            keys: list[Hashable] = versions.tolist()
            entry = self._keys[with_info] = (keys, {k: i for i, k in enumerate(keys)})
        return entry

    def cached(self, plan: Plan | None, params: object) -> Results | None:
        rows = self.rows
        if rows is None or plan is None or not plan.cacheable:
            return None
        if not isinstance(params, tuple):
            return None
        try:
            return plan.cache.results(params, rows.table)
        except TypeError:  # a part's value is a list or a map: not a cache key
            return None


def _decided(run: _Run, policy: str, expr: CompiledExpression) -> object:
    """The nodes for which the expression is `false` (a mask, None when none) when the
    values kept decide every node by themselves (ColumnPlan.false_rows); else UNDECIDED."""
    plan = expr.plan
    if plan is None or expr.pod_only or plan.columns is None:
        return UNDECIDED
    params = run.request.plan_params(policy, plan)
    # (_by_columns's test, inline: this is asked for every filter of every request)
    if not run.columns or type(params) is not tuple or run.timed_out():
        return UNDECIDED
    return plan.columns.false_rows(run, policy, params)


def _not_true(
    run: _Run, policy: str, expr: CompiledExpression
) -> tuple[Mask | None, dict[int, object]]:
    """The nodes for which the expression is not `true`: those for which it is `false`
    (a mask, None when none), and the others with what it was instead."""
    request = run.request
    count = run.count
    if expr.pod_only:
        value = request.pod_value(policy, expr)
        if value is True:
            return None, {}
        if value is False:
            return np.ones(count, np.bool_), {}
        return None, dict.fromkeys(range(count), value)
    plan = expr.plan
    params = None if plan is None else request.plan_params(policy, plan)
    columns = None if plan is None else plan.columns
    # past the deadline, node by node: every node then fails as it would (and where the
    # plan is partial: the kept results per node version do better than the columns)
    if columns is not None and not columns.partial and _by_columns(run, params):
        return _not_true_by_columns(run, policy, expr, columns, params)  # type: ignore[arg-type]
    return _split_false(_not_true_by_node(run, policy, expr, plan, params), count)


def _by_columns(run: _Run, params: object) -> bool:
    return run.columns and type(params) is tuple and not run.timed_out()


def _split_false(bad: dict[int, object], count: int) -> tuple[Mask | None, dict[int, object]]:
    false = [i for i, outcome in bad.items() if outcome is False]
    if not false:
        return None, bad
    mask = np.zeros(count, np.bool_)
    mask[false] = True
    if len(false) == len(bad):
        return mask, {}
    return mask, {i: outcome for i, outcome in bad.items() if outcome is not False}


def _not_true_by_node(
    run: _Run, policy: str, expr: CompiledExpression, plan: Plan | None, params: object
) -> dict[int, object]:
    """The nodes for which the expression is not `true`, with what it was instead: each
    node evaluated, or its result cached by node version (plan.py)."""
    request = run.request
    count = run.count
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


Scores = tuple[npt.NDArray[np.float64], dict[int, object]]


def _scores(run: _Run, policy: str, expr: CompiledExpression, indices: list[int]) -> Scores:
    """A score expression for each of the given nodes: the numbers (as floats), and by
    position what the others were instead of a number (a Failure, a string...)."""
    request = run.request
    if expr.pod_only:
        return _as_scores([_as_score(request.pod_value(policy, expr))] * len(indices))
    return _as_scores(_score_values(run, policy, expr, indices))


def _as_scores(values: list[object] | Scores) -> Scores:
    if isinstance(values, tuple):
        return values
    failed = {k: v for k, v in enumerate(values) if type(v) is not float}
    if not failed:
        return np.array(values, np.float64), failed
    return np.array([0.0 if k in failed else v for k, v in enumerate(values)], np.float64), failed


def _score_values(
    run: _Run, policy: str, expr: CompiledExpression, indices: list[int]
) -> list[object] | Scores:
    """What `_scores` gives, or each value as it is (a float, or what it was instead of a
    number). Numbers are converted once, when they are cached."""
    request = run.request
    plan = expr.plan
    params = None if plan is None else request.plan_params(policy, plan)
    columns = None if plan is None else plan.columns
    if columns is not None and _by_columns(run, params):
        if not columns.partial:
            return _scores_by_columns(run, policy, expr, columns, params, indices)  # type: ignore[arg-type]
        decided = _decided_scores(run, policy, columns, params, indices)  # type: ignore[arg-type]
        if decided is not None:
            return decided
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


def _not_true_by_columns(
    run: _Run,
    policy: str,
    expr: CompiledExpression,
    columns: ColumnPlan,
    params: tuple[object, ...],
) -> tuple[Mask | None, dict[int, object]]:
    """`_not_true` over all nodes at once, where the kept values alone did not decide
    every row (`_decided`): the rows the columns decide, and the exact evaluator on the
    rows they leave unknown."""
    result = columns.run(run, policy, params)
    count = run.count
    false: Mask | None = None
    if isinstance(result, Scalar):
        if result.value is True:
            return None, {}
        if result.value is False:
            return np.ones(count, np.bool_), {}
        unknown: Sequence[int] = range(count)
    elif result.kind is bool:
        if not result.decided():
            false = ~(result.values | result.unknown)
            unknown = result.unknown.nonzero()[0].tolist()
        else:  # the common case: every row decided
            false, unknown = ~result.values, ()
    else:
        unknown = range(count)
    others: dict[int, object] = {}
    for i in unknown:
        value = run.frame(i).evaluate(policy, expr, params)
        if value is False:
            if false is None:
                false = np.zeros(count, np.bool_)
            false[i] = True
        elif value is not True:
            others[i] = value
    return false if false is not None and some(false) else None, others


def _scores_by_columns(
    run: _Run,
    policy: str,
    expr: CompiledExpression,
    columns: ColumnPlan,
    params: tuple[object, ...],
    indices: list[int],
) -> list[object] | Scores:
    """`_scores` over all nodes at once, the exact evaluator on the unknown rows."""
    count = len(indices)
    decided = _decided_scores(run, policy, columns, params, indices)
    if decided is not None:  # (the common case)
        return decided
    result = columns.run(run, policy, params)
    if isinstance(result, Scalar):
        value = result.value
        if type(value) in (int, float, UInt):
            return [_as_score(value)] * count
        return [_as_score(run.frame(i).evaluate(policy, expr, params)) for i in indices]
    if result.kind is not int and result.kind is not float:
        return [_as_score(run.frame(i).evaluate(policy, expr, params)) for i in indices]
    if count == run.count:
        values, missing = result.values, result.unknown
    else:
        at = np.asarray(indices, np.intp)
        values, missing = result.values[at], result.unknown[at]
    failed: dict[int, object] = {}
    # NaN and the infinities are not scores: the exact evaluator says why
    bad = missing | ~np.isfinite(values)
    unknown = bad.nonzero()[0].tolist() if some(bad) else ()
    if unknown:
        values = values.copy()
        for position in unknown:
            value = _as_score(run.frame(indices[position]).evaluate(policy, expr, params))
            if type(value) is float:
                values[position] = value
            else:
                values[position] = 0.0
                failed[position] = value
    return values, failed


def _decided_scores(
    run: _Run, policy: str, columns: ColumnPlan, params: tuple[object, ...], indices: list[int]
) -> Scores | None:
    """The scores of these nodes when the values kept give every row (`decided`): doubles,
    ints exact, none a NaN or an infinity (those are the exact evaluator's); else None."""
    decided = columns.decided(run, policy, params)
    if type(decided) is Known and (decided.kind is int or decided.kind is float):
        values = decided.values
        if len(indices) != run.count:
            values = values[np.asarray(indices, np.intp)]
        if every(np.isfinite(values)):
            return values, {}
    return None


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


def _verdict(ev: Evaluation, i: int) -> NodeVerdict:
    return ev.verdict(i)


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
    totals = np.zeros(len(indices), np.float64)
    weights = 0
    details: list[list[RuleScore]] = [[] for _ in indices] if detail else []
    errors: dict[tuple[str, str], int] = {}
    for policy in applied:
        for rule in policy.scores:
            spec = rule.rule
            raw, failed = _scores(run, policy.name, rule.compiled, indices)
            if failed:
                counters.errors += len(failed)
                errors[policy.name, spec.name] = len(failed)  # (a rule's name is its policy's once)
            normalized = _normalize(raw, failed, spec.normalize)
            audit = spec.mode == "Audit"
            if not audit:
                weights += spec.weight
                totals = totals + spec.weight * normalized
            elif len(normalized):
                # the first of the best, and the sum in order: as Python's max and sum
                best = int(np.argmax(normalized))
                ev.audit_scores[policy.name, spec.name] = AuditScore(
                    len(normalized), sum(normalized.tolist()), ev.names[indices[best]]
                )
            if detail:
                values, scores = raw.tolist(), normalized.tolist()
                for k, node_details in enumerate(details):
                    instead = failed.get(k, MISS)
                    value = values[k] if instead is MISS else None
                    why = None if instead is MISS else _why_not_a_number(instead)
                    node_details.append(
                        RuleScore(policy.name, spec.name, spec.weight, value, scores[k], audit, why)
                    )
    ev.scored = indices
    if weights:
        # floor(Σ wᵢ·sᵢ / Σ wᵢ + 0.5) for every node at once: each normalised score is in
        # [0, 10], so the weighted mean is too and truncation is floor()
        inverse = 1.0 / weights
        ev.scores = (totals * inverse + 0.5).astype(np.int64).tolist()
    else:
        ev.scores = [0] * len(indices)
    ev.score_errors = errors
    if detail:
        for k, i in enumerate(indices):
            _verdict(ev, i).scores = details[k]


def _why_not_a_number(value: object) -> str:
    if isinstance(value, Failure):
        return value.error.message
    return f"a score must be a number, got {type_name(value)}"


def _normalize(
    raw: npt.NDArray[np.float64], failed: dict[int, object], mode: str
) -> npt.NDArray[np.float64]:
    """Clamp into [0, 10], or rescale the request's values linearly to [0, 10] (MinMax).
    A value that failed scores 0: `raw` holds 0.0 there (`_scores`), which Clamp keeps,
    and which MinMax leaves out of the values it rescales."""
    if mode != "MinMax":
        return np.where(raw > 0.0, np.minimum(raw, float(MAX_SCORE)), 0.0)
    ok = np.ones(len(raw), np.bool_)
    if failed:
        ok[list(failed)] = False
    values = raw[ok]
    if not len(values):
        return np.zeros(len(raw), np.float64)
    low, high = float(values.min()), float(values.max())
    if high == low:
        return np.zeros(len(raw), np.float64)
    span = high - low
    if math.isinf(span):  # finite values more than the largest double apart
        # halving is exact, and the halves' span is finite: the same ratios
        half = low / 2
        span = high / 2 - half
        return np.where(ok, (raw / 2 - half) / span * MAX_SCORE, 0.0)
    return np.where(ok, (raw - low) / span * MAX_SCORE, 0.0)
