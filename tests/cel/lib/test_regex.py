"""Regular expressions: RE2 semantics for `matches`, `find` and `findAll`."""

from __future__ import annotations

import pytest

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import merge_libraries
from policyext.cel.lib.regex import REGEX_LIBRARY, CompiledRegex, compile_regex, regex_cost

TABLE = merge_libraries([REGEX_LIBRARY])


def member(name: str, target: object, *args: object) -> object:
    table = TABLE.find_member(name, len(args))
    if table is None or type(target) not in table.by_type:
        raise LookupError(f"no member {name}/{len(args)} for {type(target).__name__}")
    return table.by_type[type(target)].impl(target, *args)


def matches(s: object, pattern: object) -> object:
    overload = TABLE.find_global("matches", 2)
    assert overload is not None
    return overload.impl(s, pattern)


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        # a match anywhere counts, unless the pattern is anchored
        ("hubba", "ubb", True),
        ("hubba", "^ubb", False),
        ("hubba", "^hubba$", True),
        ("hubba", "^hub$", False),
        ("", "", True),
        ("abc", "", True),
        ("node-1", r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", True),
        ("Node-1", r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", False),
        ("zone=eu-west", r"zone=(eu|us)-\w+", True),
        ("ünïcode", "^.{7}$", True),
        ("a\nb", "a.b", False),
        ("a\nb", "(?s)a.b", True),
        ("ABC", "(?i)abc", True),
        ("a.b", r"a\.b", True),
        ("axb", r"a\.b", False),
        ("word boundary", r"\bboundary\b", True),
    ],
)
def test_matches_searches_with_re2_syntax(text: str, pattern: str, expected: bool) -> None:
    assert matches(text, pattern) is expected
    assert member("matches", text, pattern) is expected
    assert compile_regex(pattern).matches(text) is expected


def test_catastrophic_backtracking_patterns_run_in_linear_time() -> None:
    # a backtracking engine would need about 2**100000 steps for this
    text = "a" * 100_000 + "b"
    assert matches(text, "(a+)+$") is False
    assert member("find", text, "(a+)+$") == ""
    assert member("findAll", text, "(x+x+)+y") == []


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        ("abc 123 456", r"\d+", "123"),
        ("abc", r"\d+", ""),
        ("key=value", r"=\w+", "=value"),
        ("xéy", "é.", "éy"),
        # leftmost-first, as Go's regexp and RE2 choose
        ("abcd", "a|ab", "a"),
    ],
)
def test_find_returns_the_leftmost_match_or_empty(text: str, pattern: str, expected: str) -> None:
    assert member("find", text, pattern) == expected


@pytest.mark.parametrize(
    ("text", "pattern", "limit", "expected"),
    [
        ("123 abc 456 def 789", r"\d+", None, ["123", "456", "789"]),
        ("123 abc 456 def 789", r"\d+", 2, ["123", "456"]),
        ("123 abc 456 def 789", r"\d+", 0, []),
        ("123 abc 456 def 789", r"\d+", -1, ["123", "456", "789"]),
        ("abc", r"\d+", None, []),
        # groups do not change what is returned: the whole match is
        ("k1=v1 k2=v2", r"(\w+)=(\w+)", None, ["k1=v1", "k2=v2"]),
        # Go skips an empty match right where the previous match ended
        ("baaab", "a*", None, ["", "aaa", ""]),
        ("héllo", "", None, ["", "", "", "", "", ""]),
        ("aéxé", "é|x", None, ["é", "x", "é"]),
        ("", "x*", None, [""]),
        ("ab", "^", None, [""]),
    ],
)
def test_find_all_returns_successive_matches(
    text: str, pattern: str, limit: int | None, expected: list[str]
) -> None:
    result = (
        member("findAll", text, pattern)
        if limit is None
        else member("findAll", text, pattern, limit)
    )
    assert result == expected


@pytest.mark.parametrize("pattern", ["(", "a)", "[z-a]", "(?<=a)b", "a{1001}", r"\8"])
def test_invalid_patterns_are_evaluation_errors(pattern: str) -> None:
    with pytest.raises(CELEvalError, match="invalid regular expression"):
        compile_regex(pattern)
    with pytest.raises(CELEvalError, match="invalid regular expression"):
        matches("abc", pattern)
    with pytest.raises(CELEvalError, match="invalid regular expression"):
        member("findAll", "abc", pattern)


def test_compiled_patterns_are_cached() -> None:
    assert compile_regex("cached-[0-9]+") is compile_regex("cached-[0-9]+")
    assert isinstance(compile_regex("cached-[0-9]+"), CompiledRegex)


@pytest.mark.parametrize(
    ("call", "args"),
    [
        ("matches", (1, "a")),
        ("matches", ("a", 1)),
        ("find", (1,)),
        ("findAll", (None,)),
        ("findAll", ("a", "1")),
    ],
)
def test_arguments_of_the_wrong_type_have_no_overload(call: str, args: tuple[object, ...]) -> None:
    with pytest.raises(CELEvalError, match="no such overload"):
        if call == "matches":
            matches(*args)
        else:
            member(call, "abc", *args)


def test_compiled_regex_search_returns_the_match_or_none() -> None:
    regex = compile_regex("[0-9]+")
    assert regex.search("ab12c") == "12"
    assert regex.search("abc") is None


def test_lone_surrogates_do_not_break_matching() -> None:
    assert matches("\ud800x", "x") is True
    assert member("find", "\ud800x", ".x") == "\ud800x"


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        ("", "abcd", 1),
        ("x" * 99, "abcd", 10),
        ("x" * 99, "abcdefgh", 20),
    ],
)
def test_cost_is_text_size_times_pattern_size(text: str, pattern: str, expected: int) -> None:
    assert regex_cost(text, pattern) == expected
