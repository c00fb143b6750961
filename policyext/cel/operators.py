"""CEL's operators over runtime values: arithmetic, ordering, membership and indexing.

Arithmetic dispatches on the exact Python types of both operands through a table, so that
`True + 1` (bool is an int in Python) and `1 + 1u` are errors as CEL requires, and int64 /
uint64 overflow is detected after each operation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from policyext.cel.errors import CELEvalError
from policyext.cel.values import (
    INT64_MAX,
    INT64_MIN,
    NANOS_PER_SECOND,
    UINT64_MAX,
    Duration,
    Optional,
    Timestamp,
    UInt,
    cel_equals,
    map_get,
    no_such_overload,
    type_name,
)

BinaryFn = Callable[[object, object], object]


def _int_result(value: int) -> int:
    if value < INT64_MIN or value > INT64_MAX:
        raise CELEvalError("int overflow")
    return value


def _uint_result(value: int) -> UInt:
    if value < 0 or value > UINT64_MAX:
        raise CELEvalError("uint overflow")
    return UInt(value)


def _int_div(a: int, b: int) -> int:
    if b == 0:
        raise CELEvalError("division by zero")
    q = abs(a) // abs(b)
    return _int_result(q if (a < 0) == (b < 0) else -q)


def _int_mod(a: int, b: int) -> int:
    if b == 0:
        raise CELEvalError("modulus by zero")
    if a == INT64_MIN and b == -1:
        raise CELEvalError("int overflow")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _uint_div(a: int, b: int) -> UInt:
    if b == 0:
        raise CELEvalError("division by zero")
    return UInt(a // b)


def _uint_mod(a: int, b: int) -> UInt:
    if b == 0:
        raise CELEvalError("modulus by zero")
    return UInt(a % b)


def _float_div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _timestamp_add(t: Timestamp, d: Duration) -> Timestamp:
    return Timestamp(t.nanos + d.nanos, t.offset)  # in the zone it was written in, as Go


def _checked_duration(nanos: int) -> Duration:
    if nanos < INT64_MIN or nanos > INT64_MAX:
        raise CELEvalError("duration overflow")
    return Duration(nanos)


def _timestamp_difference(a: Timestamp, b: Timestamp) -> Duration:
    # cel-go subtracts the whole seconds and scales them to nanoseconds before it adds the
    # fractions: a difference near ±2^63 ns can overflow there on the way, so it does here
    seconds = a.nanos // NANOS_PER_SECOND - b.nanos // NANOS_PER_SECOND
    if not INT64_MIN <= seconds * NANOS_PER_SECOND <= INT64_MAX:
        raise CELEvalError("duration overflow")
    return _checked_duration(a.nanos - b.nanos)


_ADD: Final[dict[tuple[type, type], BinaryFn]] = {
    (int, int): lambda a, b: _int_result(a + b),  # type: ignore[operator]
    (UInt, UInt): lambda a, b: _uint_result(a + b),  # type: ignore[operator]
    (float, float): lambda a, b: a + b,  # type: ignore[operator]
    (str, str): lambda a, b: a + b,  # type: ignore[operator]
    (bytes, bytes): lambda a, b: a + b,  # type: ignore[operator]
    (list, list): lambda a, b: [*a, *b],  # type: ignore[misc]
    (list, tuple): lambda a, b: [*a, *b],  # type: ignore[misc]
    (tuple, list): lambda a, b: [*a, *b],  # type: ignore[misc]
    (tuple, tuple): lambda a, b: [*a, *b],  # type: ignore[misc]
    (Duration, Duration): lambda a, b: _checked_duration(a.nanos + b.nanos),  # type: ignore[attr-defined]
    (Timestamp, Duration): _timestamp_add,  # type: ignore[dict-item]
    (Duration, Timestamp): lambda a, b: _timestamp_add(b, a),  # type: ignore[arg-type]
}

_SUB: Final[dict[tuple[type, type], BinaryFn]] = {
    (int, int): lambda a, b: _int_result(a - b),  # type: ignore[operator]
    (UInt, UInt): lambda a, b: _uint_result(a - b),  # type: ignore[operator]
    (float, float): lambda a, b: a - b,  # type: ignore[operator]
    (Duration, Duration): lambda a, b: _checked_duration(a.nanos - b.nanos),  # type: ignore[attr-defined]
    (Timestamp, Duration): lambda a, b: Timestamp(a.nanos - b.nanos, a.offset),  # type: ignore[attr-defined]
    (Timestamp, Timestamp): _timestamp_difference,  # type: ignore[dict-item]
}

_MUL: Final[dict[tuple[type, type], BinaryFn]] = {
    (int, int): lambda a, b: _int_result(a * b),  # type: ignore[operator]
    (UInt, UInt): lambda a, b: _uint_result(a * b),  # type: ignore[operator]
    (float, float): lambda a, b: a * b,  # type: ignore[operator]
}

_DIV: Final[dict[tuple[type, type], BinaryFn]] = {
    (int, int): _int_div,  # type: ignore[dict-item]
    (UInt, UInt): _uint_div,  # type: ignore[dict-item]
    (float, float): _float_div,  # type: ignore[dict-item]
}

_MOD: Final[dict[tuple[type, type], BinaryFn]] = {
    (int, int): _int_mod,  # type: ignore[dict-item]
    (UInt, UInt): _uint_mod,  # type: ignore[dict-item]
}


def _binary(table: dict[tuple[type, type], BinaryFn], symbol: str) -> BinaryFn:
    def apply(a: object, b: object) -> object:
        fn = table.get((type(a), type(b)))
        if fn is None:
            raise no_such_overload(symbol, a, b)
        return fn(a, b)

    return apply


add = _binary(_ADD, "_+_")
sub = _binary(_SUB, "_-_")
mul = _binary(_MUL, "_*_")
div = _binary(_DIV, "_/_")
mod = _binary(_MOD, "_%_")


def negate(a: object) -> object:
    ta = type(a)
    if ta is int:
        return _int_result(-a)  # type: ignore[operator]
    if ta is float:
        return -a  # type: ignore[operator]
    if ta is Duration:
        return _checked_duration(-a.nanos)  # type: ignore[attr-defined]
    raise no_such_overload("-_", a)


# -- ordering ----------------------------------------------------------------------------
_NUMBERS: Final = frozenset((int, UInt, float))
_ORDERED: Final = frozenset((int, UInt, float, str, bytes, bool, Duration, Timestamp))


def compare(a: object, b: object, symbol: str) -> int:
    """-1, 0 or 1; raises for values CEL cannot order. NaN compares as unordered (2)."""
    ta, tb = type(a), type(b)
    if not (ta is tb and ta in _ORDERED):
        if ta not in _NUMBERS or tb not in _NUMBERS:
            raise no_such_overload(symbol, a, b)
        if ta is float or tb is float:  # cel-go compares an int with a double as doubles
            a, b = float(a), float(b)  # type: ignore[arg-type]
    if a < b:  # type: ignore[operator]
        return -1
    if a == b:
        return 0
    if b < a:  # type: ignore[operator]
        return 1
    return 2  # NaN


NAN_UNORDERED: Final = "NaN values cannot be ordered"


def _order(a: object, b: object, symbol: str) -> int:
    """`compare` for the ordering operators, for which NaN is an error (as in Kubernetes;
    the lists library's `max()` and `isSorted()` only skip it)."""
    found = compare(a, b, symbol)
    if found == 2:
        raise CELEvalError(NAN_UNORDERED)
    return found


def less(a: object, b: object) -> bool:
    return _order(a, b, "_<_") == -1


def less_equal(a: object, b: object) -> bool:
    return _order(a, b, "_<=_") <= 0


def greater(a: object, b: object) -> bool:
    return _order(a, b, "_>_") == 1


def greater_equal(a: object, b: object) -> bool:
    return _order(a, b, "_>=_") >= 0


# -- membership and indexing --------------------------------------------------------------
def contains(container: object, item: object) -> bool:
    """`item in container`."""
    tc = type(container)
    if tc is list or tc is tuple:
        if type(item) is str:
            return item in container  # type: ignore[operator]
        return any(cel_equals(item, x) for x in container)  # type: ignore[attr-defined]
    if tc is dict:
        return map_get(container, item)[0]  # type: ignore[arg-type]
    raise no_such_overload("@in", item, container)


def _list_position(items: list[object] | tuple[object, ...], index: object) -> int:
    ti = type(index)
    if ti is int or ti is UInt:
        position = index
    elif ti is float:
        if not index.is_integer():  # type: ignore[attr-defined]
            raise CELEvalError(f"invalid list index: {index}")
        position = int(index)  # type: ignore[call-overload]
    else:
        raise no_such_overload("_[_]", items, index)
    if position < 0 or position >= len(items):  # type: ignore[operator]
        raise CELEvalError(f"index out of range: {index}")
    return position  # type: ignore[return-value]


def index(container: object, key: object) -> object:
    """`container[key]`."""
    tc = type(container)
    if tc is dict:
        if type(key) is str:
            try:
                return container[key]  # type: ignore[index]
            except KeyError:
                raise CELEvalError(f"no such key: {key}") from None
        if type(key) not in _MAP_KEY_TYPES:
            raise no_such_overload("_[_]", container, key)
        found, value = map_get(container, key)  # type: ignore[arg-type]
        if not found:
            raise CELEvalError(f"no such key: {key}")
        return value
    if tc is list or tc is tuple:
        return container[_list_position(container, key)]  # type: ignore[index, arg-type]
    if tc is Optional:
        return optional_index(container, key)
    if isinstance(container, dict) and type(key) is str:
        try:
            return container[key]
        except KeyError:
            raise CELEvalError(f"no such key: {key}") from None
    raise no_such_overload("_[_]", container, key)


_MAP_KEY_TYPES: Final = frozenset((str, int, UInt, bool, float))


def optional_index(container: object, key: object) -> Optional:
    """`container[?key]`: an optional that is empty where the key or index is absent."""
    tc = type(container)
    if tc is Optional:
        if not container.has_value():  # type: ignore[attr-defined]
            return container  # type: ignore[return-value]
        return optional_index(container.value, key)  # type: ignore[attr-defined]
    if tc is dict:
        if type(key) not in _MAP_KEY_TYPES:
            raise no_such_overload("_[?_]", container, key)
        found, value = map_get(container, key)  # type: ignore[arg-type]
        return Optional(value) if found else Optional()
    if tc is list or tc is tuple:
        try:
            return Optional(container[_list_position(container, key)])  # type: ignore[index, arg-type]
        except CELEvalError:
            if type(key) not in _NUMBERS:
                raise
            return Optional()
    raise no_such_overload("_[?_]", container, key)


def select(operand: object, field: str) -> object:
    """`operand.field` on a map (or on an optional, which yields an optional)."""
    if type(operand) is dict:
        try:
            return operand[field]
        except KeyError:
            raise CELEvalError(f"no such key: {field}") from None
    if type(operand) is Optional:
        return optional_select(operand, field)
    if isinstance(operand, dict):  # the engine's lazy maps (variables, nodeInfo)
        try:
            return operand[field]
        except KeyError:
            raise CELEvalError(f"no such key: {field}") from None
    raise CELEvalError(f"type '{type_name(operand)}' does not support field selection")


def optional_select(operand: object, field: str) -> Optional:
    """`operand.?field`."""
    if type(operand) is Optional:
        if not operand.has_value():
            return operand
        operand = operand.value
    if type(operand) is dict:
        value = operand.get(field, _ABSENT)
        return Optional() if value is _ABSENT else Optional(value)
    if isinstance(operand, dict):
        try:
            return Optional(operand[field])
        except KeyError:
            return Optional()
    if type(operand) is list or type(operand) is tuple:
        raise CELEvalError(f"type '{type_name(operand)}' does not support field selection")
    # a value with no fields (known only at run time: `dyn(1).?a`) has none of them, as
    # Kubernetes answers
    return Optional()


def has_field(operand: object, field: str) -> bool:
    """`has(operand.field)`."""
    if isinstance(operand, dict):
        return field in operand
    if type(operand) is Optional:
        return operand.has_value() and has_field(operand.value, field)
    if type(operand) is list or type(operand) is tuple:
        raise CELEvalError(f"invalid type for has(): {type_name(operand)}")
    return False  # a value with no fields (`has(dyn(1).a)`), as Kubernetes answers


_ABSENT: Final = object()
