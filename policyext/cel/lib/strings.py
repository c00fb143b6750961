"""The string extension functions Kubernetes enables (cel-go's `ext.Strings`).

Indexes count code points, as CEL's `size()` does. Out-of-range indexes are errors worded
as cel-go words them (`index out of range: 30`), since policies and their tests may match
on them; that includes a search offset past the end of the string, as in the cel-go release
Kubernetes 1.34 ships (later releases return -1 there). `format` has its own module.
"""

from __future__ import annotations

import math
from typing import Final, cast

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import CHARS_PER_UNIT, Library
from policyext.cel.values import no_such_overload

STRINGS_LIBRARY: Final = Library("strings")
_lib = STRINGS_LIBRARY

# cel-go charges 0.1 unit per character scanned
_SCAN_FACTOR: Final = 0.1


def scan_cost(length: int, factor: float = _SCAN_FACTOR) -> int:
    """The cost of scanning `length` characters, rounded up as cel-go rounds it."""
    return math.ceil(length * factor)


def _target_scan_cost(target: object, *_args: object) -> int:
    return scan_cost(len(target)) if isinstance(target, str) else 0


def _target_build_cost(target: object, *_args: object) -> int:
    # scanning the target plus building a result of about the same size
    return scan_cost(len(target), 2 * _SCAN_FACTOR) if isinstance(target, str) else 0


# -- the size of results, known before they are built (functions.py) -----------------------
def text_size(chars: int) -> int:
    """The charge for building a string of `chars` characters."""
    return chars // CHARS_PER_UNIT


def _at_most_target(_room: int, target: object, *_args: object) -> int:
    """A result no longer than the target string (a case change, a trim, a substring)."""
    return len(target) // CHARS_PER_UNIT if type(target) is str else 0


def _replace_size(_room: int, s: object, old: object, new: object, limit: object = -1) -> int:
    """Exactly what the replacement builds: each occurrence grows the string by the
    difference of lengths (str.count finds them without building anything)."""
    if type(s) is not str or type(old) is not str or type(new) is not str:
        return 0
    growth = len(new) - len(old)
    if growth <= 0:
        return text_size(len(s))
    count = s.count(old)  # with an empty `old`: between every two characters and at the ends
    if type(limit) is int and limit >= 0:
        count = min(count, limit)
    return text_size(len(s) + count * growth)


def _split_size(_room: int, s: object, sep: object, limit: object = -1) -> int:
    """The number of parts (a unit each)."""
    if type(s) is not str or type(sep) is not str:
        return 0
    parts = s.count(sep) + 1 if sep else len(s)
    if type(limit) is int and limit >= 0:
        parts = min(parts, limit)
    return parts


def _join_size(_room: int, items: object, sep: object = "") -> int:
    if not isinstance(items, list | tuple):
        return 0
    chars = sum(len(x) for x in items if type(x) is str)
    if type(sep) is str and items:
        chars += len(sep) * (len(items) - 1)
    return text_size(chars)


def _quote_size(_room: int, s: object) -> int:
    # each character is written as at most two (a backslash escape), plus the quotes
    return text_size(2 * len(s) + 2) if type(s) is str else 0


def _out_of_range(index: int) -> CELEvalError:
    return CELEvalError(f"index out of range: {index}")


# -- indexing -----------------------------------------------------------------------------
@_lib.member("charAt", 1, receiver=str, result="string", cost=_target_scan_cost, params=("int",))
def char_at(s: str, index: object) -> str:
    if type(index) is not int:
        raise no_such_overload("charAt", s, index)
    if index < 0 or index > len(s):
        raise _out_of_range(index)
    # the position just past the end is allowed and yields the empty string
    return s[index : index + 1]


@_lib.member("indexOf", 1, receiver=str, result="int", cost=_target_scan_cost, params=("string",))
def index_of(s: str, sub: object) -> int:
    if type(sub) is not str:
        raise no_such_overload("indexOf", s, sub)
    return s.find(sub)


@_lib.member(
    "indexOf",
    2,
    receiver=str,
    result="int",
    cost=_target_scan_cost,
    params=(
        "string",
        "int",
    ),
)
def index_of_from(s: str, sub: object, offset: object) -> int:
    if type(sub) is not str or type(offset) is not int:
        raise no_such_overload("indexOf", s, sub, offset)
    start = offset
    if start < 0:
        raise _out_of_range(start)
    if not sub:
        # the empty string is found where the search starts, clamped to the end
        return min(start, len(s))
    if start >= len(s):
        return -1  # past the end: not found (Kubernetes' cel-go), not an error
    return s.find(sub, start)


@_lib.member(
    "lastIndexOf", 1, receiver=str, result="int", cost=_target_scan_cost, params=("string",)
)
def last_index_of(s: str, sub: object) -> int:
    if type(sub) is not str:
        raise no_such_overload("lastIndexOf", s, sub)
    return s.rfind(sub)


@_lib.member(
    "lastIndexOf",
    2,
    receiver=str,
    result="int",
    cost=_target_scan_cost,
    params=(
        "string",
        "int",
    ),
)
def last_index_of_from(s: str, sub: object, offset: object) -> int:
    """The last match that starts at or before `offset`."""
    if type(sub) is not str or type(offset) is not int:
        raise no_such_overload("lastIndexOf", s, sub, offset)
    last = offset
    if last < 0:
        raise _out_of_range(last)
    if not sub:
        return min(last, len(s))
    if last >= len(s):
        return -1  # past the end: not found (Kubernetes' cel-go), not an error
    return s.rfind(sub, 0, last + len(sub))


@_lib.member(
    "substring",
    1,
    receiver=str,
    result="string",
    cost=_target_scan_cost,
    params=("int",),
    size=_at_most_target,
)
def substring(s: str, start: object) -> str:
    if type(start) is not int:
        raise no_such_overload("substring", s, start)
    if start < 0 or start > len(s):
        raise _out_of_range(start)
    return s[start:]


@_lib.member(
    "substring",
    2,
    receiver=str,
    result="string",
    cost=_target_scan_cost,
    size=_at_most_target,
    params=(
        "int",
        "int",
    ),
)
def substring_range(s: str, start: object, end: object) -> str:
    if type(start) is not int or type(end) is not int:
        raise no_such_overload("substring", s, start, end)
    begin, stop = start, end
    if begin > stop:
        raise CELEvalError(f"invalid substring range. start: {begin}, end: {stop}")
    if begin < 0 or begin > len(s):
        raise _out_of_range(begin)
    if stop < 0 or stop > len(s):
        raise _out_of_range(stop)
    return s[begin:stop]


# -- transformations ----------------------------------------------------------------------
_ASCII_UPPER: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASCII_LOWER: Final = "abcdefghijklmnopqrstuvwxyz"
_TO_LOWER: Final = str.maketrans(_ASCII_UPPER, _ASCII_LOWER)
_TO_UPPER: Final = str.maketrans(_ASCII_LOWER, _ASCII_UPPER)


@_lib.member(
    "lowerAscii", 0, receiver=str, result="string", cost=_target_scan_cost, size=_at_most_target
)
def lower_ascii(s: str) -> str:
    # str.lower() would also fold non-ASCII letters (Æ -> æ), which cel-go leaves alone
    return s.lower() if s.isascii() else s.translate(_TO_LOWER)


@_lib.member(
    "upperAscii", 0, receiver=str, result="string", cost=_target_scan_cost, size=_at_most_target
)
def upper_ascii(s: str) -> str:
    return s.upper() if s.isascii() else s.translate(_TO_UPPER)


# Go's unicode.IsSpace: Python's str.isspace() also counts U+001C..U+001F, which Go does not,
# and the zero-width characters (U+200B, U+FEFF...) are not spaces for either.
GO_WHITESPACE: Final = (
    "\t\n\v\f\r \u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


@_lib.member("trim", 0, receiver=str, result="string", cost=_target_scan_cost, size=_at_most_target)
def trim(s: str) -> str:
    return s.strip(GO_WHITESPACE)


@_lib.member(
    "replace",
    2,
    receiver=str,
    result="string",
    cost=_target_build_cost,
    size=_replace_size,
    params=(
        "string",
        "string",
    ),
)
def replace(s: str, old: object, new: object) -> str:
    if type(old) is not str or type(new) is not str:
        raise no_such_overload("replace", s, old, new)
    return s.replace(old, new)


@_lib.member(
    "replace",
    3,
    receiver=str,
    result="string",
    cost=_target_build_cost,
    size=_replace_size,
    params=(
        "string",
        "string",
        "int",
    ),
)
def replace_n(s: str, old: object, new: object, limit: object) -> str:
    """At most `limit` replacements; a negative limit replaces every occurrence."""
    if type(old) is not str or type(new) is not str or type(limit) is not int:
        raise no_such_overload("replace", s, old, new, limit)
    return s.replace(old, new, max(limit, -1))


@_lib.member(
    "split",
    1,
    receiver=str,
    result="list",
    cost=_target_build_cost,
    size=_split_size,
    params=("string",),
)
def split(s: str, sep: object) -> list[str]:
    if type(sep) is not str:
        raise no_such_overload("split", s, sep)
    return _split(s, sep, -1)


@_lib.member(
    "split",
    2,
    receiver=str,
    result="list",
    cost=_target_build_cost,
    size=_split_size,
    params=(
        "string",
        "int",
    ),
)
def split_n(s: str, sep: object, limit: object) -> list[str]:
    """At most `limit` parts, the last holding the rest; 0 gives no parts, negative all."""
    if type(sep) is not str or type(limit) is not int:
        raise no_such_overload("split", s, sep, limit)
    return _split(s, sep, limit)


def _split(s: str, sep: str, limit: int) -> list[str]:
    if limit == 0:
        return []
    if sep:
        return s.split(sep, limit - 1 if limit > 0 else -1)
    # the empty separator splits between code points
    if limit < 0 or limit > len(s):
        return list(s)
    return [*s[: limit - 1], s[limit - 1 :]]


# -- lists of strings ---------------------------------------------------------------------
def _join_cost(items: object, sep: object = "") -> int:
    if not isinstance(items, list | tuple):
        return 0
    chars = sum(len(x) for x in items if type(x) is str)
    if type(sep) is str and items:
        chars += len(sep) * (len(items) - 1)
    return scan_cost(chars, 2 * _SCAN_FACTOR)


@_lib.member("join", 0, receiver=(list, tuple), result="string", cost=_join_cost, size=_join_size)
def join(items: list[object] | tuple[object, ...]) -> str:
    return _join(items, "")


@_lib.member(
    "join",
    1,
    receiver=(list, tuple),
    result="string",
    cost=_join_cost,
    params=("string",),
    size=_join_size,
)
def join_with(items: list[object] | tuple[object, ...], sep: object) -> str:
    if type(sep) is not str:
        raise no_such_overload("join", items, sep)
    return _join(items, sep)


def _join(items: list[object] | tuple[object, ...], sep: str) -> str:
    try:
        return sep.join(cast("list[str]", items))
    except TypeError:
        bad = next(item for item in items if type(item) is not str)
        raise CELEvalError(f"join: invalid input: {bad!r}") from None


# -- quoting ------------------------------------------------------------------------------
# the characters Go's quoting (strconv.Quote, `%q`, CEL's strings.quote) writes as a
# backslash escape of their own
GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(s: str) -> str:
    """Go's strconv.Quote (`%q`), which Kubernetes' messages and its formatter's quoted
    strings use. Lone surrogates from the `surrogateescape` error handler stand for bytes
    that are not UTF-8: `\\xNN`, as Go writes an invalid byte."""
    out = ['"']
    for c in s:
        code = ord(c)
        if c in GO_ESCAPES:
            out.append(GO_ESCAPES[c])
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif c.isprintable():
            out.append(c)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_QUOTE_ESCAPES: Final = str.maketrans(
    {
        **GO_ESCAPES,
        # lone surrogates cannot be encoded: cel-go replaces invalid runes with U+FFFD
        **{chr(c): "\ufffd" for c in range(0xD800, 0xE000)},
    }
)


def _arg_scan_cost(s: object) -> int:
    return scan_cost(len(s)) if type(s) is str else 0


@_lib.function(
    "strings.quote", 1, result="string", cost=_arg_scan_cost, params=("string",), size=_quote_size
)
def quote(s: object) -> str:
    """`s` as a double-quoted CEL string literal, escapes and all."""
    if type(s) is not str:
        raise no_such_overload("strings.quote", s)
    return '"' + s.translate(_QUOTE_ESCAPES) + '"'
