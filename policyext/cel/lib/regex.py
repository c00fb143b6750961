"""Regular expressions with RE2 semantics: CEL's `matches` and Kubernetes' `find`/`findAll`.

Patterns are compiled by RE2 (the `google-re2` binding), whose matching time is linear in
the input: a pattern like `(a+)+$` cannot backtrack catastrophically. The syntax is RE2's,
which is what cel-go and Kubernetes accept (Go's regexp is RE2 too). `matches` looks for a
match anywhere in the string; anchors (`^...$`) make it a full match.

Compiled patterns are kept in an LRU cache, since policies apply the same few patterns over
and over. The compiler precompiles constant patterns with `compile_regex`, which raises
`CELEvalError` for an invalid one, and then calls the `CompiledRegex` methods directly.
"""

from __future__ import annotations

import functools
import math
from typing import Final

import re2

# The binding's C++ core. The public `re2` wrapper re-encodes the text and translates every
# offset back to code points on each call, which costs about ten times the match itself;
# `matches` runs once per node and policy, so it talks to the core directly.
from re2 import _re2

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import CHARS_PER_UNIT, Library
from policyext.cel.values import no_such_overload

REGEX_LIBRARY: Final = Library("regex")
_lib = REGEX_LIBRARY

# how many distinct patterns stay compiled
CACHE_SIZE: Final = 512

_OPTIONS: Final = re2.Options()
# the error goes into the CELEvalError; RE2 would also print it to stderr
_OPTIONS.log_errors = False
# only whole matches are ever reported, and without groups RE2 can skip the slower engines
_OPTIONS.never_capture = True
_UNANCHORED: Final = _re2.RE2.Anchor.UNANCHORED


def _utf8(s: str) -> bytes:
    # lone surrogates (possible in decoded JSON) must not crash the match
    return s.encode("utf-8", errors="surrogatepass")


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="surrogatepass")


def _char_width(b: bytes, pos: int) -> int:
    """The length of the UTF-8 sequence starting at `pos` (1 for a stray byte)."""
    lead = b[pos]
    if lead < 0xC0:
        return 1
    if lead < 0xE0:
        return 2
    if lead < 0xF0:
        return 3
    return 4 if lead < 0xF8 else 1


def _any_byte_escape(pattern: str) -> bool:
    """Whether the pattern has the escape `\\C` (not an escaped backslash before a `C`,
    nor a `C` quoted between `\\Q` and `\\E`)."""
    i = 0
    while i < len(pattern) - 1:
        if pattern[i] != "\\":
            i += 1
            continue
        escaped = pattern[i + 1]
        if escaped == "C":
            return True
        if escaped == "Q":
            end = pattern.find("\\E", i + 2)
            if end < 0:
                return False
            i = end + 2
            continue
        i += 2
    return False


class CompiledRegex:
    """An RE2 program compiled from a CEL pattern string."""

    __slots__ = ("_program", "pattern")

    def __init__(self, pattern: str) -> None:
        if "\\C" in pattern and _any_byte_escape(pattern):
            # RE2 in C++ reads `\C` as any byte; Go's regexp, which Kubernetes runs, has no
            # such escape, and matching bytes would split the characters of UTF-8 text
            raise ValueError("invalid escape sequence: `\\C`")
        program = _re2.RE2(_utf8(pattern), _OPTIONS)
        if not program.ok():
            raise ValueError(_text(program.error()))
        self.pattern = pattern
        self._program = program

    def _span(self, b: bytes, pos: int = 0) -> tuple[int, int]:
        """The byte span of the leftmost match at or after `pos`; (-1, -1) when none."""
        span: tuple[int, int] = self._program.Match(_UNANCHORED, b, pos, len(b))[0]
        return span

    def matches(self, s: str) -> bool:
        """Whether the pattern matches anywhere in `s`."""
        return self._span(_utf8(s))[0] >= 0

    def search(self, s: str) -> str | None:
        """The leftmost match, or None when there is none."""
        b = _utf8(s)
        start, end = self._span(b)
        return None if start < 0 else _text(b[start:end])

    def find(self, s: str) -> str:
        """The leftmost match, or the empty string when there is none (Kubernetes' `find`)."""
        found = self.search(s)
        return "" if found is None else found

    def find_all(self, s: str, limit: int = -1) -> list[str]:
        """Successive non-overlapping matches, at most `limit` of them (all when negative).

        As Go's FindAllString: an empty match right where the previous match ended is
        skipped, so `a*` finds `["", "aaa", ""]` in `"baaab"`.
        """
        b = _utf8(s)
        found: list[str] = []
        pos, end, previous_end = 0, len(b), -1
        while pos <= end and len(found) != limit:
            start, stop = self._span(b, pos)
            if start < 0:
                break
            accept = True
            if stop == pos:
                # an empty match: never right after the previous match; step one character
                accept = start != previous_end
                pos += _char_width(b, pos) if pos < end else 1
            else:
                pos = stop
            previous_end = stop
            if accept:
                found.append(_text(b[start:stop]))
        return found

    def __repr__(self) -> str:
        return f"CompiledRegex({self.pattern!r})"


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compile(pattern: str) -> CompiledRegex | str:
    # errors are cached too, so an invalid pattern applied to every node fails fast
    try:
        return CompiledRegex(pattern)
    except ValueError as e:
        return str(e)


def compile_regex(pattern: str) -> CompiledRegex:
    """The compiled pattern (from the cache when possible); `CELEvalError` if invalid."""
    result = _compile(pattern)
    if isinstance(result, str):
        raise CELEvalError(f"invalid regular expression {pattern!r}: {result}")
    return result


# -- cost ---------------------------------------------------------------------------------
# cel-go: 0.1 per character of input (plus one), 0.25 per character of pattern, multiplied
_STRING_FACTOR: Final = 0.1
_PATTERN_FACTOR: Final = 0.25


def regex_cost(s: object, pattern: object, *_args: object) -> int:
    """The cost of matching `pattern` against `s`, as cel-go and Kubernetes count it."""
    if not isinstance(s, str) or not isinstance(pattern, str):
        return 0
    text_cost = math.ceil((1 + len(s)) * _STRING_FACTOR)
    return text_cost * math.ceil(len(pattern) * _PATTERN_FACTOR)


def _find_size(_room: int, s: object, *_args: object) -> int:
    return len(s) // CHARS_PER_UNIT if type(s) is str else 0


def _find_all_size(_room: int, s: object, _pattern: object, limit: object = -1) -> int:
    """At most a match per position, and the empty match at the end (a unit each)."""
    if type(s) is not str:
        return 0
    matches = len(s) + 1
    return min(matches, limit) if type(limit) is int and limit >= 0 else matches


def _regex(name: str, s: object, pattern: object, *rest: object) -> tuple[str, CompiledRegex]:
    if type(s) is not str or type(pattern) is not str:
        raise no_such_overload(name, s, pattern, *rest)
    return s, compile_regex(pattern)


# -- functions ----------------------------------------------------------------------------
@_lib.function(
    "matches",
    2,
    result="bool",
    cost=regex_cost,
    params=(
        "string",
        "string",
    ),
)
def matches(s: object, pattern: object) -> bool:
    text, regex = _regex("matches", s, pattern)
    return regex.matches(text)


@_lib.member("matches", 1, receiver=str, result="bool", cost=regex_cost, params=("string",))
def matches_member(s: str, pattern: object) -> bool:
    text, regex = _regex("matches", s, pattern)
    return regex.matches(text)


@_lib.member(
    "find", 1, receiver=str, result="string", cost=regex_cost, params=("string",), size=_find_size
)
def find(s: str, pattern: object) -> str:
    text, regex = _regex("find", s, pattern)
    return regex.find(text)


@_lib.member(
    "findAll",
    1,
    receiver=str,
    result="list",
    cost=regex_cost,
    params=("string",),
    size=_find_all_size,
)
def find_all(s: str, pattern: object) -> list[str]:
    text, regex = _regex("findAll", s, pattern)
    return regex.find_all(text)


@_lib.member(
    "findAll",
    2,
    receiver=str,
    result="list",
    cost=regex_cost,
    size=_find_all_size,
    params=(
        "string",
        "int",
    ),
)
def find_all_limit(s: str, pattern: object, limit: object) -> list[str]:
    if type(limit) is not int:
        raise no_such_overload("findAll", s, pattern, limit)
    text, regex = _regex("findAll", s, pattern, limit)
    return regex.find_all(text, limit)
