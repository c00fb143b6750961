"""The string extension functions, called the way the engine dispatches them."""

from __future__ import annotations

import pytest

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import merge_libraries
from policyext.cel.lib.strings import GO_WHITESPACE, STRINGS_LIBRARY
from policyext.cel.values import UInt

TABLE = merge_libraries([STRINGS_LIBRARY])


def member(name: str, target: object, *args: object) -> object:
    """`target.name(args)`: the overload is chosen by the target's type, as the engine does."""
    table = TABLE.find_member(name, len(args))
    if table is None or type(target) not in table.by_type:
        raise LookupError(f"no member {name}/{len(args)} for {type(target).__name__}")
    return table.by_type[type(target)].impl(target, *args)


def function(name: str, *args: object) -> object:
    overload = TABLE.find_global(name, len(args))
    assert overload is not None, name
    return overload.impl(*args)


@pytest.mark.parametrize(
    ("name", "target", "args", "expected"),
    [
        # charAt counts code points; the index just past the end gives ""
        ("charAt", "kayak", (2,), "y"),
        ("charAt", "kayak", (5,), ""),
        ("charAt", "€λz", (1,), "λ"),
        ("charAt", "", (0,), ""),
        # indexOf
        ("indexOf", "banana", ("",), 0),
        ("indexOf", "banana", ("na",), 2),
        ("indexOf", "banana", ("xyz",), -1),
        ("indexOf", "banana", ("", 4), 4),
        ("indexOf", "banana", ("", 6), 6),
        ("indexOf", "banana", ("a", 2), 3),
        ("indexOf", "banana", ("na", 3), 4),
        ("indexOf", "a€b€λc", ("€",), 1),
        ("indexOf", "a€b€λc", ("€", 2), 3),
        ("indexOf", "a€b€λc", ("€λc", 2), 3),
        ("indexOf", "a€b€λc", ("€b", 2), -1),
        ("indexOf", "one two", ("one two",), 0),
        ("indexOf", "one two", ("two", 4), 4),
        # a start at or past the end finds nothing, as in Kubernetes (negative: an error)
        ("indexOf", "kayak", ("a", 5), -1),
        ("indexOf", "kayak", ("a", 30), -1),
        ("lastIndexOf", "kayak", ("a", 5), -1),
        ("lastIndexOf", "kayak", ("a", 30), -1),
        # lastIndexOf: the optional index is the last position a match may start at
        ("lastIndexOf", "", ("xy",), -1),
        ("lastIndexOf", "banana", ("",), 6),
        ("lastIndexOf", "banana", ("an",), 3),
        ("lastIndexOf", "banana", ("xyz",), -1),
        ("lastIndexOf", "banana", ("", 2), 2),
        ("lastIndexOf", "banana", ("a", 2), 1),
        ("lastIndexOf", "banana", ("ana", 3), 3),
        ("lastIndexOf", "banana", ("ana", 2), 1),
        ("lastIndexOf", "a€b€λc", ("€",), 3),
        ("lastIndexOf", "a€b€λc", ("€", 2), 1),
        ("lastIndexOf", "a€b€λc", ("€λ", 3), 3),
        ("lastIndexOf", "abababab", ("abab", 5), 4),
        ("lastIndexOf", "one two", ("one two",), 0),
        # ASCII case mapping leaves other letters alone
        ("lowerAscii", "HeLLo", (), "hello"),
        ("lowerAscii", "ÀÉÎ Ab", (), "ÀÉÎ ab"),
        ("upperAscii", "HeLLo", (), "HELLO"),
        ("upperAscii", "àéî ab", (), "àéî AB"),
        # replace, with an optional limit (negative: all)
        ("replace", "a-b-c", ("-", "+"), "a+b+c"),
        ("replace", "a-b-c", ("x", "+"), "a-b-c"),
        ("replace", "a-b-c", ("-", "+", 1), "a+b-c"),
        ("replace", "a-b-c", ("-", "+", 0), "a-b-c"),
        ("replace", "a-b-c", ("-", "+", -1), "a+b+c"),
        ("replace", "€λ€λ", ("λ€", "::"), "€::λ"),
        ("replace", "ab", ("", "."), ".a.b."),
        ("replace", "ab", ("", ".", 2), ".a.b"),
        # split, with an optional limit (0: nothing, negative: all)
        ("split", "a b c", (" ",), ["a", "b", "c"]),
        ("split", "", (",",), [""]),
        ("split", "a b c", (" ", 0), []),
        ("split", "a b c", (" ", 1), ["a b c"]),
        ("split", "a b c", (" ", 2), ["a", "b c"]),
        ("split", "a€b€c", ("€", -1), ["a", "b", "c"]),
        ("split", "a€c", ("",), ["a", "€", "c"]),
        ("split", "abc", ("", 2), ["a", "bc"]),
        ("split", "", ("",), []),
        # substring
        ("substring", "kayak", (2,), "yak"),
        ("substring", "kayak", (5,), ""),
        ("substring", "kayak", (1, 3), "ay"),
        ("substring", "kayak", (3, 3), ""),
        ("substring", "a€b€λc", (1, 5), "€b€λ"),
        ("substring", "a€b€λc", (6, 6), ""),
        # join
        (
            "join",
            ["a", "b"],
            (),
            "ab",
        ),
        ("join", ["a", "b"], (", ",), "a, b"),
        ("join", [], (), ""),
        ("join", [], ("-",), ""),
        ("join", ("a",), ("-",), "a"),
    ],
)
def test_string_members_return_what_cel_go_returns(
    name: str, target: object, args: tuple[object, ...], expected: object
) -> None:
    assert member(name, target, *args) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (" \f\n\r\t\vword  ", "word"),
        ("\u0085\u00a0\u1680word", "word"),
        ("word\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a", "word"),
        ("\u2028\u2029\u202f\u205f\u3000word", "word"),
        # zero-width characters are not white space, nor are the ASCII separators
        ("\u180eword\u200b\u200c\u200d\u2060\ufeff", "\u180eword\u200b\u200c\u200d\u2060\ufeff"),
        ("\x1cword\x1f", "\x1cword\x1f"),
        ("in side", "in side"),
    ],
)
def test_trim_removes_the_white_space_go_knows(text: str, expected: str) -> None:
    assert member("trim", text) == expected


def test_trim_set_is_unicode_white_space_without_zero_width() -> None:
    assert all(c.isspace() for c in GO_WHITESPACE)
    assert "\u200b" not in GO_WHITESPACE


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", '"plain"'),
        ("", '""'),
        ("line\nbreak", '"line\\nbreak"'),
        ("\a\b\f\r\t\v", '"\\a\\b\\f\\r\\t\\v"'),
        ("back\\slash", '"back\\\\slash"'),
        ("\\", '"\\\\"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("single 'quotes'", "\"single 'quotes'\""),
        ("ünïcödé 😀 λ", '"ünïcödé 😀 λ"'),
        ("\U0001f431\U0001f600", '"\U0001f431\U0001f600"'),
        ("bad\ud800", '"bad\ufffd"'),
    ],
)
def test_strings_quote_escapes_what_a_cel_literal_must(text: str, expected: str) -> None:
    assert function("strings.quote", text) == expected


@pytest.mark.parametrize(
    ("name", "target", "args", "message"),
    [
        ("charAt", "kayak", (30,), "index out of range: 30"),
        ("charAt", "kayak", (-1,), "index out of range: -1"),
        ("indexOf", "kayak", ("a", -1), "index out of range: -1"),
        ("indexOf", "kayak", ("", -1), "index out of range: -1"),
        ("lastIndexOf", "kayak", ("a", -1), "index out of range: -1"),
        ("substring", "kayak", (40,), "index out of range: 40"),
        ("substring", "kayak", (-1,), "index out of range: -1"),
        ("substring", "kayak", (1, 50), "index out of range: 50"),
        ("substring", "kayak", (49, 50), "index out of range: 49"),
        ("substring", "kayak", (-1, 2), "index out of range: -1"),
        ("substring", "kayak", (4, 3), "invalid substring range. start: 4, end: 3"),
        ("join", ["a", 1], (), "join: invalid input: 1"),
    ],
)
def test_bad_indexes_are_errors_worded_as_cel_go_words_them(
    name: str, target: object, args: tuple[object, ...], message: str
) -> None:
    with pytest.raises(CELEvalError) as e:
        member(name, target, *args)
    assert e.value.message == message


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("charAt", (True,)),
        ("charAt", (UInt(1),)),
        ("indexOf", (True,)),
        ("indexOf", (4, 0)),
        ("indexOf", ("4", "0")),
        ("lastIndexOf", (1,)),
        ("lastIndexOf", ("a", 1.0)),
        ("replace", (2, 1)),
        ("replace", ("2", 1)),
        ("replace", (2, "1", 1)),
        ("replace", ("2", 1, 1)),
        ("replace", ("2", "1", "1")),
        ("split", (2,)),
        ("split", (2, 1)),
        ("split", ("2", "1")),
        ("substring", (True,)),
        ("substring", (True, 3)),
        ("substring", (0, False)),
        ("join", (1,)),
    ],
)
def test_arguments_of_the_wrong_type_have_no_overload(name: str, args: tuple[object, ...]) -> None:
    target: object = ["a"] if name == "join" else "42"
    with pytest.raises(CELEvalError, match="no such overload"):
        member(name, target, *args)


def test_strings_quote_of_a_non_string_has_no_overload() -> None:
    with pytest.raises(CELEvalError, match="no such overload"):
        function("strings.quote", 42)


@pytest.mark.parametrize(
    ("name", "arity"),
    [
        ("charAt", 1),
        ("indexOf", 1),
        ("indexOf", 2),
        ("lastIndexOf", 1),
        ("lastIndexOf", 2),
        ("lowerAscii", 0),
        ("upperAscii", 0),
        ("replace", 2),
        ("replace", 3),
        ("split", 1),
        ("split", 2),
        ("substring", 1),
        ("substring", 2),
        ("trim", 0),
    ],
)
def test_string_members_serve_only_strings(name: str, arity: int) -> None:
    table = TABLE.find_member(name, arity)
    assert table is not None
    assert set(table.by_type) == {str}
    assert table.fallback is None


@pytest.mark.parametrize(
    ("name", "target", "args", "expected"),
    [
        ("lowerAscii", "x" * 95, (), 10),
        ("indexOf", "x" * 100, ("y",), 10),
        ("replace", "x" * 100, ("x", "y"), 20),
        ("split", "x" * 100, (",",), 20),
        ("join", ["x" * 50, "y" * 50], ("",), 20),
    ],
)
def test_cost_grows_with_the_size_of_the_string(
    name: str, target: object, args: tuple[object, ...], expected: int
) -> None:
    table = TABLE.find_member(name, len(args))
    assert table is not None
    cost = table.by_type[type(target)].cost
    assert cost is not None
    assert cost(target, *args) == expected
