"""What the engine decides: per node, the rejections, the scores and the final score."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import itemgetter
from typing import Any, Final, NamedTuple

import numpy as np
import numpy.typing as npt

from policyext.policy.masks import Mask, count, some
from policyext.policy.match import PolicyMatch
from policyext.policy.rejection import Rejection

# between the messages of the rules that rejected a node
MESSAGE_SEPARATOR: Final = "; "


class RuleScore(NamedTuple):
    policy: str
    rule: str
    weight: int
    value: float | None  # what the expression yielded (None: it failed)
    score: float  # normalised to 0..10
    audit: bool = False
    error: str | None = None


class AuditScore(NamedTuple):
    """What an Audit-mode score rule did in one request (its scores are left out of the
    final score): for metrics and the decision log."""

    nodes: int  # nodes it scored
    points: float  # the sum of their scores, 0..10 each
    best: str  # the node it scored highest (the first of equals)


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
        """What the scheduler reports for this node (FailedNodes or
        FailedAndUnresolvableNodes): the message of every Enforce rule that rejected it,
        in policy-name then rule order (the order they were found in), each once, joined
        with `; `. Stable text, so that the scheduler's event still groups nodes by it."""
        rejections = self.rejections
        if len(rejections) == 1:
            return rejections[0].message
        return MESSAGE_SEPARATOR.join(dict.fromkeys(r.message for r in rejections))


class Refused(NamedTuple):
    """Rejected nodes in node order and their messages: `messages[message[k]]` is the
    message of `names[k]` (a few distinct messages for thousands of nodes)."""

    names: list[str]
    message: npt.NDArray[np.intp]
    messages: list[str]

    @staticmethod
    def none() -> Refused:
        return Refused([], np.zeros(0, np.intp), [])

    def texts(self) -> list[str]:
        """Each node's message, in order."""
        if not self.names:
            return []
        return np.array(self.messages, object)[self.message].tolist()  # type: ignore[no-any-return]

    def as_dict(self) -> dict[str, str]:
        return dict(zip(self.names, self.texts(), strict=True))


@dataclass
class Tally:
    """What an evaluation did, by (policy, rule): for metrics and the decision log."""

    infeasible: int = 0
    # plain dicts: a Counter's making, its updates and its missing keys are Python-level
    # calls, on every filter and prioritize call
    rejections: dict[tuple[str, str], int] = field(default_factory=dict)
    audits: dict[tuple[str, str], int] = field(default_factory=dict)
    errors: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass
class Evaluation:
    """The engine's answer for one pod and a list of nodes, in the order they were given.

    A rejection most nodes share (an Enforce rule's fixed message) is kept as a mask over
    the nodes (`plain`, in rule order) rather than once per node: a filter over thousands
    of nodes then costs a few array operations. Only the nodes that something else
    happened to (an error, an audit, a message of their own, a per-rule score) have a
    verdict of their own in `own`, which already holds their plain rejections too.
    `verdicts` and `nodes` build the full picture on demand; the extender verbs read
    `rejected()`, `feasible_names()` and `final_scores()`."""

    version: str
    matches: list[PolicyMatch]
    names: list[str]
    own: dict[int, NodeVerdict] = field(default_factory=dict)  # by node index
    scores: list[int] | None = None  # final scores of `scored`, when scored
    scored: list[int] = field(default_factory=list)  # the indexes of the scored nodes, ascending
    evaluations: int = 0  # CEL evaluations performed
    errors: int = 0  # evaluation errors (all kinds)
    timed_out: bool = False  # the request deadline stopped some evaluations
    # score rules that failed, by (policy, rule): counted even without per-rule detail
    score_errors: dict[tuple[str, str], int] = field(default_factory=dict)
    plain: list[tuple[Rejection, Mask]] = field(default_factory=list)
    # what each Audit score rule did, by (policy, rule): computed even without detail
    audit_scores: dict[tuple[str, str], AuditScore] = field(default_factory=dict)
    _nodes: list[NodeVerdict] | None = None
    _tally: Tally | None = None
    _plain_union: Mask | None = None  # the union of the `plain` masks, once asked

    def verdict(self, i: int) -> NodeVerdict:
        """Node i's own verdict, made (with its plain rejections so far) when needed."""
        verdict = self.own.get(i)
        if verdict is None:
            verdict = self.own[i] = NodeVerdict(self.names[i])
            for rejection, mask in self.plain:
                if mask[i]:
                    _add_rejection(verdict, rejection)
        return verdict

    def add_plain(self, rejection: Rejection, mask: Mask) -> None:
        """`rejection` for every node of `mask` (after every rejection added before)."""
        if not some(mask):
            return
        self.plain.append((rejection, mask))
        for i, verdict in self.own.items():
            if mask[i]:
                _add_rejection(verdict, rejection)
        self._nodes = None
        self._tally = None
        self._plain_union = None

    @property
    def verdicts(self) -> dict[int, NodeVerdict]:
        """Every node that something happened to, by index."""
        if self.plain:
            for i in self._plain_mask().nonzero()[0].tolist():
                self.verdict(i)
        return self.own

    def _plain_mask(self) -> Mask:
        """The nodes some plain rejection rejected (computed once per `add_plain`: the
        reply, the tally and the log all ask; never to be written to)."""
        union = self._plain_union
        if union is None:
            masks = [mask for _, mask in self.plain]
            if not masks:
                union = np.zeros(len(self.names), np.bool_)
            else:
                union = np.logical_or.reduce(masks) if len(masks) > 1 else masks[0]
            self._plain_union = union
        return union

    def infeasible(self) -> Mask:
        """Per node: rejected by some Enforce filter."""
        mask = self._plain_mask().copy()
        for i, v in self.own.items():
            if not v.feasible:
                mask[i] = True
        return mask

    @property
    def nodes(self) -> list[NodeVerdict]:
        if self._nodes is None:
            verdicts = self.verdicts
            nodes = [verdicts.get(i) or NodeVerdict(n) for i, n in enumerate(self.names)]
            if self.scores is not None:
                for i, score in zip(self.scored, self.scores, strict=True):
                    nodes[i].score = score
            self._nodes = nodes
        return self._nodes

    def applied(self) -> list[str]:
        return [m.policy for m in self.matches if m.applies]

    def feasible(self) -> list[NodeVerdict]:
        return [v for v in self.nodes if v.feasible]

    def audit_nodes(self, limit: int) -> dict[str, list[str]]:
        """`policy/rule` -> the first `limit` nodes (in request order) that Audit rule would
        have rejected; `tally().audits` has how many there were in all."""
        out: dict[str, list[str]] = {}
        for i in sorted(self.own):  # audits are never shared rejections: always a node's own
            for r in self.own[i].audits:
                names = out.setdefault(r.rule_id, [])
                if len(names) < limit:
                    names.append(self.names[i])
        return out

    def tally(self) -> Tally:
        """Per-rule counts of rejections, Audit would-rejects and errors (computed once)."""
        if self._tally is None:
            t = self._tally = Tally()
            t.infeasible = count(self.infeasible())
            rejections, audits, errors = t.rejections, t.audits, t.errors
            for v in self.own.values():
                for r in v.rejections:
                    key = (r.policy, r.rule)
                    rejections[key] = rejections.get(key, 0) + 1
                    if r.error is not None:
                        errors[key] = errors.get(key, 0) + 1
                for r in v.audits:
                    key = (r.policy, r.rule)
                    audits[key] = audits.get(key, 0) + 1
                    if r.error is not None:
                        errors[key] = errors.get(key, 0) + 1
                for r in v.skipped:
                    key = (r.policy, r.rule)
                    errors[key] = errors.get(key, 0) + 1
            if self.plain:
                outside: Mask | None = None  # the nodes without a verdict of their own
                if self.own:
                    outside = np.ones(len(self.names), np.bool_)
                    outside[list(self.own)] = False  # their rejections are counted above
                for r, mask in self.plain:
                    counted = mask if outside is None else mask & outside
                    key = (r.policy, r.rule)
                    rejections[key] = rejections.get(key, 0) + count(counted)
            for key, n in self.score_errors.items():
                errors[key] = errors.get(key, 0) + n
        return self._tally

    def feasible_count(self) -> int:
        """Nodes that passed every filter (nodes the node source did not know excluded)."""
        return len(self.names) - self.tally().infeasible

    def feasible_names(self) -> list[str]:
        return self._feasible_names(self.infeasible())

    def _feasible_names(self, infeasible: Mask) -> list[str]:
        if not some(infeasible):
            return list(self.names)
        return list(compress(self.names, (~infeasible).tolist()))

    def filter_outcome(self) -> tuple[list[str], Refused, Refused]:
        """What a NodeNames filter reply lists: the feasible names, then `refusals()`."""
        infeasible = self.infeasible()
        return (self._feasible_names(infeasible), *self._refusals(infeasible))

    def few_refusals(self, most: int) -> tuple[list[str], dict[str, str], dict[str, str]] | None:
        """`filter_outcome()` with the refused nodes' messages by name, when no node has a
        verdict of its own, at most 8 rules rejected by plain rejections, and at most
        `most` nodes are refused: a few hundred refused nodes are written faster one by
        one than through the arrays `refusals` gives for thousands. None otherwise."""
        plain, names = self.plain, self.names
        if self.own or len(plain) > BYTE_BITS:
            return None
        if not plain:
            return list(names), {}, {}
        # each refused node's rejections as the bits of one number, from the masks' own
        # rows: after a pause, a few calls numpy has made warm already cost less than
        # stacking the masks into codes for every node
        codes: dict[int, int] = {}
        for bit, (_, mask) in enumerate(plain):
            rows = mask.nonzero()[0]
            if len(rows) > most:
                return None
            flag = 1 << bit
            for i in rows.tolist():
                codes[i] = codes.get(i, 0) | flag
            if len(codes) > most:
                return None
        feasible = [name for i, name in enumerate(names) if i not in codes]
        filed = _filed_table(plain, list(codes.values()))
        failed: dict[str, str] = {}
        away: dict[str, str] = {}
        for i in sorted(codes):
            unresolvable, text = filed[codes[i]]
            (away if unresolvable else failed)[names[i]] = text
        return feasible, failed, away

    def rejected(self) -> tuple[dict[str, str], dict[str, str]]:
        """The rejected nodes' messages by name, in node order: those a scheduler's
        preemption may help (FailedNodes), and the unresolvable ones."""
        failed, unresolvable = self.refusals()
        return failed.as_dict(), unresolvable.as_dict()

    def refusals(self) -> tuple[Refused, Refused]:
        """`rejected()` as lists in node order, each message given by its index in a short
        list of the distinct messages: a reply over thousands of nodes is then written
        without a dict or a string per node (server/wire.py)."""
        return self._refusals(self.infeasible())

    def _refusals(self, infeasible: Mask) -> tuple[Refused, Refused]:
        names = self.names
        rows = infeasible.nonzero()[0]
        if not len(rows):
            return Refused.none(), Refused.none()
        plain = self.plain
        if len(plain) > 60:  # more rules than bits: one verdict per node
            return _refusals_of((names[i], _message_of(self.verdict(i))) for i in rows.tolist())
        # the plain rejections of a node as the bits of one number: a few distinct
        # combinations, each turned into its messages once
        codes = _codes([mask for _, mask in plain], rows)
        own = self.own
        if own:  # nodes with verdicts of their own among them: node by node
            refused = list(zip(rows.tolist(), codes.tolist(), strict=True))
            table = _filed_table(plain, [code for i, code in refused if i not in own])
            return _refusals_of(
                (names[i], _message_of(own[i]) if i in own else table[code]) for i, code in refused
            )
        # the common case: each distinct combination's message, once
        combinations, which = _distinct(codes, len(plain))
        distinct = combinations.tolist()
        table = _filed_table(plain, distinct)
        filed = [table[code] for code in distinct]
        texts = [text for _, text in filed]
        away = np.array([unresolvable for unresolvable, _ in filed], np.bool_)
        if not some(away):
            return Refused(_pick(names, rows), which, texts), Refused.none()
        rows_away = away[which]
        return (
            Refused(_pick(names, rows[~rows_away]), which[~rows_away], texts),
            Refused(_pick(names, rows[rows_away]), which[rows_away], texts),
        )

    def final_scores(self) -> dict[str, int]:
        """Final scores by node name (scored nodes only)."""
        if self.scores is None:
            return {}
        return {self.names[i]: s for i, s in zip(self.scored, self.scores, strict=True)}

    def scores_in_order(self) -> list[int]:
        """The final score of every node, in node order: what a prioritize reply lists
        when every node it names was evaluated. For an evaluation of the scores alone (a
        prioritize call's, which runs no filter): it scores every node, in order."""
        scores = self.scores
        if scores is None or len(scores) != len(self.names):
            raise ValueError("scores in node order: not an evaluation that scored every node")
        return scores

    def best(self) -> NodeVerdict | None:
        """The feasible node with the highest final score (the first of equals)."""
        best: NodeVerdict | None = None
        for v in self.nodes:
            if v.feasible and v.score is not None and (best is None or v.score > best.score):  # type: ignore[operator]
                best = v
        return best


def _add_rejection(verdict: NodeVerdict, rejection: Rejection) -> None:
    verdict.rejections = [*verdict.rejections, rejection]
    verdict.feasible = False
    verdict.unresolvable = verdict.unresolvable or rejection.unresolvable


# a number per row whose bits say which masks hold it (uint8 up to 8 masks, else int64)
Codes = npt.NDArray[np.integer[Any]]


def _codes(masks: list[Mask], rows: npt.NDArray[np.intp]) -> Codes:
    """For each of the rows, the masks that hold it as the bits of one number (mask k:
    bit k). Up to 8 masks, packed in one call rather than steps per mask."""
    if 0 < len(masks) <= BYTE_BITS:
        return _bits_of(masks)[rows]
    codes = np.zeros(len(rows), np.int64)
    for bit, mask in enumerate(masks):
        codes |= mask[rows].astype(np.int64) << bit
    return codes


def _bits_of(masks: list[Mask]) -> Codes:
    """For every node, the masks (1 to 8) that hold it as the bits of one byte (mask k:
    bit k), packed in one call: after a pause it costs less than a product of the
    stacked masks with the bits, or a shift per mask (measured)."""
    packed: Codes = np.packbits(masks, axis=0, bitorder="little")[0]
    return packed


# the most masks the bits of one byte hold
BYTE_BITS: Final = 8


def _distinct(codes: Codes, bits: int) -> tuple[Codes, npt.NDArray[np.intp]]:
    """`np.unique(codes, return_inverse=True)`: with a few bits, through a table of every
    possible code rather than a sort."""
    if bits > 12:
        combinations, which = np.unique(codes, return_inverse=True)
        return combinations, which.reshape(-1)
    present = np.zeros(1 << bits, np.bool_)
    present[codes] = True
    combinations = present.nonzero()[0]
    slot = np.zeros(1 << bits, np.intp)
    slot[combinations] = np.arange(len(combinations))
    return combinations, slot[codes]


def _filed_table(
    plain: list[tuple[Rejection, Mask]], codes: list[int]
) -> dict[int, tuple[bool, str]]:
    """Where a node with just the plain rejections whose bits are set in a code goes, and
    its message, for at least these codes: each code worked out once for these
    rejections and kept for the next request that has them (the same few rules reject,
    request after request), so that a reply reads it without a call per node."""
    rejections = tuple(map(itemgetter(0), plain))
    known = _FILED.get(rejections)
    if known is None:
        if len(_FILED) >= _FILED_KEPT:
            _FILED.clear()  # (other policies, or rules that changed their messages)
        known = _FILED[rejections] = {}
    for code in set(codes).difference(known):
        known[code] = _file(rejections, code)
    return known


def _file(rejections: tuple[Rejection, ...], code: int) -> tuple[bool, str]:
    """Where a node with the rejections whose bits are set in `code` goes, and its message."""
    verdict = NodeVerdict("")
    for bit, rejection in enumerate(rejections):
        if code >> bit & 1:
            _add_rejection(verdict, rejection)
    return _message_of(verdict)


# by the plain rejections of a request, in order: where a node with those whose bits are
# set in a code goes, and its message. Kept for the server's life (bounded): a rejection
# is its rule's text, the same in every request
_FILED: dict[tuple[Rejection, ...], dict[int, tuple[bool, str]]] = {}
_FILED_KEPT: Final = 1024


def _pick(names: list[str], rows: npt.NDArray[np.intp]) -> list[str]:
    """names[i] for each i of rows, in one C call."""
    if len(rows) > 1:
        return list(itemgetter(*rows.tolist())(names))
    return [names[i] for i in rows.tolist()]


def _refusals_of(filed: Iterable[tuple[str, tuple[bool, str]]]) -> tuple[Refused, Refused]:
    """The refusals of nodes given in order with where each goes and its message."""
    found: tuple[tuple[list[str], list[int]], tuple[list[str], list[int]]] = (([], []), ([], []))
    messages: dict[str, int] = {}
    for name, (unresolvable, text) in filed:
        names, indexes = found[1 if unresolvable else 0]
        names.append(name)
        indexes.append(messages.setdefault(text, len(messages)))
    texts = list(messages)
    failed, unresolvable_ = (Refused(n, np.array(k, np.intp), texts) for n, k in found)
    return failed, unresolvable_


def _message_of(verdict: NodeVerdict) -> tuple[bool, str]:
    """Where a rejected node goes in the reply, and with which message."""
    return verdict.unresolvable, verdict.message()
