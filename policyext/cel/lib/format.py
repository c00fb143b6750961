"""`"...".format([args])`: printf-style string formatting, as cel-go's strings extension does it.

Clauses: `%s` (any printable value, lists and maps included), `%d` (integers; doubles print
in plain decimal), `%f` and `%e` with an optional precision (`%.3f`), `%b`, `%o`, `%x`, `%X`,
and `%%` for a percent sign. The values print as cel-go's formatter prints them (the one the
cel-spec conformance tests describe): strings inside lists are not quoted, doubles use the
shortest decimal form that reads back to the same value, durations print as seconds,
timestamps in RFC 3339, and NaN / infinities as `NaN`, `Infinity`, `-Infinity`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Final, TypeGuard

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import CHARS_PER_UNIT, Library
from policyext.cel.lib.strings import go_quote, scan_cost
from policyext.cel.values import (
    NANOS_PER_SECOND,
    CELType,
    Duration,
    Timestamp,
    UInt,
    format_timestamp,
    no_such_overload,
    type_name,
)

FORMAT_LIBRARY: Final = Library("format")

DEFAULT_PRECISION: Final = 6
# Kubernetes' formatter keeps the precision of %f in a byte: from 256 on it prints
# `precision % 256` decimals (and `%!(NOVERB)` past a million), which no rule means;
# policyext refuses such a precision instead (docs/cel.md, the known differences)
MAX_PRECISION: Final = 255


class _FormatError(Exception):
    """A clause that cannot format its argument; the caller prefixes the context."""


def _format_cost(template: object, args: object) -> int:
    size = len(template) if type(template) is str else 0
    if isinstance(args, list | tuple):
        size += len(args)
    return scan_cost(size)


# -- the size of the result, bounded before it is built (functions.py) ---------------------
# Formatting prints the values of its arguments whole, and a list may hold the same big
# value many times (`[big, big, ...]` costs a reference each): what it prints is bounded by
# walking the arguments, which stops as soon as the bound is past what the budget has left
# (the walk of a list holding itself through its elements many times would never end).
_NUMBER_CHARS: Final = 680  # %f of the largest double: 309 digits, 103 commas, 255 decimals
_SCALAR_CHARS: Final = 64  # a bool, an int, a %g double, a duration, a timestamp, a type


def _format_size(room: int, template: object, args: object) -> int:
    if type(template) is not str or not isinstance(args, list | tuple):
        return 0
    limit = (room + 1) * CHARS_PER_UNIT
    chars = len(template)
    for verb, arg in zip(_verbs(template), args, strict=False):
        chars += _clause_chars(verb, arg, limit - chars)
        if chars > limit:
            break
    return chars // CHARS_PER_UNIT


@functools.lru_cache(maxsize=256)  # templates are nearly always constants
def _verbs(template: str) -> tuple[str, ...]:
    """The verb of each clause, in order (what is malformed fails when formatting)."""
    verbs: list[str] = []
    i = template.find("%")
    while 0 <= i < len(template) - 1:
        j = i + 1
        if template[j] == "%":
            i = template.find("%", j + 1)
            continue
        while j < len(template) and (template[j] == "." or "0" <= template[j] <= "9"):
            j += 1
        if j < len(template):
            verbs.append(template[j])
        i = template.find("%", j + 1)
    return tuple(verbs)


def _clause_chars(verb: str, value: object, room: int) -> int:
    if verb == "s":
        return _shown_chars(value, room, member=False)
    if verb in "xX":
        if type(value) is str:
            return 2 * len(value) if value.isascii() else 8 * len(value)
        if type(value) is bytes:
            return 2 * len(value)
    return _NUMBER_CHARS


def _shown_chars(value: object, room: int, *, member: bool) -> int:
    """At least as many characters as `%s` prints for `value` (`member`: inside a list or
    map, where strings are quoted); past `room`, any number past it."""
    if isinstance(value, str | bytes):
        if not member:
            return len(value)
        # quoted: an escape takes at most 4 characters for ASCII, 10 for the rest
        per = 4 if isinstance(value, str) and value.isascii() else 10
        return per * len(value) + 3
    if isinstance(value, float) and member and math.isfinite(value) and abs(value) >= 1e15:
        return _NUMBER_CHARS  # six decimals after every digit of a big double
    if isinstance(value, list | tuple):
        chars = 2
        for item in value:
            chars += _shown_chars(item, room - chars, member=True) + 2
            if chars > room:
                break
        return chars
    if isinstance(value, dict):
        chars = 2
        for key, item in value.items():
            chars += _shown_chars(key, room, member=True)
            chars += _shown_chars(item, room - chars, member=True) + 3
            if chars > room:
                break
        return chars
    return _SCALAR_CHARS


@FORMAT_LIBRARY.member(
    "format", 1, receiver=str, result="string", cost=_format_cost, size=_format_size
)
def format_string(template: str, args: object) -> str:
    if not isinstance(args, list | tuple):
        raise no_such_overload("format", template, args)
    out: list[str] = []
    i, n, arg_index = 0, len(template), 0
    while i < n:
        c = template[i]
        if c != "%":
            # copy the literal run up to the next clause in one piece
            j = template.find("%", i)
            j = n if j < 0 else j
            out.append(template[i:j])
            i = j
            continue
        if i + 1 < n and template[i + 1] == "%":
            out.append("%")
            i += 2
            continue
        if arg_index >= len(args):
            raise CELEvalError(f"index {arg_index} out of range")
        if i + 1 >= n:
            raise CELEvalError("unexpected end of string")
        try:
            consumed, clause = _parse_clause(template, i + 1)
        except _FormatError as e:
            raise CELEvalError(f"could not parse formatting clause: {e}") from None
        try:
            out.append(clause(args[arg_index]))
        except _FormatError as e:
            raise CELEvalError(f"error during formatting: {e}") from None
        i += 1 + consumed
        arg_index += 1
    return "".join(out)


Clause = Callable[[object], str]


def _parse_clause(template: str, start: int) -> tuple[int, Clause]:
    """The clause starting at `start` (just past the `%`): characters consumed, formatter."""
    i = start
    precision = DEFAULT_PRECISION
    if template[i] == ".":
        i += 1
        digits_start = i
        while i < len(template) and "0" <= template[i] <= "9":
            i += 1
        if i >= len(template):
            raise _FormatError(
                "error while parsing precision: could not find end of precision specifier"
            )
        digits = template[digits_start:i]
        if not digits:
            raise _FormatError(
                "error while parsing precision: error while converting precision to integer: "
                f"invalid syntax {digits!r}"
            )
        precision = int(digits)
        if precision > MAX_PRECISION:
            raise _FormatError(
                f"error while parsing precision: precision {precision} exceeds maximum "
                f"allowed precision {MAX_PRECISION}"
            )
    verb = template[i]
    consumed = i + 1 - start
    if verb == "s":
        return consumed, format_value
    if verb == "d":
        return consumed, _decimal
    if verb == "f":
        return consumed, lambda v: _fixed(v, precision)
    if verb == "e":
        return consumed, lambda v: _scientific(v, precision)
    if verb == "b":
        return consumed, _binary
    if verb == "o":
        return consumed, _octal
    if verb == "x":
        return consumed, lambda v: _hex(v, upper=False)
    if verb == "X":
        return consumed, lambda v: _hex(v, upper=True)
    raise _FormatError(f'unrecognized formatting clause "{verb}"')


# -- %s -----------------------------------------------------------------------------------
def format_value(value: object) -> str:
    """A value as `%s` prints it."""
    # bool before int: True is an int to Python
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return _go_g(value)
    if isinstance(value, bytes):
        return _utf8(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_member(v) for v in value) + "]"
    if isinstance(value, dict):
        entries = sorted((_key(k), _member(v)) for k, v in value.items())
        return "{" + ", ".join(f"{k}:{v}" for k, v in entries) + "}"
    if isinstance(value, Duration):
        return _format_seconds(value) + "s"
    if isinstance(value, Timestamp):
        return _format_rfc3339(value)
    if isinstance(value, CELType):
        return value.name
    raise _FormatError(
        "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
        f"types, durations, and timestamps, was given {type_name(value)}"
    )


def _member(value: object) -> str:
    """An element of a list or a map's value inside `%s`: strings and bytes quoted, doubles
    with six decimals, durations and timestamps as the calls that make them."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bytes):
        return "b" + go_quote(_utf8(value))
    if isinstance(value, float):
        text = _go_fixed(value, DEFAULT_PRECISION)
        return f'"{text}"' if math.isnan(value) or math.isinf(value) else text
    if isinstance(value, Timestamp):
        return f'timestamp("{_format_rfc3339(value)}")'
    if isinstance(value, Duration):
        return f'duration("{_format_seconds(value)}s")'
    return format_value(value)


def _utf8(value: bytes) -> str:
    """Bytes as the text they encode: Kubernetes' formatter refuses bytes that are not
    UTF-8 rather than print replacement characters."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise _FormatError(
            'could not convert argument "invalid UTF-8 in bytes, cannot convert to string"'
            " to string"
        ) from None


def _key(value: object) -> str:
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool) or _is_integer(value):
        return format_value(value)
    raise _FormatError(f"no formatting function for map key of type {type_name(value)}")


def _go_special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return None


def _go_g(value: float) -> str:
    """Go's %g: the shortest digits that read back as `value`, in exponent form when the
    exponent is below -4 or at least 6."""
    special = _go_special(value)
    if special is not None:
        return special
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exponent)  # where the decimal point goes
    minus = "-" if sign else ""
    if point - 1 < -4 or point - 1 >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{minus}{mantissa}e{'-' if point - 1 < 0 else '+'}{abs(point - 1):02d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{minus}{text}{'0' * (point - len(text))}"
    return f"{minus}{text[:point]}.{text[point:]}"


def _go_fixed(value: float, precision: int) -> str:
    return _go_special(value) or f"{value:.{precision}f}"


def _format_seconds(d: Duration) -> str:
    # as Go's Duration.Seconds(): whole seconds and nanoseconds, each converted to a double
    whole, frac = divmod(abs(d.nanos), NANOS_PER_SECOND)
    sign = -1 if d.nanos < 0 else 1
    number = sign * (float(whole) + float(frac) / 1e9)
    text = format(Decimal(repr(number)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _format_rfc3339(t: Timestamp) -> str:
    return format_timestamp(t)  # Go's RFC3339Nano, in the zone offset it was written with


# -- numeric clauses ----------------------------------------------------------------------
def _is_integer(value: object) -> TypeGuard[int]:
    """An int or a uint; not a bool, though Python counts it as an int."""
    return type(value) is int or type(value) is UInt


def _decimal(value: object) -> str:
    if _is_integer(value):
        return str(int(value))
    raise _FormatError(f"decimal clause can only be used on integers, was given {type_name(value)}")


_SPECIAL_STRINGS: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _as_double(value: object, clause: str) -> float:
    if type(value) is float:
        return value
    if type(value) is str and value in _SPECIAL_STRINGS:
        return _SPECIAL_STRINGS[value]
    raise _FormatError(f"{clause} clause can only be used on doubles, was given {type_name(value)}")


def _fixed(value: object, precision: int) -> str:
    """As Kubernetes prints it: the digits grouped by thousands (an English locale), and
    no sign on a negative zero (a negative number that rounds to zero keeps its own)."""
    number = _as_double(value, "fixed-point")
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "∞" if number > 0 else "-∞"
    return f"{number or 0.0:,.{precision}f}"


_SUPERSCRIPTS: Final = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _scientific(value: object, width: int) -> str:
    """As Kubernetes prints it: six decimals whatever the precision asked (its formatter
    reads it as a width: the text is padded with spaces on the left to that many
    characters, `NaN` to `   NaN` by default), then `×10` and the exponent in superscript
    digits; no sign on a negative zero."""
    number = _as_double(value, "scientific")
    if math.isnan(number):
        return "NaN".rjust(width)
    if math.isinf(number):
        return ("∞" if number > 0 else "-∞").rjust(width)
    mantissa, exponent = f"{number or 0.0:.{DEFAULT_PRECISION}e}".split("e")
    power = int(exponent)
    digits = f"{'-' if power < 0 else ''}{abs(power):02d}"
    return f"{mantissa}×10{digits.translate(_SUPERSCRIPTS)}".rjust(width)


def _binary(value: object) -> str:
    if type(value) is bool:
        return "1" if value else "0"
    if _is_integer(value):
        return format(int(value), "b")
    raise _FormatError(
        f"only integers and bools can be formatted as binary, was given {type_name(value)}"
    )


def _octal(value: object) -> str:
    if _is_integer(value):
        return format(int(value), "o")
    raise _FormatError(f"octal clause can only be used on integers, was given {type_name(value)}")


def _hex(value: object, *, upper: bool) -> str:
    if _is_integer(value):
        text = format(int(value), "x")
    elif type(value) is str:
        text = value.encode("utf-8", errors="surrogatepass").hex()
    elif type(value) is bytes:
        text = value.hex()
    else:
        raise _FormatError(
            "only integers, byte buffers, and strings can be formatted as hex, "
            f"was given {type_name(value)}"
        )
    return text.upper() if upper else text


# -- the check of a constant format string ------------------------------------------------
_STRING_KINDS: Final = frozenset(
    (
        "string",
        "bytes",
        "bool",
        "null_type",
        "type",
        "int",
        "uint",
        "double",
        "list",
        "map",
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
    )
)
_INTEGERS: Final = frozenset(("int", "uint"))
_HEX: Final = _INTEGERS | {"string", "bytes"}
_CLAUSE_KINDS: Final = {
    "s": (
        "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
        "types, durations, and timestamps",
        _STRING_KINDS,
    ),
    "d": ("decimal clause can only be used on integers", _INTEGERS),
    # a string is checked when formatted: 'NaN', 'Infinity' and '-Infinity' are doubles
    "f": ("fixed-point clause can only be used on doubles", frozenset(("double", "string"))),
    "e": ("scientific clause can only be used on doubles", frozenset(("double", "string"))),
    "b": ("only integers and bools can be formatted as binary", _INTEGERS | {"bool"}),
    "o": ("octal clause can only be used on integers", _INTEGERS),
    "x": ("only integers, byte buffers, and strings can be formatted as hex", _HEX),
    "X": ("only integers, byte buffers, and strings can be formatted as hex", _HEX),
}


def check_format(template: str, kinds: list[str]) -> str | None:
    """What is wrong with `template.format([...])` given the kinds of the list's elements
    (`dyn` where unknown), as Kubernetes checks a constant format string when the
    expression is compiled; None when nothing is."""
    i, n, used = 0, len(template), 0
    while i < n:
        if template[i] != "%":
            i += 1
            continue
        if i + 1 < n and template[i + 1] == "%":
            i += 2
            continue
        if i + 1 >= n:
            return "unexpected end of string"
        try:
            consumed, _ = _parse_clause(template, i + 1)
        except _FormatError as e:
            return f"could not parse formatting clause: {e}"
        if used >= len(kinds):
            return f"index {used} out of range"
        rule, accepted = _CLAUSE_KINDS[template[i + consumed]]
        kind = kinds[used]
        if kind != "dyn" and kind not in accepted:
            return f"error during formatting: {rule}, was given {kind}"
        used += 1
        i += 1 + consumed
    if len(kinds) > used:
        return f"too many arguments supplied to string.format (expected {used}, got {len(kinds)})"
    return None
