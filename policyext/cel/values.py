"""Runtime values of CEL, as plain Python values wherever possible.

The JSON types are represented by themselves, so decoded JSON is evaluated without conversion:

| CEL       | Python                          |
|-----------|---------------------------------|
| null      | None                            |
| bool      | bool                            |
| int       | int (never bool: check with `type(x) is int`) |
| uint      | UInt (a subclass of int)        |
| double    | float                           |
| string    | str (indexed by code point)     |
| bytes     | bytes                           |
| list      | list (tuples are accepted as input) |
| map       | dict                            |
| duration  | Duration                        |
| timestamp | Timestamp                       |
| optional  | Optional                        |
| type      | CELType                         |

Library value types (Quantity, IP, CIDR, Semver, URL) live with their libraries and declare
their CEL type name in the class attribute `cel_type_name`.
"""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any, ClassVar, Final

from policyext.cel.civil import civil_from_seconds
from policyext.cel.errors import CELEvalError

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
UINT64_MAX: Final = 2**64 - 1


class UInt(int):
    """A CEL uint: an int that remembers it is unsigned."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


def make_uint(value: int) -> UInt:
    if value < 0 or value > UINT64_MAX:
        raise CELEvalError("uint overflow")
    return UInt(value)


def check_int(value: int) -> int:
    if value < INT64_MIN or value > INT64_MAX:
        raise CELEvalError("int overflow")
    return value


class CELType:
    """A CEL type as a value: what `type(x)` returns and what `int`, `string`... denote."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return type(other) is CELType and other.name == self.name

    def __hash__(self) -> int:
        return hash(("CELType", self.name))

    def __repr__(self) -> str:
        return self.name


NANOS_PER_SECOND: Final = 1_000_000_000
# google.protobuf.Duration allows about +-10,000 years
DURATION_MAX_SECONDS: Final = 315_576_000_000
# 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z as seconds since the epoch
TIMESTAMP_MIN_SECONDS: Final = -62_135_596_800
TIMESTAMP_MAX_SECONDS: Final = 253_402_300_799


class Duration:
    """A signed span of time with nanosecond precision."""

    __slots__ = ("nanos",)
    cel_type_name: ClassVar[str] = "google.protobuf.Duration"

    def __init__(self, nanos: int) -> None:
        if abs(nanos) > (DURATION_MAX_SECONDS + 1) * NANOS_PER_SECOND - 1:
            raise CELEvalError("duration out of range")
        self.nanos = nanos

    def __eq__(self, other: object) -> bool:
        return type(other) is Duration and other.nanos == self.nanos

    def __lt__(self, other: Duration) -> bool:
        return self.nanos < other.nanos

    def __hash__(self) -> int:
        return hash(("Duration", self.nanos))

    def __repr__(self) -> str:
        return f"duration({format_duration(self)!r})"


def format_duration(d: Duration) -> str:
    """As Kubernetes (cel-go) writes a duration: its seconds as the shortest decimal that
    reads back as the same double, then `s` (`1.5s`, `-90s`, `0.000000001s`)."""
    whole, part = divmod(abs(d.nanos), NANOS_PER_SECOND)
    seconds = float(whole) + float(part) / 1e9  # Go's Duration.Seconds()
    text = format(decimal.Decimal(repr(seconds)).normalize(), "f")
    return f"{'-' if d.nanos < 0 and seconds else ''}{text}s"


_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


class Timestamp:
    """A point in time (UTC) with nanosecond precision, in the protobuf Timestamp range."""

    __slots__ = ("nanos", "offset")
    cel_type_name: ClassVar[str] = "google.protobuf.Timestamp"

    def __init__(self, nanos: int, offset: int = 0) -> None:
        seconds = nanos // NANOS_PER_SECOND
        if seconds < TIMESTAMP_MIN_SECONDS or seconds > TIMESTAMP_MAX_SECONDS:
            raise CELEvalError("timestamp out of range")
        self.nanos = nanos
        # the zone offset it was written with, in seconds east of UTC: kept for its text
        # (`string()` writes it back, as Kubernetes does); the instant alone compares
        self.offset = offset

    @classmethod
    def from_datetime(cls, value: datetime.datetime) -> Timestamp:
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        delta = value - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return cls(micros * 1000)

    def to_datetime(self, tz: datetime.tzinfo = datetime.UTC) -> datetime.datetime:
        micros = self.nanos // 1000
        return (_EPOCH + datetime.timedelta(microseconds=micros)).astimezone(tz)

    def __eq__(self, other: object) -> bool:
        return type(other) is Timestamp and other.nanos == self.nanos

    def __lt__(self, other: Timestamp) -> bool:
        return self.nanos < other.nanos

    def __hash__(self) -> int:
        return hash(("Timestamp", self.nanos))

    def __repr__(self) -> str:
        return f"timestamp({format_timestamp(self)!r})"


def format_timestamp(t: Timestamp) -> str:
    """RFC 3339 as Kubernetes (Go's RFC3339Nano) writes it: in the offset the timestamp was
    written with (`Z` for UTC), the fraction's trailing zeros dropped."""
    offset = t.offset
    seconds, nanos = divmod(t.nanos + offset * NANOS_PER_SECOND, NANOS_PER_SECOND)
    dt = civil_from_seconds(seconds)  # its year may be 0 or 10000 in a zone far from UTC
    text = (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    )
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    if not offset:
        return text + "Z"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return f"{text}{'-' if offset < 0 else '+'}{hours:02d}:{minutes:02d}"


class Optional:
    """A CEL optional value: either holds a value or is empty (`optional.none()`)."""

    __slots__ = ("value",)
    cel_type_name: ClassVar[str] = "optional_type"
    _ABSENT: ClassVar[Any] = object()

    def __init__(self, value: object = _ABSENT) -> None:
        self.value = value

    def has_value(self) -> bool:
        return self.value is not Optional._ABSENT

    def __eq__(self, other: object) -> bool:
        if type(other) is not Optional:
            return False
        if not self.has_value() or not other.has_value():
            return self.has_value() == other.has_value()
        return cel_equals(self.value, other.value)

    def __hash__(self) -> int:
        return hash(("Optional", self.has_value()))

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.has_value() else "optional.none()"


OPTIONAL_NONE: Final = Optional()

# The type names of the plain Python representations.
_TYPE_NAMES: Final[dict[type, str]] = {
    type(None): "null_type",
    bool: "bool",
    int: "int",
    UInt: "uint",
    float: "double",
    str: "string",
    bytes: "bytes",
    list: "list",
    tuple: "list",
    dict: "map",
    CELType: "type",
}


def type_name(value: object) -> str:
    """The CEL type name of a runtime value."""
    name = _TYPE_NAMES.get(type(value))
    if name is not None:
        return name
    declared = getattr(type(value), "cel_type_name", None)
    if isinstance(declared, str):
        return declared
    return type(value).__name__


def kind_of_class(cls: type) -> str:
    """The CEL type name of the values of a Python class (`str` -> `string`)."""
    name = _TYPE_NAMES.get(cls)
    if name is not None:
        return name
    declared = getattr(cls, "cel_type_name", None)
    return declared if isinstance(declared, str) else cls.__name__


def no_such_overload(name: str, *args: object) -> CELEvalError:
    """The error of a function applied to arguments of types it does not accept."""
    kinds = ", ".join(type_name(a) for a in args)
    return CELEvalError(f"no such overload: {name}({kinds})")


def cel_type_of(value: object) -> CELType:
    return CELType(type_name(value))


_NUMBER_TYPES: Final = (int, UInt, float)


def cel_equals(a: object, b: object) -> bool:
    """CEL equality: numbers compare by value across int, uint and double; otherwise the
    types must match; lists and maps compare element by element."""
    ta, tb = type(a), type(b)
    if ta is tb:
        if ta is list or ta is tuple:
            return _lists_equal(a, b)  # type: ignore[arg-type]
        if ta is dict:
            return _maps_equal(a, b)  # type: ignore[arg-type]
        return a == b
    if ta in _NUMBER_TYPES and tb in _NUMBER_TYPES:
        if ta is float or tb is float:  # compared as doubles, as cel-go does
            return float(a) == float(b)  # type: ignore[arg-type]
        return a == b
    if (ta is list or ta is tuple) and (tb is list or tb is tuple):
        return _lists_equal(a, b)  # type: ignore[arg-type]
    return False


def _lists_equal(
    a: list[object] | tuple[object, ...], b: list[object] | tuple[object, ...]
) -> bool:
    if len(a) != len(b):
        return False
    return all(cel_equals(x, y) for x, y in zip(a, b, strict=True))


def _maps_equal(a: dict[object, object], b: dict[object, object]) -> bool:
    if len(a) != len(b):
        return False
    for key, value in a.items():
        found, other = map_get(b, key)
        if not found or not cel_equals(value, other):
            return False
    return True


_MISSING: Final = object()


def map_get(m: dict[object, object], key: object) -> tuple[bool, object]:
    """Look a key up in a CEL map. Numeric keys match across int, uint and integral double;
    a bool key only matches a bool key (Python would let `True` find `1`)."""
    tk = type(key)
    if tk is str:
        value = m.get(key, _MISSING)
        return (value is not _MISSING, value)
    if tk is bool:
        for k, v in m.items():
            if type(k) is bool and k == key:
                return (True, v)
        return (False, None)
    if tk is float and not key.is_integer():  # type: ignore[attr-defined]
        if math.isnan(key):  # type: ignore[arg-type]  # NaN is no key, not even itself (Python would find the same object)
            return (False, None)
        value = m.get(key, _MISSING)  # a key of a double (Kubernetes accepts them)
        return (value is not _MISSING, value)
    value = m.get(key, _MISSING)
    if value is _MISSING:
        return (False, None)
    if key in (0, 1):
        # `1` must not find the key `True`: look for a key of a number type
        for k, v in m.items():
            if k == key and type(k) is not bool:
                return (True, v)
        return (False, None)
    return (True, value)
