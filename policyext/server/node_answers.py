"""Each node's part of a NodeNames reply, kept per kind of pod for the next pod of a burst.

Whole replies rarely repeat while a burst is scheduled: kube-scheduler stops filtering once
it has found enough feasible nodes and starts the next pod where the last one stopped, so
each pod asks about another window of the nodes, and every binding changes one node's
information. What repeats is each node's part of the reply. Two pods with the same engine
`signature` get the same part for a node as long as the node and its information are the
same; the node source's `node_stamps` gives, per name, an object that is replaced whenever
either changes. A request then evaluates only the nodes whose stamp is new: after a binding,
one node instead of all of them.

A table is keyed by the stamp's id, which is unique while the table holds the stamp: a
request's lookups are then one C-level map over the names. Parts of replaced stamps stay
until the table outgrows the nodes, and it starts afresh.

Only parts that are a node's own answer are kept: never one the request deadline decided,
nor one that carries an evaluation error (an exhausted cost budget depends on the request,
not on the node).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Hashable
from typing import Any, Final, Generic, TypeVar

from policyext.cel import Timestamp
from policyext.policy.compile import PolicySet
from policyext.policy.engine import Evaluation, Prepared, evaluate
from policyext.policy.resources import LiveNodeSource
from policyext.policy.verdicts import NodeVerdict
from policyext.server import wire

# kinds of pods (signatures) kept per verb: a few Deployments' bursts at once
MAX_KINDS: Final = 16

T = TypeVar("T")
# id(stamp) -> (the stamp, the part computed for the node in that version)
Table = dict[int, tuple[object, T]]


class NodeAnswers(Generic[T]):
    """One verb's tables of per-node parts, by pod signature, for one policy set at a
    time; the oldest table goes when a new kind of pod needs room."""

    def __init__(self, kinds: int = MAX_KINDS) -> None:
        self.kinds = kinds
        self._policies: PolicySet | None = None
        self._tables: dict[Hashable, Table[T]] = {}
        self._lock = threading.Lock()

    def table(self, policies: PolicySet, key: Hashable, nodes: int) -> Table[T]:
        """The table of `key` under `policies` (a new one when there is none, or when the
        one there holds more than twice the source's `nodes`, stale parts included). A
        table handed out while a reload swaps the set is simply not found again."""
        with self._lock:
            if policies is not self._policies:
                self._tables = {}  # another policy set is being served
                self._policies = policies
            tables = self._tables
            found = tables.get(key)
            if found is not None and len(found) <= 2 * nodes + 1024:
                return found
            tables.pop(key, None)
            while len(tables) >= self.kinds:
                tables.pop(next(iter(tables)))
            table: Table[T] = {}
            tables[key] = table
            return table


class _Parts:
    """A NodeNames request split by what is already known of each node's part: `parts`
    holds, in the order of `known` (the names the source holds), the remembered part or
    None; `missing` the positions to evaluate. Written for speed: a request names hundreds
    of nodes, and this runs for every pod."""

    def __init__(self, names: list[str], stamps: list[object], table: Table[Any]) -> None:
        self.unknown: list[str] = []
        if None in stamps:
            self.unknown = [n for n, s in zip(names, stamps, strict=True) if s is None]
            pairs = [(n, s) for n, s in zip(names, stamps, strict=True) if s is not None]
            names, stamps = [n for n, _ in pairs], [s for _, s in pairs]
        self.known = names
        self.stamps = stamps
        found = list(map(table.get, map(id, stamps)))
        self.missing: list[int] = []
        if None in found:
            self.missing = [i for i, part in enumerate(found) if part is None]
            self.parts: list[Any] = [None if part is None else part[1] for part in found]
        else:
            self.parts = list(map(_second, found))  # type: ignore[arg-type]

    def evaluate_missing(
        self,
        policies: PolicySet,
        source: LiveNodeSource,
        args: wire.ExtenderArgs,
        now: Timestamp,
        prepared: Prepared,
        *,
        filters: bool,
    ) -> Evaluation | None:
        """The engine's answer for the nodes not found (None when all were)."""
        if not self.missing:
            return None
        names = [self.known[i] for i in self.missing]
        nodes = [source.get_node(name) for name in names]
        if None in nodes:  # deleted meanwhile: the full path says so
            raise _Changed
        return evaluate(
            policies,
            args.pod,
            nodes,  # type: ignore[arg-type]
            source,
            now,
            filters=filters,
            scores=not filters,
            cache_nodes=True,
            detail=False,
            names=names,
            prepared=prepared,
        )


_second = operator.itemgetter(1)


class _Changed(Exception):
    """A node went away between reading its stamp and its object."""


def _split(
    answers: NodeAnswers[Any],
    policies: PolicySet,
    source: LiveNodeSource | None,
    args: wire.ExtenderArgs,
    now: Timestamp,
    prepared: Prepared,
    *,
    filters: bool,
) -> tuple[_Parts, Table[Any], Evaluation | None] | None:
    """The request split into remembered and missing parts, and the engine's answer for the
    missing ones (None when none are). None when parts cannot be reused: Nodes mode, a
    source without stamps, rules the signature cannot describe, a pod whose own evaluation
    the deadline cut short, or a node that went away meanwhile."""
    names = args.node_names
    signature = prepared.signature(filters, not filters)
    if source is None or names is None or signature is None:
        return None
    if prepared.counters.timed_out:
        return None
    table = answers.table(policies, signature, source.node_count())
    parts = _Parts(names, source.node_stamps(names), table)
    try:
        sub = parts.evaluate_missing(policies, source, args, now, prepared, filters=filters)
    except _Changed:
        return None
    return parts, table, sub


def _counted(ev: Evaluation, sub: Evaluation | None, prepared: Prepared) -> None:
    """The work counted for an evaluation made of remembered parts and `sub`."""
    counters = prepared.counters
    ev.evaluations = sub.evaluations if sub is not None else counters.evaluations
    ev.errors = sub.errors if sub is not None else counters.errors
    ev.timed_out = sub.timed_out if sub is not None else counters.timed_out


def _has_error(verdict: NodeVerdict) -> bool:
    return bool(verdict.skipped) or any(
        r.error is not None for r in (*verdict.rejections, *verdict.audits)
    )


def filter_by_node(
    answers: NodeAnswers[NodeVerdict | None],
    policies: PolicySet,
    source: LiveNodeSource | None,
    args: wire.ExtenderArgs,
    now: Timestamp,
    prepared: Prepared,
) -> tuple[Evaluation, list[str]] | None:
    """The filter evaluation from each node's remembered verdict (None: passed every
    filter), evaluating only the nodes that changed, and the names the source does not
    hold; None when parts cannot be reused."""
    split = _split(answers, policies, source, args, now, prepared, filters=True)
    if split is None:
        return None
    parts, table, sub = split
    found = parts.parts
    if sub is not None:
        keep = not sub.timed_out
        for j, i in enumerate(parts.missing):
            verdict = found[i] = sub.verdicts.get(j)
            if keep and (verdict is None or not _has_error(verdict)):
                stamp = parts.stamps[i]
                table[id(stamp)] = (stamp, verdict)
    verdicts = {i: v for i, v in enumerate(found) if v is not None}
    ev = Evaluation(policies.version, prepared.matches, parts.known, verdicts)
    _counted(ev, sub, prepared)
    return ev, parts.unknown


def scores_by_node(
    answers: NodeAnswers[tuple[int, bytes]],
    policies: PolicySet,
    source: LiveNodeSource | None,
    args: wire.ExtenderArgs,
    now: Timestamp,
    prepared: Prepared,
) -> tuple[Evaluation, bytes] | None:
    """The prioritize evaluation and reply from each node's remembered final score (kept
    with its piece of the reply), when a node's score is its own: every score rule that
    applies is Clamp (MinMax depends on the other nodes of the request) and Enforce (an
    Audit rule's scores are counted per request, and a part keeps only the final score).
    None when parts cannot be reused."""
    if any(
        s.rule.normalize != "Clamp" or s.rule.mode == "Audit"  # (its scores are counted)
        for p in prepared.applied
        for s in p.scores
    ):
        return None
    split = _split(answers, policies, source, args, now, prepared, filters=False)
    if split is None:
        return None
    parts, table, sub = split
    found: list[tuple[int, bytes]] = parts.parts
    score_errors: dict[tuple[str, str], int] = {}
    if sub is not None:
        fresh = sub.final_scores()
        # a score rule that failed counts as 0 in this request: not the node's own part
        keep = not sub.timed_out and not sub.score_errors
        score_errors = dict(sub.score_errors)
        for i in parts.missing:
            name = parts.known[i]
            score = fresh.get(name, 0)
            part = found[i] = (score, wire.priority_list([(name, score)])[1:-1])
            if keep:
                stamp = parts.stamps[i]
                table[id(stamp)] = (stamp, part)
    ev = Evaluation(
        policies.version,
        prepared.matches,
        parts.known,
        scores=[score for score, _ in found],
        scored=list(range(len(parts.known))),
        score_errors=score_errors,
    )
    _counted(ev, sub, prepared)
    if parts.unknown:  # in the reply too, with 0: the names in the order asked
        scores = ev.final_scores()
        return ev, wire.priority_list([(n, scores.get(n, 0)) for n in args.names])
    return ev, b"[" + b",".join([piece for _, piece in found]) + b"]"
