"""Evaluating a rule over all the nodes of a request at once.

A rule's residual (plan.py: what is left once its pod-side parts are constants) is mostly
made of subexpressions that read only the node, combined with the pod's constants by a
few operators: `free.cpu.compareTo(@p0) >= 0`, `@p0 || lifecycle != 'spot'`, `zone == @p1
? 10 : 0`. The node-only subexpressions are evaluated per node by the exact evaluator and
remembered per node version: they do not depend on the pod. What combines them is
evaluated once per request over whole columns (numpy arrays): a compare of a column with a
constant is one vector operation, whatever the number of nodes.

Exactness first. A column holds, for each row, a value of the column's kind or *unknown*
(an evaluation error, a value of another type, a NaN, an int too large for a double, a
quantity too close to the constant to compare in floating point, a node value that used
much of the cost budget). Every operator keeps CEL's semantics on the known rows (`false
&& <error>` is false: a decided row stays decided) and leaves the others unknown; the
unknown rows of the result are evaluated again by the exact per-node evaluator. A residual
with an operator this module does not know has no column plan at all.
"""

from __future__ import annotations

import math
import operator
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from policyext import cel
from policyext.cel import (
    LOCAL,
    CELError,
    CostLimitExceeded,
    Duration,
    Quantity,
    Timestamp,
    placeholder,
    reads,
)
from policyext.policy.masks import Mask, count, every, some
from policyext.policy.rows import NOWHERE

# ints are kept as doubles: exact up to 2**53, larger ones are unknown rows
EXACT_INT: Final = 2.0**53
# rows refreshed in a kept column one by one rather than as a column of their own
FEW_ROWS: Final = 8
# a quantity whose approximation is this close to the constant's is compared exactly
QUANTITY_TOLERANCE: Final = 1e-9
# node values that used more than this share of the cost budget together: their row is
# left to the exact evaluator (the residual's other operators charge a little more)
COST_SHARE: Final = 0.5
# a slot whose value is not kept yet (versions are never negative)
NOT_KEPT: Final = -2

_KINDS: Final = (bool, int, float, str, Quantity, dict, list, Timestamp, Duration)
_second = operator.itemgetter(1)
_third = operator.itemgetter(2)


class Unsupported(Exception):
    """The residual has a form that is not evaluated over columns."""


class Scalar:
    """A value that is the same on every row: a pod-side part or a literal. `value` is a
    CELError when the part failed."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


class Column:
    """One value per row. `kind` is the type of the known rows; ints and doubles are
    held as float64, bools as bool, everything else as objects. `objects` keeps the
    quantities themselves (ties are compared exactly)."""

    __slots__ = ("_decided", "cost", "kind", "objects", "unknown", "values", "where")

    def __init__(
        self,
        kind: type,
        values: npt.NDArray[Any],
        unknown: Mask,
        objects: npt.NDArray[Any] | None = None,
        cost: npt.NDArray[np.float64] | None = None,
        where: npt.NDArray[np.intp] | None = None,
        decided: bool | None = None,
    ) -> None:
        self.kind = kind
        self.values = values
        self.unknown = unknown
        self.objects = objects
        self.cost = cost  # node values: what each row's evaluation charged (None: nothing)
        # `objects` of a kept column are the whole table's, row i at where[i]: the few a
        # request compares exactly are read from there, not copied for every row
        self.where = where
        # whether no row is unknown, when known already (an operation whose unknown rows
        # are its operand's says so, rather than have them counted again)
        self._decided = decided

    def object_at(self, i: int) -> Any:
        assert self.objects is not None
        return self.objects[self.where[i]] if self.where is not None else self.objects[i]

    def decided(self) -> bool:
        """No row is unknown (asked once per column)."""
        if self._decided is None:
            self._decided = not some(self.unknown)
        return self._decided


Value = Scalar | Column


class Known:
    """A column every row of which is known (`decide`): its kind and its values alone.
    A bool column may also carry its false rows and whether there are any, when they came
    at no cost (a quantity test: the rows clearly on the other side), so that a filter
    is not inverted and counted again (`ColumnPlan.false_rows`)."""

    __slots__ = ("any_false", "false", "kind", "values")

    def __init__(
        self,
        kind: type,
        values: npt.NDArray[Any],
        false: Mask | None = None,
        any_false: bool = False,
    ) -> None:
        self.kind = kind
        self.values = values
        self.false = false
        self.any_false = any_false


# what `decide` gives when the kept values do not decide every row by themselves
UNDECIDED: Final = object()


class Costs:
    """What the node values of one rule charged, per row: known exactly for values
    evaluated in this request, bounded for kept ones (their arrays are read only when the
    bound says a row might come near the budget)."""

    __slots__ = ("arrays", "bound", "kept")

    def __init__(self) -> None:
        self.arrays: list[npt.NDArray[np.float64]] = []
        self.kept: list[tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]]] = []
        self.bound = 0.0  # no row charged more than this in all

    def add(self, cost: npt.NDArray[np.float64]) -> None:
        self.arrays.append(cost)
        self.bound += float(cost.max()) if len(cost) else 0.0

    def add_kept(
        self, cost: npt.NDArray[np.float64], slots: npt.NDArray[np.intp], most: float
    ) -> None:
        self.kept.append((cost, slots))
        self.bound += most

    def heavy(self, limit: float) -> Mask | None:
        """The rows that charged more than `limit`, or None when none can have."""
        if self.bound <= limit:
            return None
        total = sum((cost[slots] for cost, slots in self.kept), start=sum(self.arrays))
        heavy: Mask = np.asarray(total > limit, np.bool_)
        return heavy if some(heavy) else None


class Rows(Protocol):
    """The nodes of one request as the columns see them (the engine's run of a request).

    `placement(reads_info)`: where the request's nodes are in their source's table (the
    table, its size, each node's slot and the version kept values must have: the node's,
    or with `reads_info` its node information's too), or None when node values must not be
    kept (nodes sent in the request); `evaluate_on(i, policy, program)`: the exact
    evaluator on the request's node i and the cost it charged; `versions_of(positions,
    reads_info)`: the versions of the nodes the exact evaluator read at those positions
    (the placement's, or later ones when a node changed meanwhile); `timed_out()`: the
    request deadline has passed. `cost`: what the node values of the rule being evaluated
    charged (set here): rows where that nears the budget (or spent it) are left to the exact
    evaluator, whatever the operators say."""

    count: int
    budget: int
    cost: Costs | None

    def placement(self, reads_info: bool) -> Placement | None: ...

    def evaluate_on(self, i: int, policy: str, program: cel.Program) -> tuple[object, int]: ...

    def versions_of(self, positions: list[int], reads_info: bool) -> npt.NDArray[np.int64]: ...

    def timed_out(self) -> bool: ...


class Placement:
    """Where a request's nodes are in their source's table (see Rows.placement)."""

    __slots__ = ("changes", "size", "slots", "table", "versions", "whole")

    def __init__(
        self,
        table: object,
        size: int,
        slots: npt.NDArray[np.intp],
        versions: npt.NDArray[np.int64],
        changes: int = -1,
        whole: npt.NDArray[np.int64] | None = None,
    ) -> None:
        self.table = table
        self.size = size
        self.slots = slots
        self.versions = versions
        # the table's count of changes to these versions, read before `versions` (-1: not
        # known), and every slot's version (`size` of them; None: not known)
        self.changes = changes
        self.whole = whole


class _Kept:
    """A node value over the slots of one table: each slot's value (a Column) and the
    version it is the value of (NOT_KEPT: none yet). The table is held weakly: the values
    kept must not keep a node source, and its nodes, alive."""

    __slots__ = (
        "checked",
        "checked_at",
        "current_at",
        "known",
        "looked_at",
        "most",
        "stamps",
        "table",
        "waits",
        "whole",
        "writes",
    )

    def __init__(
        self,
        table: weakref.ref[object],
        whole: Column | None,
        stamps: npt.NDArray[np.int64],
        most: float = 0.0,
        known: bool = True,
    ) -> None:
        self.table = table
        self.whole = whole
        self.stamps = stamps
        self.most = most  # the most any row's evaluation charged (a bound: rows change)
        # no row evaluated (stamped) is unknown: then neither is any row a request gathers
        # (those are current, so evaluated), and none is counted (see _gather)
        self.known = known
        # the slots (an array a node list keeps: rows.py) whose stamps were last found or
        # made equal to their versions, and the table's count of changes then: while it
        # has not moved, those rows need no check (-1: none)
        self.checked: npt.NDArray[np.intp] | None = None
        self.checked_at = -1
        self.writes = 0  # stamps written, to tell whether another request wrote meanwhile
        # the table's count of changes when every slot it holds was found current: while it
        # has not moved, no row of any request needs a check (-1: never); the count the
        # last request saw, and the requests to wait before looking at every slot again
        self.current_at = -1
        self.looked_at = -1
        self.waits = 0

    def current_for(self, placed: Placement) -> bool:
        """Whether the request's rows are all current without looking at them: every slot
        was, and nothing changed since; or these very rows were, and nothing changed."""
        changes = placed.changes
        return (
            self.whole is not None
            and changes >= 0
            and (
                self.current_at == changes
                or (self.checked is placed.slots and self.checked_at == changes)
            )
        )

    def grown(self, size: int) -> _Kept:
        more = size - len(self.stamps)
        if more <= 0:
            return self
        stamps = np.concatenate([self.stamps, np.full(more, NOT_KEPT, np.int64)])
        whole = _extend(self.whole, size) if self.whole is not None else None
        return _Kept(self.table, whole, stamps, self.most, self.known)


class _Node:
    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        raise NotImplementedError

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        """`run` where it is plain: a Scalar, a Known column, or UNDECIDED (see
        ColumnPlan.decided). `spent` adds up the most the node values read charged."""
        return UNDECIDED


class _Param(_Node):
    def __init__(self, index: int) -> None:
        self.index = index

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        return Scalar(params[self.index])

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        return Scalar(params[self.index])


class _Literal(_Node):
    def __init__(self, value: object) -> None:
        self.value = value

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        return Scalar(self.value)

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        return Scalar(self.value)


class _Opaque(_Node):
    """An operand of `&&` / `||` of an operator the columns do not evaluate: unknown on
    every row (the exact evaluator's), and deciding nothing. The operands before it may
    still decide every row (`_Logical.decide`)."""

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        return _all_unknown(rows)


class _NodeValue(_Node):
    """A subexpression that reads only the node (its information, its variables): its
    value per node version, kept over the slots of the node source's table."""

    def __init__(self, program: cel.Program, reads_info: bool) -> None:
        self.program = program
        self.reads_info = reads_info
        self.kept: _Kept | None = None
        # requests of several threads keep values in the same arrays: each reads and
        # writes them whole under the lock (evaluating happens outside it)
        self.lock = threading.Lock()

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        placed = rows.placement(self.reads_info)
        if placed is None:
            column = self._request_column(rows, policy)
            if column.cost is not None and rows.cost is not None:
                rows.cost.add(column.cost)
            return column
        column, kept = self._kept(rows, policy, placed)
        if rows.cost is not None:
            if kept is None:  # evaluated for this request alone
                if column.cost is not None:
                    rows.cost.add(column.cost)
            elif kept.whole is not None and kept.whole.cost is not None:
                rows.cost.add_kept(kept.whole.cost, placed.slots, kept.most)
        return column

    def _kept(self, rows: Rows, policy: str, placed: Placement) -> tuple[Column, _Kept | None]:
        """The column of the request's rows, from the values kept, evaluating the rows
        whose node changed (or that were never evaluated)."""
        slots = placed.slots
        with self.lock:
            kept = self.kept
            if kept is None or kept.table() is not placed.table:
                table = weakref.ref(placed.table)
                kept = _Kept(table, None, np.full(placed.size, NOT_KEPT, np.int64))
            self.kept = kept = kept.grown(placed.size)
            changes = placed.changes
            if kept.current_for(placed):
                return _gather(kept.whole, slots, kept.known), kept  # type: ignore[arg-type]
            need = (kept.stamps[slots] != placed.versions).nonzero()[0]
            if not need.size and kept.whole is not None:
                kept.checked, kept.checked_at = slots, changes
                _look_at_every_slot(kept, placed)
                return _gather(kept.whole, slots, kept.known), kept
            writes = kept.writes
        positions = need.tolist()
        entries = [self._entry(rows, policy, i) for i in positions]
        if rows.timed_out():  # a deadline's errors are not the nodes': not kept
            return self._request_column(rows, policy), None
        versions = rows.versions_of(positions, self.reads_info)
        with self.lock:
            if self.kept is not kept:  # the table started over meanwhile: nothing kept
                return self._request_column(rows, policy), None
            whole = kept.whole
            at = slots[need]
            if whole is not None and len(entries) <= FEW_ROWS and _write_rows(whole, at, entries):
                # a node or two changed since the last request (a pod bound to each): their
                # values go straight into the kept column, not through a column of their own
                kept.most = max(kept.most, *map(_third, entries))
            else:
                fresh = _column(entries, whole.kind if whole is not None else None)
                if whole is None:
                    whole = kept.whole = _extend(_empty(fresh.kind, fresh), len(kept.stamps))
                _scatter(whole, at, fresh)
                if fresh.cost is not None and len(fresh.cost):
                    kept.most = max(kept.most, float(fresh.cost.max()))
            kept.stamps[at] = versions
            kept.known = not some(whole.unknown & (kept.stamps != NOT_KEPT))
            # every row current only if no other request wrote stamps since this one looked
            current = kept.writes == writes
            kept.checked, kept.checked_at = (slots, changes) if current else (None, -1)
            # a request that looked before a change may write an older version's value:
            # every slot is looked at again before any request is spared its check
            kept.current_at = kept.looked_at = -1
            kept.writes += 1
            return _gather(whole, slots, kept.known), kept

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        """The request's rows of this value (kept, the changed rows evaluated first, as
        `run` gives them), when every one is known."""
        placed = rows.placement(self.reads_info)
        if placed is None:
            return UNDECIDED  # (nodes sent in the request: `run` evaluates them)
        current = self.current(placed)  # the usual case first
        if current is not None:
            kind, values, most = current
            spent[0] += most
            return Known(kind, values)
        column, kept = self._kept(rows, policy, placed)
        if not column.decided():
            return UNDECIDED  # (`run` finds the same column kept, and the same unknown rows)
        if kept is not None:
            spent[0] += kept.most
        elif column.cost is not None and len(column.cost):
            spent[0] += float(column.cost.max())
        return Known(column.kind, column.values)

    def current(self, placed: Placement) -> tuple[type, npt.NDArray[Any], float] | None:
        """The kind and values of the request's rows and the most a row charged, read as
        kept, when every row is current and known; else None (`_kept` then evaluates the
        rows whose node changed)."""
        with self.lock:
            kept = self.kept
            if (
                kept is not None
                and kept.known
                and kept.table() is placed.table
                and len(kept.stamps) == placed.size
                and kept.current_for(placed)
            ):
                whole: Column = kept.whole  # type: ignore[assignment]
                return whole.kind, whole.values[placed.slots], kept.most
        return None

    def _request_column(self, rows: Rows, policy: str) -> Column:
        return _column([self._entry(rows, policy, i) for i in range(rows.count)])

    def _entry(self, rows: Rows, policy: str, i: int) -> tuple[object, float, float]:
        value, cost = rows.evaluate_on(i, policy, self.program)
        spent = isinstance(getattr(value, "error", None), CostLimitExceeded)
        approx = value.approximate_float() if type(value) is Quantity else 0.0
        return (value, approx, math.inf if spent else float(cost))


def _empty(kind: type, like: Column) -> Column:
    """A column of no rows, of the kind and layout of `like`."""
    objects = like.objects[:0] if like.objects is not None else None
    cost = np.zeros(0, np.float64)
    return Column(kind, like.values[:0], like.unknown[:0], objects, cost)


def _extend(whole: Column, size: int) -> Column:
    """The column with rows not computed yet up to `size` (unknown until they are)."""
    more = size - len(whole.values)
    if more <= 0:
        return whole
    values = np.concatenate([whole.values, np.zeros(more, whole.values.dtype)])
    unknown = np.concatenate([whole.unknown, np.ones(more, np.bool_)])
    objects = None
    if whole.objects is not None:
        objects = np.concatenate([whole.objects, np.empty(more, object)])
    cost = np.concatenate(
        [whole.cost if whole.cost is not None else np.zeros(len(whole.values)), np.zeros(more)]
    )
    return Column(whole.kind, values, unknown, objects, cost)


def _scatter(whole: Column, at: npt.NDArray[np.intp], fresh: Column) -> None:
    """Write the fresh rows into the kept column, at their slots (the objects copied)."""
    whole.values[at] = fresh.values
    whole.unknown[at] = fresh.unknown
    if whole.objects is not None and fresh.objects is not None:
        # a new array, not written in place: requests read the objects after the lock
        objects = whole.objects.copy()
        objects[at] = fresh.objects
        whole.objects = objects
    assert whole.cost is not None
    whole.cost[at] = fresh.cost if fresh.cost is not None else 0.0


def _write_rows(
    whole: Column, at: npt.NDArray[np.intp], entries: list[tuple[object, float, float]]
) -> bool:
    """`_scatter` of the column `_column` would make of these entries, for a few entries
    all of the kept column's kind (False, and nothing written, otherwise)."""
    kind = whole.kind
    if kind not in _KINDS or any(type(entry[0]) is not kind for entry in entries):
        return False
    values, unknown = whole.values, whole.unknown
    objects = whole.objects.copy() if whole.objects is not None else None  # see _scatter
    assert whole.cost is not None
    for slot, (value, approx, cost) in zip(at.tolist(), entries, strict=True):
        if kind is Quantity:
            values[slot] = approx
            unknown[slot] = False
        elif kind is int:
            values[slot] = value
            unknown[slot] = abs(value) > EXACT_INT  # type: ignore[arg-type]
        elif kind is float:
            values[slot] = value
            unknown[slot] = math.isnan(value)  # type: ignore[arg-type]
        else:
            values[slot] = value
            unknown[slot] = False
        if objects is not None:
            objects[slot] = value
        whole.cost[slot] = cost
    whole.objects = objects
    return True


_first = operator.itemgetter(0)


def _column(entries: list[tuple[object, float, float]], kind: type | None = None) -> Column:
    """A column of node values; `kind`: the type of the known rows (else the most common)."""
    values = list(map(_first, entries))
    n = len(values)
    costs = np.fromiter(map(_third, entries), np.float64, n)
    cost = costs if some(costs) else None
    kinds = Counter(map(type, values))
    if kind is None:
        kind = max(kinds, key=kinds.__getitem__) if kinds else bool
    if kind not in _KINDS:
        return Column(kind, np.empty(n, object), np.ones(n, np.bool_), cost=cost)
    mixed = len(kinds) > 1 or (n > 0 and kind not in kinds)
    unknown = np.zeros(n, np.bool_)
    if mixed:
        unknown = unknown | np.fromiter((type(v) is not kind for v in values), np.bool_, n)
    if kind is bool or kind is int or kind is float:
        fill: object = False if kind is bool else 0.0
        clean = [v if type(v) is kind else fill for v in values] if mixed else values
        if kind is bool:
            return Column(bool, np.array(clean, np.bool_), unknown, cost=cost)
        array = np.array(clean, np.float64)
        if kind is int:
            # (>=: an int past 2^53 may have been rounded to it)
            unknown = unknown | (np.abs(array) >= EXACT_INT)
        else:
            unknown = unknown | np.isnan(array)
        return Column(kind, array, unknown, cost=cost)
    objects = np.empty(n, object)
    if mixed:  # the other rows hold a value of the kind too: operators see one type
        filler = next((v for v in values if type(v) is kind), None)
        objects[:] = [v if type(v) is kind else filler for v in values]
    else:
        objects[:] = values
    if kind is Quantity:
        approx = np.fromiter(map(_second, entries), np.float64, n)
        return Column(Quantity, approx, unknown, objects, cost)
    return Column(kind, objects, unknown, cost=cost)


# requests to wait, after every slot of a table was looked at and some was not current,
# before looking again (a node no request names is never evaluated)
LOOK_AGAIN_AFTER: Final = 64


def _look_at_every_slot(kept: _Kept, placed: Placement) -> None:
    """Once a table has not changed between two requests, whether every slot it holds is
    current (at most once every LOOK_AGAIN_AFTER requests while some is not): then later
    requests check no row until it changes. Under the value's lock."""
    changes, versions = placed.changes, placed.whole
    if versions is None or changes < 0 or kept.current_at == changes:
        return
    if len(versions) != len(kept.stamps):  # (another request's, of a grown table, grew them)
        return
    if kept.looked_at != changes:  # changed since the last request: not settled yet
        kept.looked_at, kept.waits = changes, 0
        return
    kept.waits -= 1
    if kept.waits > 0:
        return
    # (a writer's change after the count was read makes a slot differ, never agree)
    if every((kept.stamps == versions) | (versions == NOWHERE)):
        kept.current_at = changes
    else:
        kept.waits = LOOK_AGAIN_AFTER


def _gather(whole: Column, index: npt.NDArray[np.intp], known: bool) -> Column:
    """The rows of a kept column (their costs are read apart, when needed: Costs). `known`:
    no row of it is unknown (the usual case, found once after each write: _Kept.known);
    its rows are then known without gathering and counting their unknown mask: numpy's
    machinery is what a pause between requests evicts, and each call then costs
    microseconds."""
    values = whole.values[index]
    if known:
        return Column(whole.kind, values, _known(len(index)), whole.objects, None, index, True)
    return Column(whole.kind, values, whole.unknown[index], whole.objects, None, index)


def _known(n: int) -> Mask:
    """A mask of n rows none of which is unknown, shared (read-only: never written)."""
    mask = _KNOWN.get(n)
    if mask is None:
        mask = np.zeros(n, np.bool_)
        mask.flags.writeable = False
        if len(_KNOWN) >= _KNOWN_KEPT:
            _KNOWN.clear()
        _KNOWN[n] = mask
    return mask


# the shared masks of `_known`, by length (requests name a few counts of nodes)
_KNOWN: dict[int, Mask] = {}
_KNOWN_KEPT: Final = 64


def _all_unknown(rows: Rows) -> Column:
    n = rows.count
    return Column(bool, np.zeros(n, np.bool_), np.ones(n, np.bool_))


def _truth(value: Value, n: int) -> tuple[Mask, Mask, bool]:
    """The rows that are definitely true, and definitely false; and whether that is every
    row."""
    if isinstance(value, Scalar):
        v = value.value
        return np.full(n, v is True), np.full(n, v is False), v is True or v is False
    if value.kind is not bool:
        return np.zeros(n, np.bool_), np.zeros(n, np.bool_), False
    if value.decided():
        return value.values, ~value.values, True
    known = ~value.unknown
    return known & value.values, known & ~value.values, False


def _bools(true: Mask, false: Mask, decided: bool) -> Column:
    """The bool column of rows definitely true and definitely false (`decided`: every
    row is one or the other)."""
    if decided:
        return Column(bool, true, _known(len(true)), decided=True)
    return Column(bool, true, ~(true | false))


class _Logical(_Node):
    """`&&` / `||`: decided by any operand that decides it, whatever the others are."""

    def __init__(self, is_and: bool, operands: list[_Node]) -> None:
        self.is_and = is_and
        self.operands = operands

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        n = rows.count
        decisive = not self.is_and  # `true` decides ||, `false` decides &&
        columns: list[Value] = []
        for operand in self.operands:
            value = operand.run(rows, policy, params)
            if isinstance(value, Scalar):
                if value.value is decisive:
                    return Scalar(decisive)  # whatever the others are, errors included
                if value.value is (not decisive):
                    continue  # neutral: leaves the others to decide
            columns.append(value)
        if not columns:
            return Scalar(not decisive)
        true, false, decided = _truth(columns[0], n)
        for value in columns[1:]:
            t, f, d = _truth(value, n)
            if self.is_and:
                true, false = true & t, false | f
            else:
                true, false = true | t, false & f
            decided = decided and d
        return _bools(true, false, decided)

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        decisive = not self.is_and
        values: npt.NDArray[np.bool_] | None = None
        last = self.operands[-1]
        for operand in self.operands:
            value = operand.decide(rows, policy, params, spent)
            if type(value) is Scalar:
                if value.value is decisive:
                    return Scalar(decisive)
                if value.value is (not decisive):
                    continue
                return UNDECIDED  # (an error: the rows the others decide are run's to find)
            if type(value) is not Known or value.kind is not bool:
                return UNDECIDED
            if values is None:
                values = value.values
            else:
                values = values & value.values if self.is_and else values | value.values
            if operand is not last and (values.all() if decisive else not values.any()):
                # every row decided by the operands so far: the exact evaluator, left to
                # right, stops there on each row too (the others are never evaluated, so
                # nothing they would raise, a spent budget included, can show)
                return Scalar(decisive)
        return Scalar(not decisive) if values is None else Known(bool, values)


class _Not(_Node):
    def __init__(self, operand: _Node) -> None:
        self.operand = operand

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        true, false, decided = _truth(self.operand.run(rows, policy, params), rows.count)
        return _bools(false, true, decided)

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        value = self.operand.decide(rows, policy, params, spent)
        if type(value) is Scalar:  # a column, as `run` gives: `&&` and `||` do not stop at it
            v = value.value
            return Known(bool, np.full(rows.count, not v)) if type(v) is bool else UNDECIDED
        if type(value) is not Known or value.kind is not bool:
            return UNDECIDED
        return Known(bool, ~value.values)


class _Conditional(_Node):
    def __init__(self, cond: _Node, then: _Node, otherwise: _Node) -> None:
        self.cond = cond
        self.then = then
        self.otherwise = otherwise

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        n = rows.count
        true, false, _ = _truth(self.cond.run(rows, policy, params), n)
        a = self.then.run(rows, policy, params)
        b = self.otherwise.run(rows, policy, params)
        ka, va, ua = _as_column_parts(a, n)
        kb, vb, ub = _as_column_parts(b, n)
        if ka is None or ka is not kb or ka is Quantity:
            return _all_unknown(rows)
        values = np.where(true, va, vb)
        unknown = ~(true | false) | (true & ua) | (false & ub)
        return Column(ka, values, unknown)

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        cond = self.cond.decide(rows, policy, params, spent)
        if cond is UNDECIDED:
            return UNDECIDED
        if type(cond) is Scalar:  # (`run` broadcasts it)
            if type(cond.value) is not bool:
                return UNDECIDED  # (an error: every row `run`'s)
            true: Mask = np.full(rows.count, cond.value)
        elif type(cond) is Known and cond.kind is bool:
            true = cond.values
        else:
            return UNDECIDED
        parts = _both_decided(self.then, self.otherwise, rows, policy, params, spent)
        if parts is None:
            return UNDECIDED
        (ka, va), (kb, vb) = parts
        if ka is None or ka is not kb or ka is Quantity:
            return UNDECIDED
        return Known(ka, np.where(true, va, vb))


def _as_column_parts(value: Value, n: int) -> tuple[type | None, Any, Mask]:
    """(kind, values, unknown) of a value, a scalar broadcast; kind None: not usable."""
    if isinstance(value, Column):
        return value.kind, value.values, value.unknown
    kind, v = _scalar_parts(value.value)
    return kind, v, (np.zeros if kind is not None else np.ones)(n, np.bool_)


def _both_decided(
    a: _Node, b: _Node, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
) -> tuple[tuple[type | None, Any], tuple[type | None, Any]] | None:
    """The (kind, values) of two operands (`_decided_parts`), when `decide` gives both."""
    first = a.decide(rows, policy, params, spent)
    second = b.decide(rows, policy, params, spent)
    if first is UNDECIDED or second is UNDECIDED:
        return None
    return _decided_parts(first), _decided_parts(second)


def _decided_parts(value: object) -> tuple[type | None, Any]:
    """(kind, values) of what `decide` gave (a Known column, or a Scalar as
    `_as_column_parts` takes it); kind None: not usable."""
    if type(value) is Known:
        return value.kind, value.values
    return _scalar_parts(value.value)  # type: ignore[attr-defined]


def _scalar_parts(v: object) -> tuple[type | None, Any]:
    """A constant as a column's kind and value (ints as doubles, exact up to 2^53);
    kind None for one no column operator takes (a NaN, a larger int, a list...)."""
    t = type(v)
    if t is int and abs(v) <= EXACT_INT:  # type: ignore[arg-type]
        return int, float(v)  # type: ignore[arg-type]
    if t is float and not math.isnan(v):  # type: ignore[arg-type]
        return float, v
    if t is bool or t is str or t is Timestamp or t is Duration:
        return t, v
    return None, None


def _either_unknown(left: Value, right: Value, ua: Mask, ub: Mask) -> Mask:
    """The rows unknown on either side of a binary operator; a usable constant side is
    known everywhere (the caller has checked it is usable)."""
    if isinstance(right, Scalar):
        return ua
    if isinstance(left, Scalar):
        return ub
    return ua | ub


def _either_decided(left: Value, right: Value) -> bool | None:
    """Whether no row is unknown on either side (`_either_unknown`), when known already."""
    if isinstance(right, Scalar):
        return left._decided if isinstance(left, Column) else None
    if isinstance(left, Scalar):
        return right._decided
    return True if left._decided and right._decided else None


_NUMERIC: Final = (int, float)
# maps, lists and quantities are compared by the exact evaluator
_COMPARABLE: Final = (bool, int, float, str, Timestamp, Duration)
# ordered by `<` ... (strings and bools too, but the exact evaluator orders those)
_ORDERED: Final = (int, float, Timestamp, Duration)


class _Compare(_Node):
    """`==`, `!=`, `<`, `<=`, `>`, `>=` between a column and a constant (or two columns)
    of the same kind; numbers across int and double as CEL orders them (as doubles)."""

    FUNCTIONS: Final = {
        "_==_": operator.eq,
        "_!=_": operator.ne,
        "_<_": operator.lt,
        "_<=_": operator.le,
        "_>_": operator.gt,
        "_>=_": operator.ge,
    }

    def __init__(self, function: str, left: _Node, right: _Node) -> None:
        self.function = function
        self.op = self.FUNCTIONS[function]
        self.equality = function in ("_==_", "_!=_")
        self.left = left
        self.right = right

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        n = rows.count
        left = self.left.run(rows, policy, params)
        right = self.right.run(rows, policy, params)
        ka, va, ua = _as_column_parts(left, n)
        kb, vb, ub = _as_column_parts(right, n)
        values = self._compared(ka, va, kb, vb, n)
        if values is None:
            return _all_unknown(rows)
        unknown = _either_unknown(left, right, ua, ub)
        return Column(bool, values, unknown, decided=_either_decided(left, right))

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        parts = _both_decided(self.left, self.right, rows, policy, params, spent)
        if parts is None:
            return UNDECIDED
        (ka, va), (kb, vb) = parts
        values = self._compared(ka, va, kb, vb, rows.count)
        return UNDECIDED if values is None else Known(bool, values)

    def _compared(self, ka: type | None, va: Any, kb: type | None, vb: Any, n: int) -> Mask | None:
        """The comparison per row of two sides' values of these kinds (a constant stands
        for every row), or None when the columns leave it to the exact evaluator."""
        if ka is None or kb is None:
            return None
        if ka not in _COMPARABLE or kb not in _COMPARABLE:
            return None
        if ka is not kb:
            # ints and doubles are ordered together; equality across types is left to
            # the exact evaluator
            if self.equality or ka not in _NUMERIC or kb not in _NUMERIC:
                return None
        elif ka not in _ORDERED and not self.equality:
            return None  # strings, bools: ordered by the exact evaluator
        op = self.op
        if not isinstance(va, np.ndarray):  # the column on the left: numpy's operators
            op, va, vb = _REFLECTED[op], vb, va
        try:
            values: Mask = np.asarray(op(va, vb), np.bool_)
        except (TypeError, AttributeError):  # no row of the kind to stand in for the others
            return None
        if values.shape != (n,):
            values = np.broadcast_to(values, (n,)).copy()
        return values


_REFLECTED: Final = {
    operator.eq: operator.eq,
    operator.ne: operator.ne,
    operator.lt: operator.gt,
    operator.le: operator.ge,
    operator.gt: operator.lt,
    operator.ge: operator.le,
}


# whether an order test is true when the quantity is less than, equal to and greater than
# the constant
Admits = tuple[bool, bool, bool]
_TESTS: Final[dict[str, Admits]] = {
    "isGreaterThan": (False, False, True),
    "isLessThan": (True, False, False),
}
# an approximation further than this share of the constant from it is on that side of it
# whatever the quantities' exact values (twice the tolerance `compareTo`'s order allows)
_TEST_BAND: Final = 2 * QUANTITY_TOLERANCE


class _QuantityCompare(_Node):
    """`q.compareTo(c)` with a column of quantities on one side and a constant on the
    other; or a test of that order (`q.isGreaterThan(c)`, `q.isLessThan(c)`, and
    `q.compareTo(c) >= 0` and its kin, an int literal compared with the order: `admits`),
    whose bool column is read from two masks (the rows clearly less, clearly greater)
    rather than from an order column compared again: the fits checks of most policies."""

    def __init__(
        self, function: str, target: _Node, arg: _Node, admits: Admits | None = None
    ) -> None:
        self.function = function
        self.target = target
        self.arg = arg
        self.admits = _TESTS.get(function, admits)

    def tested(self, admits: Admits) -> _QuantityCompare:
        """This `compareTo` as a test of its order."""
        return _QuantityCompare(self.function, self.target, self.arg, admits)

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        target = self.target.run(rows, policy, params)
        arg = self.arg.run(rows, policy, params)
        sign = 1
        if isinstance(target, Scalar) and isinstance(arg, Column):
            target, arg, sign = arg, target, -1
        if not (
            isinstance(target, Column)
            and target.kind is Quantity
            and isinstance(arg, Scalar)
            and type(arg.value) is Quantity
        ):
            return _all_unknown(rows)
        constant: Quantity = arg.value
        c = constant.approximate_float()
        if self.admits is not None:
            # compared from the constant's side when it was the target: the orders swap
            admits = self.admits if sign > 0 else self.admits[::-1]
            return _order_test(target, constant, c, admits)
        a = target.values
        if _scalable(c):
            # decided where the approximations are too far apart to be wrong about the
            # order (never for an infinite or NaN row: inf > inf is false)
            diff = a - c
            margin = np.abs(a)
            np.maximum(margin, abs(c), out=margin)
            margin *= QUANTITY_TOLERANCE
            undecided = ~(np.abs(diff) > margin)
            order = np.sign(diff)
        else:
            undecided = np.ones(len(a), np.bool_)
            order = np.zeros(len(a), np.float64)
        if some(undecided):
            order[undecided] = 0.0
            close = undecided if target.decided() else undecided & ~target.unknown
            for i in close.nonzero()[0].tolist():
                order[i] = float(target.object_at(i).compare(constant))
        if sign < 0:
            order = -order  # compared from the constant's side when it was the target
        return Column(int, order, target.unknown, decided=target._decided)

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        """A test of the order (`admits`) whose every row is clearly on one side of the
        constant; any row in the band, NaN, or a constant too near 0 is `run`'s."""
        admits = self.admits
        if admits is None:
            return UNDECIDED  # (an order column: `run`'s)
        target = self.target.decide(rows, policy, params, spent)
        arg = self.arg.decide(rows, policy, params, spent)
        if target is UNDECIDED or arg is UNDECIDED:
            return UNDECIDED
        if type(target) is Scalar and type(arg) is Known:
            target, arg, admits = arg, target, admits[::-1]  # the orders swap
        if not (
            type(target) is Known
            and target.kind is Quantity
            and type(arg) is Scalar
            and type(arg.value) is Quantity
        ):
            return UNDECIDED
        clear = _clear_sides(target.values, arg.value.approximate_float())
        if clear is None:
            return UNDECIDED
        # every row clearly on one side: the test's false rows are those of the sides it
        # does not admit (no row is on the equal side)
        less, greater, fewer, more = clear
        refused = (not admits[0], not admits[1], not admits[2])
        false = _admitted(less, greater, refused)
        any_false = bool((fewer and refused[0]) or (more and refused[2]))
        return Known(bool, _admitted(less, greater, admits), false, any_false)


def _scalable(c: float) -> bool:
    """Whether rows can be told apart from a constant approximated as `c` by a margin of
    its size (a constant this close to 0 but not 0 is no resource amount: compared exactly)."""
    return math.isfinite(c) and (c == 0.0 or abs(c) > 1e-280)


def _order_test(target: Column, constant: Quantity, c: float, admits: Admits) -> Column:
    """Per row of a column of quantities, whether its order against the constant
    (approximated as `c`) is one the test admits. A row whose approximation is clearly on
    one side of `c` is decided by it; the others (within the band, NaN, or every row of a
    constant too close to 0 to scale) by comparing the quantities exactly."""
    a = target.values
    if _scalable(c):
        less, greater = _sides(a, c)
    else:
        less = greater = np.zeros(len(a), np.bool_)
    values = _admitted(less, greater, admits)  # (a fresh mask: written below)
    decided = less | greater
    if not every(decided):
        close = ~decided if target.decided() else ~(decided | target.unknown)
        for i in close.nonzero()[0].tolist():
            values[i] = admits[target.object_at(i).compare(constant) + 1]
    return Column(bool, values, target.unknown, decided=target._decided)


def _clear_sides(a: npt.NDArray[np.float64], c: float) -> tuple[Mask, Mask, int, int] | None:
    """The rows of approximations `a` clearly less than the constant approximated as `c`,
    those clearly greater, and how many of each, when every row is clearly on one side;
    None when a row is in the band or NaN, or the constant too near 0 to tell apart."""
    if not _scalable(c):
        return None
    less, greater = _sides(a, c)
    fewer, more = count(less), count(greater)
    if fewer + more != len(less):
        return None
    return less, greater, fewer, more


def _sides(a: npt.NDArray[np.float64], c: float) -> tuple[Mask, Mask]:
    """The rows of approximations `a` clearly less than the constant approximated as `c`,
    and those clearly greater (`c` one `_scalable` says can be told apart)."""
    low, high = c * (1.0 - _TEST_BAND), c * (1.0 + _TEST_BAND)
    if c < 0.0:
        low, high = high, low
    return a < low, a > high  # (an infinite row is clearly on its side)


def _admitted(less: Mask, greater: Mask, admits: Admits) -> Mask:
    """The rows clearly on a side the test admits (the equal side is never clear)."""
    if admits[0] and admits[2]:
        return less | greater
    if admits[0] or admits[2]:
        return less if admits[0] else greater
    return np.zeros(len(less), np.bool_)


class _Arithmetic(_Node):
    """`+ - * /` over doubles (IEEE arithmetic, as Python's floats)."""

    FUNCTIONS: Final = {
        "_+_": operator.add,
        "_-_": operator.sub,
        "_*_": operator.mul,
        "_/_": operator.truediv,
    }

    def __init__(self, function: str, left: _Node, right: _Node) -> None:
        self.op = self.FUNCTIONS[function]
        self.divide = function == "_/_"
        self.left = left
        self.right = right

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        n = rows.count
        left = self.left.run(rows, policy, params)
        right = self.right.run(rows, policy, params)
        ka, va, ua = _as_column_parts(left, n)
        kb, vb, ub = _as_column_parts(right, n)
        if ka is not float or kb is not float:
            return _all_unknown(rows)
        unknown = _either_unknown(left, right, ua, ub)
        if self.divide:
            unknown = unknown | (np.asarray(vb) == 0.0)  # the exact evaluator's rule
        with np.errstate(all="ignore"):
            values = np.asarray(self.op(va, vb), np.float64)
        if values.shape != (n,):
            values = np.broadcast_to(values, (n,)).copy()
        return Column(float, values, unknown | np.isnan(values))


class _In(_Node):
    """`s in <node list or map>` and `<node string> in <constant list or map>`, for
    strings (a string equals only a string: Python's `in` is CEL's there)."""

    def __init__(self, element: _Node, container: _Node) -> None:
        self.element = element
        self.container = container

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        n = rows.count
        element = self.element.run(rows, policy, params)
        container = self.container.run(rows, policy, params)
        if (
            isinstance(element, Scalar)
            and type(element.value) is str
            and isinstance(container, Column)
            and container.kind in (dict, list)
        ):
            item = element.value
            pairs = zip(container.values, container.unknown.tolist(), strict=True)
            found = np.fromiter((not u and item in v for v, u in pairs), np.bool_, n)
            return Column(bool, found, container.unknown)
        if (
            isinstance(element, Column)
            and element.kind is str
            and isinstance(container, Scalar)
            and type(container.value) in (dict, list)
        ):
            members = {m for m in container.value if type(m) is str}  # type: ignore[attr-defined]
            found = np.fromiter((v in members for v in element.values), np.bool_, n)
            return Column(bool, found, element.unknown)
        return _all_unknown(rows)


_LOGICAL: Final = {"_&&_": True, "_||_": False}
_QUANTITY_METHODS: Final = frozenset(("compareTo", "isGreaterThan", "isLessThan"))


class ColumnPlan:
    """A residual as column operations. `run` gives a Column (or a Scalar) whose unknown
    rows the caller evaluates exactly. A `partial` plan has operands of `&&` / `||` the
    columns do not evaluate (`_Opaque`): it answers only where the operands before them
    decide every row (`false_rows`, `decided`), and `run` would leave the rest to the
    exact evaluator row by row, which the caller does better with its results kept per
    node version (engine.py)."""

    def __init__(
        self, root: _Node, node_values: list[_NodeValue], parts: int, partial: bool
    ) -> None:
        self.root = root
        self.node_values = node_values
        self.partial = partial
        # a filter's usual shapes, answered in one step (`false_rows`); `parts`: the
        # pod-side parts the residual has
        self._step = _one_step(root, parts)

    def false_rows(self, rows: Rows, policy: str, params: tuple[object, ...]) -> object:
        """The rows for which the residual is `false` (a mask; None when none), when the
        values kept decide every row by themselves (`decided`); else UNDECIDED. A filter
        of the usual shapes (a node value; a pod-side part `&&` or `||` a node value; a
        quantity test of a node value against a pod-side part) is answered in one step,
        without the walk of the operators `decided` makes."""
        step = self._step
        if step is not None:
            answer = step(rows, params)
            if answer is not UNDECIDED:
                return answer
        value = self.decided(rows, policy, params)
        if type(value) is Scalar:
            if value.value is True:
                return None
            return np.ones(rows.count, np.bool_) if value.value is False else UNDECIDED
        if type(value) is not Known or value.kind is not bool:
            return UNDECIDED
        if value.false is not None:  # (known already: a quantity test's other side)
            return value.false if value.any_false else None
        false: Mask = ~value.values
        return false if some(false) else None

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Column | Scalar:
        """The residual's value per row; rows whose value is not known are `unknown`
        (a Scalar's value is the same on every row)."""
        for p in params:
            if isinstance(p, CostLimitExceeded):
                return _all_unknown(rows)  # a spent budget is never absorbed by && or ||
        costs = rows.cost = Costs()
        result = self.root.run(rows, policy, params)
        rows.cost = None
        heavy = costs.heavy(rows.budget * COST_SHARE)
        if heavy is not None:
            if isinstance(result, Scalar):
                result = _broadcast(result, rows.count)
            unknown = result.unknown | heavy
            result = Column(result.kind, result.values, unknown, result.objects, None, result.where)
        return result

    def decided(self, rows: Rows, policy: str, params: tuple[object, ...]) -> object:
        """What `run` gives (a Scalar, or a Known column: every row known), when the values
        kept for the request's rows decide every one by themselves: each current, none
        unknown, none near the cost budget, and every operator on the way one whose rows
        all come out known (`&&`, `||`, `!`, `? :`, a comparison the columns make, a
        quantity clearly on one side of a constant). That is a new pod's filter or score
        over nodes seen before, answered without the unknown masks, the costs per row and
        the columns `run` carries for the other cases. UNDECIDED otherwise: `run` then
        says."""
        for p in params:
            if isinstance(p, CostLimitExceeded):
                return UNDECIDED
        spent = [0.0]
        value = self.root.decide(rows, policy, params, spent)
        if value is UNDECIDED or spent[0] > rows.budget * COST_SHARE:
            return UNDECIDED  # (some row may be near the budget: `run` looks at each)
        return value


# a filter answered in one step: (rows, params) -> its false rows (None: none), or
# UNDECIDED when `decided` is to say
Step = Callable[[Rows, tuple[object, ...]], object]


def _one_step(root: _Node, parts: int) -> Step | None:
    """The one step of a residual of a usual shape that reads every one of its `parts`
    pod-side parts, or None. Each step answers only what `decided` would answer the same
    way without evaluating anything (its node value current and known for every row, none
    near the budget) and leaves every other case to it."""
    if isinstance(root, _NodeValue) and parts == 0:
        return _value_step(root)
    if isinstance(root, _Logical) and len(root.operands) == 2 and parts == 1:
        param, value = root.operands
        if isinstance(param, _NodeValue):
            param, value = value, param
        if isinstance(param, _Param) and isinstance(value, _NodeValue):
            return _logical_step(root.is_and, param.index, value)
    if isinstance(root, _QuantityCompare) and root.admits is not None and parts == 1:
        target, arg, admits = root.target, root.arg, root.admits
        if isinstance(target, _Param):
            target, arg, admits = arg, target, admits[::-1]  # the orders swap
        if isinstance(target, _NodeValue) and isinstance(arg, _Param):
            return _test_step(target, arg.index, admits)
    return None


def _current_values(value: _NodeValue, rows: Rows, kind: type) -> npt.NDArray[Any] | None:
    """The request's rows of a node value of this kind, as `decided` reads them without
    evaluating (every row current and known, the most a row charged within the budget's
    share); None otherwise."""
    placed = rows.placement(value.reads_info)
    current = value.current(placed) if placed is not None else None
    if current is None:
        return None
    found, values, most = current
    return values if found is kind and most <= rows.budget * COST_SHARE else None


def _value_step(value: _NodeValue) -> Step:
    def step(rows: Rows, params: tuple[object, ...]) -> object:
        values = _current_values(value, rows, bool)
        if values is None:
            return UNDECIDED
        false: Mask = ~values
        return false if some(false) else None

    return step


def _logical_step(is_and: bool, index: int, value: _NodeValue) -> Step:
    decisive = not is_and  # `true` decides ||, `false` decides &&

    def step(rows: Rows, params: tuple[object, ...]) -> object:
        p = params[index]
        if type(p) is not bool:
            return UNDECIDED  # (an error: `decided` says)
        values = _current_values(value, rows, bool)
        if values is None:
            return UNDECIDED
        if p is decisive:
            return None if decisive else np.ones(rows.count, np.bool_)
        false: Mask = ~values  # the node value alone decides
        return false if some(false) else None

    return step


def _test_step(target: _NodeValue, index: int, admits: Admits) -> Step:
    refused = (not admits[0], not admits[1], not admits[2])

    def step(rows: Rows, params: tuple[object, ...]) -> object:
        constant = params[index]
        if type(constant) is not Quantity:
            return UNDECIDED
        values = _current_values(target, rows, Quantity)
        if values is None:
            return UNDECIDED
        clear = _clear_sides(values, constant.approximate_float())
        if clear is None:
            return UNDECIDED
        # every row clearly on one side: the false rows are those of the sides refused
        less, greater, fewer, more = clear
        if (fewer and refused[0]) or (more and refused[2]):
            return _admitted(less, greater, refused)
        return None

    return step


def _broadcast(value: Scalar, n: int) -> Column:
    kind, v, unknown = _as_column_parts(value, n)
    if kind is None:
        return Column(bool, np.zeros(n, np.bool_), unknown)
    dtype = np.bool_ if kind is bool else np.float64 if kind in _NUMERIC else object
    return Column(kind, np.full(n, v, dtype), unknown)


def make_column_plan(
    residual: cel.ast.Node,
    parts: int,
    source: str,
    declarations: dict[str, cel.Type],
    node_only: Callable[[str], bool],
    limits: cel.Limits | None,
    pods_variables: frozenset[str] | None = None,
) -> ColumnPlan | None:
    """The column plan of a residual whose placeholders `@p0`.. `@p<parts-1>` are the
    pod-side parts; None when some operator is not one this module evaluates, but in an
    operand of `&&` / `||` (then a partial plan: see ColumnPlan). `pods_variables`: the
    node-only variables whose value may change with the node's pods (None: any variable
    may)."""
    placeholders = {placeholder(i): i for i in range(parts)}
    node_values: list[_NodeValue] = []
    partial = False

    def operand(node: cel.ast.Node) -> _Node:
        """An operand of `&&` / `||`; `_Opaque` for one of an operator not evaluated here."""
        nonlocal partial
        values = len(node_values)
        try:
            return build(node)
        except Unsupported:
            del node_values[values:]  # (of its own subexpressions: never read)
            partial = True
            return _Opaque()

    def build(node: cel.ast.Node) -> _Node:
        node_reads = reads(node)
        if isinstance(node, cel.ast.Literal):
            return _Literal(node.value)
        if isinstance(node, cel.ast.Ident) and node.name in placeholders:
            return _Param(placeholders[node.name])
        if node_reads and LOCAL not in node_reads and all(node_only(r) for r in node_reads):
            try:
                program = cel.compile_tree(node, source, declarations, limits=limits)
            except CELError as e:
                raise Unsupported(str(e)) from None
            value = _NodeValue(program, reads_pods(node, pods_variables))
            node_values.append(value)
            return value
        if not isinstance(node, cel.ast.Call):
            raise Unsupported(type(node).__name__)
        f, args = node.function, node.args
        if f in _LOGICAL:
            operands: list[cel.ast.Node] = []
            _flatten(node, f, operands)
            return _Logical(_LOGICAL[f], [operand(o) for o in operands])
        if f == "!_" and len(args) == 1:
            return _Not(build(args[0]))
        if f == "_?_:_" and len(args) == 3:
            return _Conditional(build(args[0]), build(args[1]), build(args[2]))
        if f in _Compare.FUNCTIONS and len(args) == 2 and node.target is None:
            left, right = build(args[0]), build(args[1])
            return _order_test_of(f, left, right) or _Compare(f, left, right)
        if f in _Arithmetic.FUNCTIONS and len(args) == 2 and node.target is None:
            return _Arithmetic(f, build(args[0]), build(args[1]))
        if f == "@in" and len(args) == 2:
            return _In(build(args[0]), build(args[1]))
        if f in _QUANTITY_METHODS and node.target is not None and len(args) == 1:
            return _QuantityCompare(f, build(node.target), build(args[0]))
        raise Unsupported(f)

    try:
        root = build(residual)
    except Unsupported:
        return None
    if not node_values:
        return None
    return ColumnPlan(root, node_values, parts, partial)


# the fields of nodeInfo that it holds of the Node object alone (resources.node_info_of):
# the same in every version of the node information of one version of the Node
_NODE_OWN_INFO: Final = frozenset({"allocatable"})
_BY_FIELD: Final = frozenset({"variables", "nodeInfo"})


def reads_pods(node: cel.ast.Node, pods_variables: AbstractSet[str] | None) -> bool:
    """Whether a node-only subexpression may change when a pod is bound to its node or
    leaves it, not only with a new version of the Node (see `fields_read_pods`). A value
    that reads only the Node is kept by the Node's version, and stays current while pods
    come and go (a fits test on `nodeInfo.allocatable` is not evaluated again on every
    binding)."""
    fields = (read.partition(".")[::2] for read in reads(node, by_field=_BY_FIELD))
    return fields_read_pods(fields, pods_variables)


def fields_read_pods(
    fields: Iterable[tuple[str, str]], pods_variables: AbstractSet[str] | None
) -> bool:
    """Whether reads, as (input, field) pairs (field "": the input read whole), may change
    with the node's pods: nodeInfo other than what it holds of the Node alone, or a
    variable that may (`pods_variables`; None: any variable)."""
    for root, field in fields:
        if root == "nodeInfo" and field not in _NODE_OWN_INFO:
            return True
        if root == "variables" and (pods_variables is None or field in pods_variables):
            return True
    return False


def _order_test_of(function: str, left: _Node, right: _Node) -> _QuantityCompare | None:
    """`q.compareTo(c) <op> k` or `k <op> q.compareTo(c)`, k an int literal, as a test of
    the order (which of -1, 0, 1 the comparison admits); None for any other compare."""
    op = _Compare.FUNCTIONS[function]
    for order, literal, flipped in ((left, right, False), (right, left, True)):
        if (
            isinstance(order, _QuantityCompare)
            and order.function == "compareTo"
            and order.admits is None
            and isinstance(literal, _Literal)
            and type(literal.value) is int
        ):
            k = literal.value
            less, equal, greater = (bool(op(k, o) if flipped else op(o, k)) for o in (-1, 0, 1))
            return order.tested((less, equal, greater))
    return None


def _flatten(node: cel.ast.Node, function: str, out: list[cel.ast.Node]) -> None:
    if isinstance(node, cel.ast.Call) and node.function == function and node.target is None:
        for arg in node.args:
            _flatten(arg, function, out)
    else:
        out.append(node)
