"""Quantities compared with a constant over a column: `q.compareTo(c)`, and the tests of
its order (`isGreaterThan`, `isLessThan`, `q.compareTo(c) >= 0` and its kin), the fits
checks of most policies.

A row whose approximation (a double) is clearly on one side of the constant's is decided by
it; the rows close to it, by comparing the quantities exactly.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import numpy.typing as npt

from policyext.cel import Quantity
from policyext.policy.columns.request import Operation, Rows
from policyext.policy.columns.values import UNDECIDED, Column, Known, Scalar, Value, all_unknown
from policyext.policy.masks import Mask, count, every, some

# a quantity whose approximation is this close to the constant's is compared exactly
QUANTITY_TOLERANCE: Final = 1e-9

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


class QuantityCompare(Operation):
    """`q.compareTo(c)` with a column of quantities on one side and a constant on the
    other; or a test of that order (`q.isGreaterThan(c)`, `q.isLessThan(c)`, and
    `q.compareTo(c) >= 0` and its kin, an int literal compared with the order: `admits`),
    whose bool column is read from two masks (the rows clearly less, clearly greater)
    rather than from an order column compared again: the fits checks of most policies."""

    def __init__(
        self, function: str, target: Operation, arg: Operation, admits: Admits | None = None
    ) -> None:
        self.function = function
        self.target = target
        self.arg = arg
        self.admits = _TESTS.get(function, admits)

    def tested(self, admits: Admits) -> QuantityCompare:
        """This `compareTo` as a test of its order."""
        return QuantityCompare(self.function, self.target, self.arg, admits)

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        target = self.target.run(rows, policy, params)
        arg = self.arg.run(rows, policy, params)
        # the constant first (`c.compareTo(q)`): compared from its side, the orders swap
        swapped = isinstance(target, Scalar)
        if swapped:
            target, arg = arg, target
        if not (
            isinstance(target, Column)
            and target.kind is Quantity
            and isinstance(arg, Scalar)
            and type(arg.value) is Quantity
        ):
            return all_unknown(rows.count)
        constant: Quantity = arg.value
        c = constant.approximate_float()
        if self.admits is not None:
            admits = self.admits[::-1] if swapped else self.admits
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
        if swapped:
            order = -order
        return Column(int, order, target.unknown, decided=target._decided)

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        """A test of the order (`admits`) whose every row is clearly on one side of the
        constant; any row in the band or NaN, or a constant not finite, is `run`'s."""
        admits = self.admits
        if admits is None:
            return UNDECIDED  # (an order column: `run`'s)
        target = self.target.decide(rows, policy, params, spent)
        arg = self.arg.decide(rows, policy, params, spent)
        if type(target) is Scalar:
            target, arg, admits = arg, target, admits[::-1]  # the orders swap
        # (an UNDECIDED side is neither Known nor Scalar)
        if not (
            type(target) is Known
            and target.kind is Quantity
            and type(arg) is Scalar
            and type(arg.value) is Quantity
        ):
            return UNDECIDED
        clear = clear_sides(target.values, arg.value.approximate_float())
        if clear is None:
            return UNDECIDED
        # every row clearly on one side: the test's false rows are those of the sides it
        # does not admit (no row is on the equal side)
        less, greater, fewer, more = clear
        refused = (not admits[0], not admits[1], not admits[2])
        false = admitted(less, greater, refused)
        any_false = bool((fewer and refused[0]) or (more and refused[2]))
        return Known(bool, admitted(less, greater, admits), false, any_false)


def _scalable(c: float) -> bool:
    """Whether rows can be told apart from a constant approximated as `c` by a margin of
    its size: a finite one. (A quantity other than 0 is 1n at least in magnitude, finer
    ones rounded up when parsed, so the margin never underflows; one past the doubles
    approximates as an infinity, and `0e400` as NaN: compared exactly.)"""
    return math.isfinite(c)


def _order_test(target: Column, constant: Quantity, c: float, admits: Admits) -> Column:
    """Per row of a column of quantities, whether its order against the constant
    (approximated as `c`) is one the test admits. A row whose approximation is clearly on
    one side of `c` is decided by it; the others (within the band, NaN, or every row of a
    constant not finite) by comparing the quantities exactly."""
    a = target.values
    if _scalable(c):
        less, greater = _sides(a, c)
    else:
        less = greater = np.zeros(len(a), np.bool_)
    values = admitted(less, greater, admits)  # (a fresh mask: written below)
    decided = less | greater
    if not every(decided):
        close = ~decided if target.decided() else ~(decided | target.unknown)
        for i in close.nonzero()[0].tolist():
            values[i] = admits[target.object_at(i).compare(constant) + 1]
    return Column(bool, values, target.unknown, decided=target._decided)


def clear_sides(a: npt.NDArray[np.float64], c: float) -> tuple[Mask, Mask, int, int] | None:
    """The rows of approximations `a` clearly less than the constant approximated as `c`,
    those clearly greater, and how many of each, when every row is clearly on one side;
    None when a row is in the band or NaN, or the constant not finite."""
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


def admitted(less: Mask, greater: Mask, admits: Admits) -> Mask:
    """The rows clearly on a side the test admits (the equal side is never clear)."""
    if admits[0] and admits[2]:
        return less | greater
    if admits[0] or admits[2]:
        return less if admits[0] else greater
    return np.zeros(len(less), np.bool_)
