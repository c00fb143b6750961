"""The `math` namespace of cel-go's math extension."""

from __future__ import annotations

import math

import pytest

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import merge_libraries
from policyext.cel.lib.math import MATH_LIBRARY
from policyext.cel.values import INT64_MAX, INT64_MIN, UINT64_MAX, UInt

TABLE = merge_libraries([MATH_LIBRARY])
NAN = math.nan
INF = math.inf
DOUBLE_MAX = 1.797693e308


def call(name: str, *args: object) -> object:
    overload = TABLE.find_global(name, len(args))
    assert overload is not None, name
    return overload.impl(*args)


def same(result: object, expected: object) -> bool:
    """Equal and of the same CEL type (1, 1.0 and 1u are different results here)."""
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(result, float) and math.isnan(result)
    if isinstance(expected, float) and expected == 0:
        return type(result) is float and math.copysign(1, result) == math.copysign(1, expected)
    return type(result) is type(expected) and result == expected


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("math.greatest", (-5,), -5),
        ("math.greatest", (5.0,), 5.0),
        ("math.greatest", (UInt(5),), UInt(5)),
        ("math.greatest", (1, 1), 1),
        ("math.greatest", (3, -3), 3),
        ("math.greatest", (-7, 5), 5),
        ("math.greatest", (INT64_MAX, 1), INT64_MAX),
        ("math.greatest", (INT64_MIN, 1), 1),
        ("math.greatest", (1.0, 1), 1.0),
        ("math.greatest", (1, 1.0), 1),
        ("math.greatest", (UInt(5), -7), UInt(5)),
        ("math.greatest", (-3, UInt(3)), UInt(3)),
        ("math.greatest", (DOUBLE_MAX, 1), DOUBLE_MAX),
        ("math.greatest", (-1.5, -2.5, -3.5), -1.5),
        ("math.greatest", (5.4, 10, UInt(3), -5.0, INT64_MAX), INT64_MAX),
        ("math.greatest", (5.4, 10, UInt(3), -5.0, UInt(UINT64_MAX)), UInt(UINT64_MAX)),
        ("math.greatest", ([5.4, 10, UInt(3), -5.0, 3.5],), 10),
        ("math.greatest", ([5.4, 10.5, UInt(3), -5.0, 3.5],), 10.5),
        ("math.greatest", ((UInt(10), 3.5),), UInt(10)),
        ("math.least", (-5,), -5),
        ("math.least", (5.5,), 5.5),
        ("math.least", (5, -7), -7),
        ("math.least", (INT64_MIN, 1), INT64_MIN),
        ("math.least", (1.5, -DOUBLE_MAX), -DOUBLE_MAX),
        ("math.least", (UInt(1), 1.0), UInt(1)),
        ("math.least", (1.0, UInt(1)), 1.0),
        ("math.least", (10, UInt(3), 1), 1),
        ("math.least", (5.4, 10, UInt(3), -5.0, INT64_MAX), -5.0),
        ("math.least", ([5.4, 10, UInt(3), UInt(1), 3.5],), UInt(1)),
    ],
)
def test_greatest_and_least_return_the_winning_argument(
    name: str, args: tuple[object, ...], expected: object
) -> None:
    assert same(call(name, *args), expected)


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("math.greatest", (), "requires at least one argument"),
        ("math.least", ([],), "argument must not be empty"),
        ("math.greatest", ("a",), "no such overload"),
        ("math.greatest", (1, "a"), "no such overload"),
        ("math.least", ([1, [2]],), "no such overload"),
        ("math.least", (True, 1), "no such overload"),
        ("math.greatest", (1.0, NAN), "NaN"),
    ],
)
def test_greatest_and_least_need_numbers(name: str, args: tuple[object, ...], message: str) -> None:
    with pytest.raises(CELEvalError, match=message):
        call(name, *args)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("math.ceil", -1.2, -1.0),
        ("math.ceil", 1.2, 2.0),
        ("math.ceil", -0.5, -0.0),
        ("math.floor", -1.2, -2.0),
        ("math.floor", 1.2, 1.0),
        ("math.round", -1.6, -2.0),
        ("math.round", -1.4, -1.0),
        ("math.round", -1.5, -2.0),
        ("math.round", 1.2, 1.0),
        ("math.round", 1.5, 2.0),
        ("math.round", 2.5, 3.0),
        ("math.round", 0.49999999999999994, 0.0),
        ("math.round", -0.4, -0.0),
        ("math.round", 1e300, 1e300),
        ("math.trunc", -1.2, -1.0),
        ("math.trunc", 1.2, 1.0),
        ("math.round", NAN, NAN),
        ("math.trunc", NAN, NAN),
        ("math.ceil", INF, INF),
        ("math.floor", -INF, -INF),
    ],
)
def test_rounding_functions_round_doubles_as_go_does(
    name: str, value: float, expected: float
) -> None:
    assert same(call(name, value), expected)


@pytest.mark.parametrize(
    "name", ["math.ceil", "math.floor", "math.round", "math.trunc", "math.isNaN", "math.isInf"]
)
@pytest.mark.parametrize("value", [1, UInt(1), True, "1.5"])
def test_double_functions_take_only_doubles(name: str, value: object) -> None:
    with pytest.raises(CELEvalError, match="no such overload"):
        call(name, value)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("math.isNaN", NAN, True),
        ("math.isNaN", INF, False),
        ("math.isInf", INF, True),
        ("math.isInf", -INF, True),
        ("math.isInf", NAN, False),
        ("math.isFinite", 1.0 / 1.5, True),
        ("math.isFinite", NAN, False),
        ("math.isFinite", -INF, False),
    ],
)
def test_floating_point_predicates(name: str, value: float, expected: bool) -> None:
    assert call(name, value) is expected


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("math.abs", UInt(1), UInt(1)),
        ("math.abs", 1, 1),
        ("math.abs", -11, 11),
        ("math.abs", INT64_MAX, INT64_MAX),
        ("math.abs", 1.5, 1.5),
        ("math.abs", -11.5, 11.5),
        ("math.sign", UInt(100), UInt(1)),
        ("math.sign", UInt(0), UInt(0)),
        ("math.sign", 100, 1),
        ("math.sign", -11, -1),
        ("math.sign", 0, 0),
        ("math.sign", 100.5, 1.0),
        ("math.sign", -32.0, -1.0),
        ("math.sign", 0.0, 0.0),
        ("math.sign", NAN, NAN),
        ("math.sqrt", 49.0, 7.0),
        ("math.sqrt", 16, 4.0),
        ("math.sqrt", UInt(81), 9.0),
        ("math.sqrt", -1.0, NAN),
        ("math.sqrt", INF, INF),
    ],
)
def test_sign_abs_and_sqrt(name: str, value: object, expected: object) -> None:
    assert same(call(name, value), expected)


def test_abs_of_the_smallest_int_overflows() -> None:
    with pytest.raises(CELEvalError, match="overflow"):
        call("math.abs", INT64_MIN)


@pytest.mark.parametrize("name", ["math.abs", "math.sign", "math.sqrt", "math.bitNot"])
@pytest.mark.parametrize("value", [True, "1", None])
def test_sign_abs_sqrt_and_bit_not_take_only_numbers(name: str, value: object) -> None:
    with pytest.raises(CELEvalError, match="no such overload"):
        call(name, value)


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("math.bitAnd", (1, 2), 0),
        ("math.bitAnd", (1, 3), 1),
        ("math.bitAnd", (1, -1), 1),
        ("math.bitAnd", (UInt(1), UInt(3)), UInt(1)),
        ("math.bitOr", (1, 2), 3),
        ("math.bitOr", (4, -2), -2),
        ("math.bitOr", (UInt(1), UInt(4)), UInt(5)),
        ("math.bitXor", (1, 3), 2),
        ("math.bitXor", (4, -2), -6),
        ("math.bitXor", (UInt(1), UInt(3)), UInt(2)),
        ("math.bitNot", (1,), -2),
        ("math.bitNot", (-1,), 0),
        ("math.bitNot", (0,), -1),
        ("math.bitNot", (UInt(1),), UInt(18446744073709551614)),
        ("math.bitNot", (UInt(0),), UInt(UINT64_MAX)),
        ("math.bitShiftLeft", (1, 2), 4),
        ("math.bitShiftLeft", (1, 63), INT64_MIN),
        ("math.bitShiftLeft", (3, 63), INT64_MIN),
        ("math.bitShiftLeft", (1, 200), 0),
        ("math.bitShiftLeft", (-1, 200), 0),
        ("math.bitShiftLeft", (UInt(1), 2), UInt(4)),
        ("math.bitShiftLeft", (UInt(UINT64_MAX), 1), UInt(UINT64_MAX - 1)),
        ("math.bitShiftLeft", (UInt(1), 200), UInt(0)),
        ("math.bitShiftRight", (1024, 2), 256),
        ("math.bitShiftRight", (1024, 64), 0),
        # a negative int shifts in zeros
        ("math.bitShiftRight", (-1024, 3), 2305843009213693824),
        ("math.bitShiftRight", (-1024, 0), -1024),
        ("math.bitShiftRight", (-1024, 64), 0),
        ("math.bitShiftRight", (UInt(1024), 2), UInt(256)),
        ("math.bitShiftRight", (UInt(1024), 200), UInt(0)),
    ],
)
def test_bit_operations_on_64_bit_integers(
    name: str, args: tuple[object, ...], expected: object
) -> None:
    assert same(call(name, *args), expected)


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("math.bitShiftLeft", (UInt(1), -1), "negative offset"),
        ("math.bitShiftRight", (1, -1), "negative offset"),
        ("math.bitShiftLeft", (4.3, 1), "no such overload"),
        ("math.bitShiftRight", (b"123", 1), "no such overload"),
        ("math.bitShiftLeft", (1, UInt(1)), "no such overload"),
        ("math.bitAnd", (UInt(2), ""), "no such overload"),
        ("math.bitAnd", (1, UInt(1)), "no such overload"),
        ("math.bitOr", (1.2, 1), "no such overload"),
        ("math.bitXor", ([], [1]), "no such overload"),
        ("math.bitXor", (True, False), "no such overload"),
    ],
)
def test_bit_operations_reject_bad_operands(
    name: str, args: tuple[object, ...], message: str
) -> None:
    with pytest.raises(CELEvalError, match=message):
        call(name, *args)
