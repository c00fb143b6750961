"""A node-only subexpression's values kept over the slots of a node source's table.

A value that reads only the node (its information, its variables) does not depend on the
pod: `NodeValue` evaluates it per node with the exact evaluator, once per node version,
and keeps the results as one column over the table's slots (`_Kept`). A request gathers
its rows from there, evaluating only the rows whose node changed since; once nothing
changed, a request checks no row at all.
"""

from __future__ import annotations

import math
import operator
import sys
import threading
import weakref
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from policyext import cel
from policyext.cel import CostLimitExceeded, Quantity
from policyext.policy.columns.request import Operation, Placement, Rows
from policyext.policy.columns.values import (
    EXACT_INT,
    KINDS,
    UNDECIDED,
    Column,
    Known,
    Value,
    column_of,
    known_mask,
)
from policyext.policy.masks import every, some
from policyext.policy.rows import NOWHERE

# rows refreshed in a kept column one by one rather than as a column of their own
FEW_ROWS: Final = 8
# a slot whose value is not kept yet (versions are never negative)
NOT_KEPT: Final = -2


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
        # (those are current, so evaluated), and none is counted (see gather)
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


class NodeValue(Operation):
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
                return gather(kept.whole, slots, kept.known), kept  # type: ignore[arg-type]
            need = (kept.stamps[slots] != placed.versions).nonzero()[0]
            if not need.size and kept.whole is not None:
                kept.checked, kept.checked_at = slots, changes
                _look_at_every_slot(kept, placed)
                return gather(kept.whole, slots, kept.known), kept
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
                fresh = column_of(entries, whole.kind if whole is not None else None)
                if whole is None:
                    whole = kept.whole = _extend(_empty(fresh.kind, fresh), len(kept.stamps))
                _scatter(whole, at, fresh)
                if fresh.cost is not None and len(fresh.cost):
                    kept.most = max(kept.most, float(fresh.cost.max()))
            kept.stamps[at] = versions
            kept.known = _still_known(kept, whole, at)
            # every row current only if no other request wrote stamps since this one looked
            current = kept.writes == writes
            kept.checked, kept.checked_at = (slots, changes) if current else (None, -1)
            # a request that looked before a change may write an older version's value:
            # every slot is looked at again before any request is spared its check
            kept.current_at = kept.looked_at = -1
            kept.writes += 1
            return gather(whole, slots, kept.known), kept

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
        return column_of([self._entry(rows, policy, i) for i in range(rows.count)])

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
        objects = _writable_objects(whole)
        objects[at] = fresh.objects
        whole.objects = objects
    assert whole.cost is not None
    whole.cost[at] = fresh.cost if fresh.cost is not None else 0.0


def _write_rows(
    whole: Column, at: npt.NDArray[np.intp], entries: list[tuple[object, float, float]]
) -> bool:
    """`_scatter` of the column `column_of` would make of these entries, for a few entries
    all of the kept column's kind (False, and nothing written, otherwise)."""
    kind = whole.kind
    if kind not in KINDS or any(type(entry[0]) is not kind for entry in entries):
        return False
    values, unknown = whole.values, whole.unknown
    objects = _writable_objects(whole) if whole.objects is not None else None
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


# references to a kept column's objects array when no request holds it: the column's, the
# caller's variable and getrefcount's argument
_UNHELD: Final = 3


def _writable_objects(whole: Column) -> npt.NDArray[Any]:
    """The kept column's objects array to write rows into, under the value's lock: itself
    when no request holds it, else a copy. A request reads the objects it was handed after
    the lock (the few rows it compares exactly: `Column.object_at`), so a row written in
    place under it would be another version's than its values. Copying every time cost a
    reference per slot of the table for every changed row (a pod bound between two calls):
    at 5,000 nodes, 8,192 slots per object column per call, the most of what a filter call
    at that size cost more than one at 500 (docs/performance.md). Requests take the array
    only under the lock (`gather`), so no reference appears between the count and the
    writes."""
    objects = whole.objects
    assert objects is not None
    if sys.getrefcount(objects) <= _UNHELD:
        return objects
    return objects.copy()


def _still_known(kept: _Kept, whole: Column, at: npt.NDArray[np.intp]) -> bool:
    """Whether no evaluated row of the kept column is unknown, once the rows at `at` were
    written: only those changed, so while every other row was known it is theirs alone to
    look at (a few rows, not every slot of the table); else every evaluated row again."""
    if kept.known:
        return not some(whole.unknown[at])
    return not some(whole.unknown & (kept.stamps != NOT_KEPT))


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


def gather(whole: Column, index: npt.NDArray[np.intp], known: bool) -> Column:
    """The rows of a kept column (their costs are read apart, when needed: Costs). `known`:
    no row of it is unknown (the usual case, found once after each write: _Kept.known);
    its rows are then known without gathering and counting their unknown mask: numpy's
    machinery is what a pause between requests evicts, and each call then costs
    microseconds."""
    values = whole.values[index]
    if known:
        return Column(whole.kind, values, known_mask(len(index)), whole.objects, None, index, True)
    return Column(whole.kind, values, whole.unknown[index], whole.objects, None, index)


_third = operator.itemgetter(2)
