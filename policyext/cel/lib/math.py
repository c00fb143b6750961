"""Numeric helpers in the `math` namespace (cel-go's `ext.Math`).

`math.greatest` / `math.least` take one or more numbers, or one list of numbers, of any
mix of int, uint and double, and return the winning argument unchanged (ties go to the
earliest). Rounding and floating-point predicates take doubles only, as cel-go declares
them; `math.abs`, `math.sign` and the bit operations keep the type of their argument.
Shifts past the width of a 64-bit integer give 0, and a right shift of a negative int is
logical (it shifts zeros in), as the cel-spec conformance tests require.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import Library
from policyext.cel.operators import compare
from policyext.cel.values import INT64_MIN, UINT64_MAX, UInt, no_such_overload

MATH_LIBRARY: Final = Library("math")
_lib = MATH_LIBRARY

_NUMBERS: Final = (int, UInt, float)
_LISTS: Final = (list, tuple)


def _is_number(value: object) -> bool:
    return type(value) in _NUMBERS


# -- greatest / least ---------------------------------------------------------------------
def _extreme(name: str, args: tuple[object, ...], prefer: int) -> object:
    if not args:
        raise CELEvalError(f"{name}() requires at least one argument")
    values: tuple[object, ...] | list[object] = args
    if len(args) == 1 and isinstance(args[0], _LISTS):
        values = args[0]
        if not values:
            raise CELEvalError(f"{name}(list) argument must not be empty")
    best = values[0]
    if not _is_number(best):
        raise no_such_overload(name, *args)
    for value in values[1:]:
        if not _is_number(value):
            raise no_such_overload(name, *args)
        order = compare(best, value, name)
        if order == 2:
            raise CELEvalError(f"{name}(): NaN values cannot be ordered")
        if order == prefer:
            best = value
    return best


def _list_size_cost(*args: object) -> int:
    if len(args) == 1 and isinstance(args[0], _LISTS):
        return len(args[0])
    return len(args)


@_lib.function("math.greatest", None, result="dyn", cost=_list_size_cost)
def greatest(*args: object) -> object:
    return _extreme("math.greatest", args, -1)


@_lib.function("math.least", None, result="dyn", cost=_list_size_cost)
def least(*args: object) -> object:
    return _extreme("math.least", args, 1)


# -- doubles ------------------------------------------------------------------------------
def _double(name: str, value: object) -> float:
    if type(value) is not float:
        raise no_such_overload(name, value)
    return value


def _rounding(name: str, rule: Callable[[float], int]) -> Callable[[object], float]:
    def apply(value: object) -> float:
        x = _double(name, value)
        if not math.isfinite(x):
            return x
        # copysign keeps the sign of a zero result: math.ceil(-0.5) is -0.0, as in Go
        return math.copysign(float(rule(x)), x)

    return apply


def _round_half_away(x: float) -> int:
    whole = math.trunc(x)
    # x - whole is exact for doubles, so halfway cases are recognised exactly
    if abs(x - whole) >= 0.5:
        whole += 1 if x > 0 else -1
    return whole


ceil = _lib.function("math.ceil", 1, result="double")(_rounding("math.ceil", math.ceil))
floor = _lib.function("math.floor", 1, result="double")(_rounding("math.floor", math.floor))
round_ = _lib.function("math.round", 1, result="double")(_rounding("math.round", _round_half_away))
trunc = _lib.function("math.trunc", 1, result="double")(_rounding("math.trunc", math.trunc))


@_lib.function("math.isInf", 1, result="bool")
def is_inf(value: object) -> bool:
    return math.isinf(_double("math.isInf", value))


@_lib.function("math.isNaN", 1, result="bool")
def is_nan(value: object) -> bool:
    return math.isnan(_double("math.isNaN", value))


@_lib.function("math.isFinite", 1, result="bool")
def is_finite(value: object) -> bool:
    return math.isfinite(_double("math.isFinite", value))


@_lib.function("math.sqrt", 1, result="double")
def sqrt(value: object) -> float:
    if not isinstance(value, int | float) or type(value) is bool:
        raise no_such_overload("math.sqrt", value)
    x = float(value)
    # Go's math.Sqrt gives NaN below zero where Python's raises
    return math.sqrt(x) if x >= 0 or math.isnan(x) else math.nan


# -- signs --------------------------------------------------------------------------------
@_lib.function("math.abs", 1, result="dyn")
def abs_(value: object) -> object:
    if type(value) is UInt:
        return value
    if type(value) is int:
        if value == INT64_MIN:
            raise CELEvalError("integer overflow")
        return abs(value)
    if type(value) is float:
        return abs(value)
    raise no_such_overload("math.abs", value)


@_lib.function("math.sign", 1, result="dyn")
def sign(value: object) -> object:
    if type(value) is UInt:
        return UInt(1 if value else 0)
    if type(value) is int:
        return (value > 0) - (value < 0)
    if type(value) is float:
        if math.isnan(value):
            return value
        return 1.0 if value > 0 else -1.0 if value < 0 else 0.0
    raise no_such_overload("math.sign", value)


# -- bits ---------------------------------------------------------------------------------
_WIDTH: Final = 64
_MASK: Final = UINT64_MAX


def _to_int64(bits: int) -> int:
    """A 64-bit pattern read as a two's complement int."""
    return bits - (1 << _WIDTH) if bits >= 1 << (_WIDTH - 1) else bits


def _bitwise(name: str, op: Callable[[int, int], int]) -> Callable[[object, object], object]:
    def apply(a: object, b: object) -> object:
        if type(a) is int and type(b) is int:
            # & | ^ of two int64 values stay within int64
            return op(a, b)
        if type(a) is UInt and type(b) is UInt:
            return UInt(op(a, b))
        raise no_such_overload(name, a, b)

    return apply


bit_and = _lib.function("math.bitAnd", 2, result="dyn")(_bitwise("math.bitAnd", lambda a, b: a & b))
bit_or = _lib.function("math.bitOr", 2, result="dyn")(_bitwise("math.bitOr", lambda a, b: a | b))
bit_xor = _lib.function("math.bitXor", 2, result="dyn")(_bitwise("math.bitXor", lambda a, b: a ^ b))


@_lib.function("math.bitNot", 1, result="dyn")
def bit_not(value: object) -> object:
    if type(value) is int:
        return ~value
    if type(value) is UInt:
        return UInt(_MASK ^ value)
    raise no_such_overload("math.bitNot", value)


def _shift_operands(name: str, value: object, bits: object) -> tuple[int, int]:
    if not (type(value) is int or type(value) is UInt) or type(bits) is not int:
        raise no_such_overload(name, value, bits)
    if bits < 0:
        raise CELEvalError(f"{name}() negative offset: {bits}")
    return value, bits


@_lib.function("math.bitShiftLeft", 2, result="dyn")
def bit_shift_left(value: object, bits: object) -> object:
    v, n = _shift_operands("math.bitShiftLeft", value, bits)
    shifted = (v << n) & _MASK if n < _WIDTH else 0
    return UInt(shifted) if type(value) is UInt else _to_int64(shifted)


@_lib.function("math.bitShiftRight", 2, result="dyn")
def bit_shift_right(value: object, bits: object) -> object:
    v, n = _shift_operands("math.bitShiftRight", value, bits)
    shifted = (v & _MASK) >> n if n < _WIDTH else 0
    return UInt(shifted) if type(value) is UInt else _to_int64(shifted)
