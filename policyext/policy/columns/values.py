"""The values a column plan computes with: a Scalar (the same on every row), a Column (one
value per row, some rows unknown), a Known column (every row known), and how node values
become a column.

Ints and doubles are held as float64, bools as bool, everything else as objects; a row
whose value the columns cannot hold exactly (an error, another type, a NaN, an int past
2^53) is unknown, and the exact evaluator decides it.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from policyext.cel import Duration, Quantity, Timestamp
from policyext.policy.masks import Mask, some

# ints are kept as doubles: exact up to 2**53, larger ones are unknown rows
EXACT_INT: Final = 2.0**53

KINDS: Final = (bool, int, float, str, Quantity, dict, list, Timestamp, Duration)
_second = operator.itemgetter(1)
_third = operator.itemgetter(2)


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


_first = operator.itemgetter(0)


def column_of(entries: list[tuple[object, float, float]], kind: type | None = None) -> Column:
    """A column of node values; `kind`: the type of the known rows (else the most common)."""
    values = list(map(_first, entries))
    n = len(values)
    costs = np.fromiter(map(_third, entries), np.float64, n)
    cost = costs if some(costs) else None
    kinds = Counter(map(type, values))
    if kind is None:
        kind = max(kinds, key=kinds.__getitem__) if kinds else bool
    if kind not in KINDS:
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


def known_mask(n: int) -> Mask:
    """A mask of n rows none of which is unknown, shared (read-only: never written)."""
    mask = _KNOWN.get(n)
    if mask is None:
        mask = np.zeros(n, np.bool_)
        mask.flags.writeable = False
        if len(_KNOWN) >= _KNOWN_KEPT:
            _KNOWN.clear()
        _KNOWN[n] = mask
    return mask


# the shared masks of `known_mask`, by length (requests name a few counts of nodes)
_KNOWN: dict[int, Mask] = {}
_KNOWN_KEPT: Final = 64


def all_unknown(n: int) -> Column:
    """A bool column of n rows, every one unknown: the exact evaluator's."""
    return Column(bool, np.zeros(n, np.bool_), np.ones(n, np.bool_))


def truth(value: Value, n: int) -> tuple[Mask, Mask, bool]:
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


def bools(true: Mask, false: Mask, decided: bool) -> Column:
    """The bool column of rows definitely true and definitely false (`decided`: every
    row is one or the other)."""
    if decided:
        return Column(bool, true, known_mask(len(true)), decided=True)
    return Column(bool, true, ~(true | false))


def as_column_parts(value: Value, n: int) -> tuple[type | None, Any, Mask]:
    """(kind, values, unknown) of a value, a scalar broadcast; kind None: not usable."""
    if isinstance(value, Column):
        return value.kind, value.values, value.unknown
    kind, v = scalar_parts(value.value)
    return kind, v, (np.zeros if kind is not None else np.ones)(n, np.bool_)


def scalar_parts(v: object) -> tuple[type | None, Any]:
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


NUMERIC: Final = (int, float)


def broadcast(value: Scalar, n: int) -> Column:
    kind, v, unknown = as_column_parts(value, n)
    if kind is None:
        return Column(bool, np.zeros(n, np.bool_), unknown)
    dtype = np.bool_ if kind is bool else np.float64 if kind in NUMERIC else object
    return Column(kind, np.full(n, v, dtype), unknown)
