"""The CEL standard library: conversions, size, string tests, time accessors, optionals."""

from __future__ import annotations

import math
import re
from typing import Final

from policyext.cel.civil import CivilTime
from policyext.cel.errors import CELEvalError
from policyext.cel.functions import Library
from policyext.cel.timeutil import local_time, parse_duration, parse_timestamp
from policyext.cel.values import (
    INT64_MAX,
    INT64_MIN,
    NANOS_PER_SECOND,
    OPTIONAL_NONE,
    TIMESTAMP_MIN_SECONDS,
    UINT64_MAX,
    CELType,
    Duration,
    Optional,
    Timestamp,
    UInt,
    cel_type_of,
    format_duration,
    format_timestamp,
    no_such_overload,
)

STANDARD_LIBRARY: Final = Library("standard")
_std = STANDARD_LIBRARY


def _text_cost(*args: object) -> int:
    return sum(len(a) for a in args if isinstance(a, str | bytes)) // 10


# -- size ---------------------------------------------------------------------------------
_SIZED: Final = (str, bytes, list, tuple, dict)


@_std.function("size", 1, result="int", params=("string|bytes|list|map",))
def size(value: object) -> int:
    if type(value) in _SIZED:
        return len(value)  # type: ignore[arg-type]
    raise no_such_overload("size", value)


@_std.member("size", 0, receiver=_SIZED, result="int")
def size_member(value: object) -> int:
    return len(value)  # type: ignore[arg-type]


# -- strings ------------------------------------------------------------------------------
def _strings(name: str, a: object, b: object) -> tuple[str, str]:
    if type(a) is not str or type(b) is not str:
        raise no_such_overload(name, a, b)
    return a, b


@_std.member("contains", 1, receiver=str, result="bool", cost=_text_cost, params=("string",))
def contains(s: str, sub: object) -> bool:
    return sub in s if type(sub) is str else _fail("contains", s, sub)


@_std.member("startsWith", 1, receiver=str, result="bool", cost=_text_cost, params=("string",))
def starts_with(s: str, prefix: object) -> bool:
    a, b = _strings("startsWith", s, prefix)
    return a.startswith(b)


@_std.member("endsWith", 1, receiver=str, result="bool", cost=_text_cost, params=("string",))
def ends_with(s: str, suffix: object) -> bool:
    a, b = _strings("endsWith", s, suffix)
    return a.endswith(b)


def _fail(name: str, *args: object) -> bool:
    raise no_such_overload(name, *args)


# -- conversions --------------------------------------------------------------------------
@_std.function(
    "int",
    1,
    result="int",
    params=("int|uint|double|string|google.protobuf.Timestamp|google.protobuf.Duration",),
)
def to_int(value: object) -> int:
    t = type(value)
    if t is int:
        return value  # type: ignore[return-value]
    if t is UInt:
        if value > INT64_MAX:  # type: ignore[operator]
            raise CELEvalError("int overflow")
        return int(value)  # type: ignore[call-overload, no-any-return]
    if t is float:
        if math.isnan(value) or not -(2.0**63) < value < 2.0**63:  # type: ignore[arg-type, operator]
            raise CELEvalError("int overflow")
        return int(value)  # type: ignore[call-overload, no-any-return]
    if t is str:
        if not _INT_TEXT.fullmatch(value):  # type: ignore[call-overload]
            raise CELEvalError(f"cannot convert {value!r} to int")
        result = int(value)  # type: ignore[call-overload]
        if result < INT64_MIN or result > INT64_MAX:
            raise CELEvalError(f"cannot convert {value!r} to int: out of range")
        return result  # type: ignore[no-any-return]
    if t is Timestamp:
        return value.nanos // NANOS_PER_SECOND  # type: ignore[attr-defined, no-any-return]
    if t is Duration:
        return value.nanos  # type: ignore[attr-defined, no-any-return]
    raise no_such_overload("int", value)


@_std.function("uint", 1, result="uint", params=("int|uint|double|string",))
def to_uint(value: object) -> UInt:
    t = type(value)
    if t is UInt:
        return value  # type: ignore[return-value]
    if t is int:
        if value < 0:  # type: ignore[operator]
            raise CELEvalError("uint overflow")
        return UInt(value)  # type: ignore[call-overload, no-any-return]
    if t is float:
        if math.isnan(value) or not 0.0 <= value < 2.0**64:  # type: ignore[arg-type, operator]
            raise CELEvalError("uint overflow")
        return UInt(int(value))  # type: ignore[call-overload]
    if t is str:
        if not _UINT_TEXT.fullmatch(value):  # type: ignore[call-overload]
            raise CELEvalError(f"cannot convert {value!r} to uint")
        result = int(value)  # type: ignore[call-overload]
        if result > UINT64_MAX:
            raise CELEvalError(f"cannot convert {value!r} to uint: out of range")
        return UInt(result)
    raise no_such_overload("uint", value)


@_std.function("double", 1, result="double", params=("int|uint|double|string",))
def to_double(value: object) -> float:
    t = type(value)
    if t is float:
        return value  # type: ignore[return-value]
    if t is int or t is UInt:
        return float(value)  # type: ignore[arg-type]
    if t is str:
        return _parse_double(value)  # type: ignore[arg-type]
    raise no_such_overload("double", value)


# What Go's strconv accepts, in ASCII only: Python's int() and float() also read other
# scripts' digits, spaces and underscores, which CEL does not.
_INT_TEXT: Final = re.compile(r"[+-]?[0-9]+")
_UINT_TEXT: Final = re.compile(r"[0-9]+")
# Go's strconv.ParseFloat: a decimal or hexadecimal (`0x1p-2`, its exponent required)
# mantissa of at least one digit; underscores between digits (`1_000.5`), checked apart
_DOUBLE_TEXT: Final = re.compile(
    r"[+-]?(?:0[xX](?P<hex>[0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?)[pP][+-]?[0-9][0-9_]*"
    r"|(?P<dec>[0-9_]*(?:\.[0-9_]*)?)(?:[eE][+-]?[0-9][0-9_]*)?)"
)
_INFINITIES: Final = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf}


def _parse_double(text: str) -> float:
    lowered = text.lower().replace("infinity", "inf")
    if lowered in _INFINITIES:
        return _INFINITIES[lowered]
    if lowered == "nan":
        return math.nan
    m = _DOUBLE_TEXT.fullmatch(text)
    mantissa = m and (m.group("hex") if m.group("hex") is not None else m.group("dec"))
    if (
        not mantissa
        or not any(c not in "._" for c in mantissa)
        or ("_" in text and not _underscores_between_digits(text))
    ):
        raise CELEvalError(f"cannot convert {text!r} to double")
    plain = text.replace("_", "")
    try:
        result = float.fromhex(plain) if m.group("hex") is not None else float(plain)  # type: ignore[union-attr]
    except OverflowError:
        result = math.inf
    if math.isinf(result):
        # a number beyond the largest double (`1e400`): Go's ParseFloat refuses it
        raise CELEvalError(f"cannot convert {text!r} to double: out of range")
    return result


def _underscores_between_digits(text: str) -> bool:
    """Go's rule for `_` in a number: each one between two digits (a base prefix counts
    as a digit)."""
    body = text.lstrip("+-")
    hexadecimal = body[:2].lower() == "0x"
    digits = "0123456789abcdefABCDEF" if hexadecimal else "0123456789"
    previous = "0" if hexadecimal else "^"  # the class of the last character seen
    for c in body[2:] if hexadecimal else body:
        if c in digits:
            previous = "0"
        elif c == "_":
            if previous != "0":
                return False
            previous = "_"
        elif previous == "_":
            return False
        else:
            previous = "!"
    return previous != "_"


def format_double(value: float) -> str:
    """A double as cel-go prints it: Go's `%g` with the shortest round-tripping digits."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    exp = point - 1
    # Go switches to the exponent form at exponents below -4 or from 6 on (%g's precision)
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


_STRING_TYPES: Final = frozenset(("net.IP", "net.CIDR"))


@_std.function(
    "string",
    1,
    result="string",
    params=(
        "int|uint|double|string|bytes|bool|google.protobuf.Timestamp|google.protobuf.Duration"
        "|net.IP|net.CIDR",
    ),
)
def to_string(value: object) -> str:
    t = type(value)
    if t is str:
        return value  # type: ignore[return-value]
    if t is int or t is UInt:
        return str(int(value))  # type: ignore[call-overload]
    if t is float:
        return format_double(value)  # type: ignore[arg-type]
    if t is bool:
        return "true" if value else "false"
    if t is bytes:
        try:
            return value.decode("utf-8")  # type: ignore[attr-defined, no-any-return]
        except UnicodeDecodeError:
            raise CELEvalError("invalid UTF-8 in bytes, cannot convert to string") from None
    if t is Timestamp:
        return format_timestamp(value)  # type: ignore[arg-type]
    if t is Duration:
        return format_duration(value)  # type: ignore[arg-type]
    if getattr(t, "cel_type_name", None) in _STRING_TYPES:
        return str(value)
    raise no_such_overload("string", value)


@_std.function("bytes", 1, result="bytes", params=("string|bytes",))
def to_bytes(value: object) -> bytes:
    if type(value) is bytes:
        return value
    if type(value) is str:
        return value.encode("utf-8")
    raise no_such_overload("bytes", value)


_BOOL_STRINGS: Final = {
    **dict.fromkeys(("1", "t", "T", "true", "TRUE", "True"), True),
    **dict.fromkeys(("0", "f", "F", "false", "FALSE", "False"), False),
}


@_std.function("bool", 1, result="bool", params=("bool|string",))
def to_bool(value: object) -> bool:
    if type(value) is bool:
        return value
    if type(value) is str:
        try:
            return _BOOL_STRINGS[value]
        except KeyError:
            raise CELEvalError(f"cannot convert {value!r} to bool") from None
    raise no_such_overload("bool", value)


@_std.function("dyn", 1)
def to_dyn(value: object) -> object:
    return value


@_std.function("type", 1, result="type")
def type_of(value: object) -> CELType:
    return cel_type_of(value)


@_std.function(
    "duration", 1, result="google.protobuf.Duration", params=("string|google.protobuf.Duration",)
)
def to_duration(value: object) -> Duration:
    if type(value) is Duration:
        return value
    if type(value) is str:
        return parse_duration(value)
    raise no_such_overload("duration", value)


@_std.function(
    "timestamp",
    1,
    result="google.protobuf.Timestamp",
    params=("string|int|google.protobuf.Timestamp",),
)
def to_timestamp(value: object) -> Timestamp:
    t = type(value)
    if t is Timestamp:
        return value  # type: ignore[return-value]
    if t is str:
        return parse_timestamp(value)  # type: ignore[arg-type]
    if t is int:
        return Timestamp(value * NANOS_PER_SECOND)  # type: ignore[operator]
    raise no_such_overload("timestamp", value)


# -- time accessors -----------------------------------------------------------------------
def _timestamp_accessor(name: str, part: str) -> None:
    def read(ts: object, tz: object | None = None) -> int:
        if type(ts) is not Timestamp:
            raise no_such_overload(name, ts)
        if tz is not None:
            if type(tz) is not str:
                raise no_such_overload(name, ts, tz)
            local = local_time(ts, tz)  # an unknown zone fails every accessor
            return _millis(ts) if part == "milliseconds" else _civil_part(local, part)
        if part == "milliseconds":
            return _millis(ts)
        dt = ts.to_datetime()
        if part == "year":
            return dt.year
        if part == "month":
            return dt.month - 1
        if part == "dayOfYear":
            return dt.timetuple().tm_yday - 1
        if part == "dayOfMonth":
            return dt.day - 1
        if part == "date":
            return dt.day
        if part == "dayOfWeek":
            return (dt.weekday() + 1) % 7
        if part == "hours":
            return dt.hour
        if part == "minutes":
            return dt.minute
        return dt.second

    _std.member(name, 0, receiver=Timestamp, result="int")(read)
    _std.member(name, 1, receiver=Timestamp, result="int", params=("string",))(read)


def _millis(ts: Timestamp) -> int:
    return (ts.nanos % NANOS_PER_SECOND) // 1_000_000


def _civil_part(local: CivilTime, part: str) -> int:
    """A part of a wall-clock time in a zone, numbered as cel-go numbers it."""
    if part == "year":
        return local.year
    if part == "month":
        return local.month - 1
    if part == "dayOfYear":
        return local.day_of_year
    if part == "dayOfMonth":
        return local.day - 1
    if part == "date":
        return local.day
    if part == "dayOfWeek":
        return local.weekday
    if part == "hours":
        return local.hour
    if part == "minutes":
        return local.minute
    return local.second


for _name, _part in (
    ("getFullYear", "year"),
    ("getMonth", "month"),
    ("getDayOfYear", "dayOfYear"),
    ("getDayOfMonth", "dayOfMonth"),
    ("getDate", "date"),
    ("getDayOfWeek", "dayOfWeek"),
    ("getHours", "hours"),
    ("getMinutes", "minutes"),
    ("getSeconds", "seconds"),
    ("getMilliseconds", "milliseconds"),
):
    _timestamp_accessor(_name, _part)


def _duration_accessor(name: str, unit: int, *, modulo: bool = False) -> None:
    def read(d: Duration) -> int:
        nanos = d.nanos
        if modulo:
            sign = -1 if nanos < 0 else 1
            return sign * ((abs(nanos) % NANOS_PER_SECOND) // unit)
        return int(nanos / unit) if nanos < 0 else nanos // unit

    _std.member(name, 0, receiver=Duration, result="int")(read)


_duration_accessor("getHours", 3600 * NANOS_PER_SECOND)
_duration_accessor("getMinutes", 60 * NANOS_PER_SECOND)
_duration_accessor("getSeconds", NANOS_PER_SECOND)
# Kubernetes (cel-go) counts all the duration's milliseconds; cel-spec's conformance tests
# take the milliseconds within the second (a behaviour they call deprecated)
_duration_accessor("getMilliseconds", 1_000_000)


# -- optionals ----------------------------------------------------------------------------
@_std.function("optional.of", 1, result="optional_type")
def optional_of(value: object) -> Optional:
    return Optional(value)


@_std.function("optional.none", 0, result="optional_type")
def optional_none() -> Optional:
    return OPTIONAL_NONE


_ZERO_VALUES: Final = (0, 0.0, "", b"", False, None)
# Go's zero time.Time, which cel-go's zero timestamp is: 0001-01-01T00:00:00Z, not the epoch
_ZERO_TIMESTAMP_NANOS: Final = TIMESTAMP_MIN_SECONDS * NANOS_PER_SECOND


@_std.function("optional.ofNonZeroValue", 1, result="optional_type")
def optional_of_non_zero(value: object) -> Optional:
    t = type(value)
    if value is None or (t in (int, UInt, float, str, bytes, bool) and not value):
        return OPTIONAL_NONE
    if t in (list, tuple, dict) and not value:
        return OPTIONAL_NONE
    if t is Duration and value.nanos == 0:  # type: ignore[attr-defined]
        return OPTIONAL_NONE
    if t is Timestamp and value.nanos == _ZERO_TIMESTAMP_NANOS:  # type: ignore[attr-defined]
        return OPTIONAL_NONE
    return Optional(value)


def _unwrapped(name: str, items: object) -> list[object]:
    if not isinstance(items, list | tuple):
        raise no_such_overload(name, items)
    out: list[object] = []
    for item in items:
        if type(item) is not Optional:
            raise CELEvalError(f"value {item!r} is not optional")
        if item.has_value():
            out.append(item.value)
    return out


@_std.function("optional.unwrap", 1, result="list")
def optional_unwrap(items: object) -> list[object]:
    """The values of a list of optionals, the empty ones left out."""
    return _unwrapped("optional.unwrap", items)


@_std.member("unwrapOpt", 0, receiver=(list, tuple), result="list")
def unwrap_opt(items: object) -> list[object]:
    return _unwrapped("unwrapOpt", items)


@_std.member("hasValue", 0, receiver=Optional, result="bool")
def has_value(opt: Optional) -> bool:
    return opt.has_value()


@_std.member("value", 0, receiver=Optional)
def optional_value(opt: Optional) -> object:
    if not opt.has_value():
        raise CELEvalError("optional.none() dereference")
    return opt.value


@_std.member("orValue", 1, receiver=Optional)
def or_value(opt: Optional, default: object) -> object:
    return opt.value if opt.has_value() else default


@_std.member("or", 1, receiver=Optional, result="optional_type")
def optional_or(opt: Optional, other: object) -> object:
    if opt.has_value():
        return opt
    if type(other) is not Optional:
        raise no_such_overload("or", opt, other)
    return other
