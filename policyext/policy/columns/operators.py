"""The operators a column plan evaluates over whole columns: `&&`, `||`, `!`, `? :`,
comparisons, arithmetic over doubles and `in` over strings, with the pod-side parts and
the literals they combine (quantities apart: quantities.py).

Each keeps CEL's semantics on the known rows (`false && <error>` is false: a decided row
stays decided) and leaves the others unknown, for the exact evaluator.
"""

from __future__ import annotations

import operator
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from policyext.cel import Duration, Quantity, Timestamp
from policyext.policy.columns.request import Operation, Rows
from policyext.policy.columns.values import (
    NUMERIC,
    UNDECIDED,
    Column,
    Known,
    Scalar,
    Value,
    all_unknown,
    as_column_parts,
    bools,
    scalar_parts,
    truth,
)
from policyext.policy.masks import Mask

# the kinds compared here by `==` and `!=` (maps, lists and quantities are compared by the
# exact evaluator)
_COMPARABLE: Final = (bool, int, float, str, Timestamp, Duration)
# the kinds ordered here by `<` ... (strings and bools too, but the exact evaluator orders
# those)
_ORDERED: Final = (int, float, Timestamp, Duration)


class Param(Operation):
    def __init__(self, index: int) -> None:
        self.index = index

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        return Scalar(params[self.index])

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        return Scalar(params[self.index])


class Literal(Operation):
    def __init__(self, value: object) -> None:
        self.value = value

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        return Scalar(self.value)

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        return Scalar(self.value)


class Opaque(Operation):
    """An operand of `&&` / `||` of an operator the columns do not evaluate: unknown on
    every row (the exact evaluator's), and deciding nothing. The operands before it may
    still decide every row (`Logical.decide`)."""

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        return all_unknown(rows.count)


class Logical(Operation):
    """`&&` / `||`: decided by any operand that decides it, whatever the others are."""

    def __init__(self, is_and: bool, operands: list[Operation]) -> None:
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
        true, false, decided = truth(columns[0], n)
        for value in columns[1:]:
            t, f, d = truth(value, n)
            if self.is_and:
                true, false = true & t, false | f
            else:
                true, false = true | t, false & f
            decided = decided and d
        return bools(true, false, decided)

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


class Not(Operation):
    def __init__(self, operand: Operation) -> None:
        self.operand = operand

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        true, false, decided = truth(self.operand.run(rows, policy, params), rows.count)
        return bools(false, true, decided)

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


class Conditional(Operation):
    def __init__(self, cond: Operation, then: Operation, otherwise: Operation) -> None:
        self.cond = cond
        self.then = then
        self.otherwise = otherwise

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        n = rows.count
        true, false, _ = truth(self.cond.run(rows, policy, params), n)
        a = self.then.run(rows, policy, params)
        b = self.otherwise.run(rows, policy, params)
        ka, va, ua = as_column_parts(a, n)
        kb, vb, ub = as_column_parts(b, n)
        if ka is None or ka is not kb or ka is Quantity:
            return all_unknown(rows.count)
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


def _both_decided(
    a: Operation,
    b: Operation,
    rows: Rows,
    policy: str,
    params: tuple[object, ...],
    spent: list[float],
) -> tuple[tuple[type | None, Any], tuple[type | None, Any]] | None:
    """The (kind, values) of two operands (`_decided_parts`), when `decide` gives both."""
    first = a.decide(rows, policy, params, spent)
    second = b.decide(rows, policy, params, spent)
    if first is UNDECIDED or second is UNDECIDED:
        return None
    return _decided_parts(first), _decided_parts(second)


def _decided_parts(value: object) -> tuple[type | None, Any]:
    """(kind, values) of what `decide` gave (a Known column, or a Scalar as
    `as_column_parts` takes it); kind None: not usable."""
    if type(value) is Known:
        return value.kind, value.values
    return scalar_parts(value.value)  # type: ignore[attr-defined]


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


class Compare(Operation):
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

    def __init__(self, function: str, left: Operation, right: Operation) -> None:
        self.function = function
        self.op = self.FUNCTIONS[function]
        self.equality = function in ("_==_", "_!=_")
        # the kinds compared here when both sides are of one kind
        self.kinds = _COMPARABLE if self.equality else _ORDERED
        self.left = left
        self.right = right

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        n = rows.count
        left = self.left.run(rows, policy, params)
        right = self.right.run(rows, policy, params)
        ka, va, ua = as_column_parts(left, n)
        kb, vb, ub = as_column_parts(right, n)
        values = self._compared(ka, va, kb, vb, n)
        if values is None:
            return all_unknown(rows.count)
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
        if ka is not kb:
            # ints and doubles are ordered together; equality across kinds, and any other
            # pair of kinds (a side of no kind, None, included), is the exact evaluator's
            if self.equality or ka not in NUMERIC or kb not in NUMERIC:
                return None
        elif ka not in self.kinds:
            return None  # (None on both sides too)
        op = self.op
        # the column on the left: numpy's operators, row by row (a timestamp's or a
        # duration's own `==` would say false to the whole column)
        if not isinstance(va, np.ndarray):
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


class Arithmetic(Operation):
    """`+ - * /` over doubles (IEEE arithmetic, as Python's floats)."""

    FUNCTIONS: Final = {
        "_+_": operator.add,
        "_-_": operator.sub,
        "_*_": operator.mul,
        "_/_": operator.truediv,
    }

    def __init__(self, function: str, left: Operation, right: Operation) -> None:
        self.op = self.FUNCTIONS[function]
        self.divide = function == "_/_"
        self.left = left
        self.right = right

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        n = rows.count
        left = self.left.run(rows, policy, params)
        right = self.right.run(rows, policy, params)
        ka, va, ua = as_column_parts(left, n)
        kb, vb, ub = as_column_parts(right, n)
        if ka is not float or kb is not float:
            return all_unknown(rows.count)
        unknown = _either_unknown(left, right, ua, ub)
        if self.divide:
            unknown = unknown | (np.asarray(vb) == 0.0)  # the exact evaluator's rule
        with np.errstate(all="ignore"):
            values = np.asarray(self.op(va, vb), np.float64)
        if values.shape != (n,):
            values = np.broadcast_to(values, (n,)).copy()
        return Column(float, values, unknown | np.isnan(values))


class In(Operation):
    """`s in <node list or map>` and `<node string> in <constant list or map>`, for
    strings (a string equals only a string: Python's `in` is CEL's there)."""

    def __init__(self, element: Operation, container: Operation) -> None:
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
        return all_unknown(rows.count)
