"""The text-format reader: syntax, escapes, numbers, strictness, and cel-spec's files."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cel import conformance, textproto
from tests.cel.textproto import Ident, Message, TextprotoError, Value

SYNTAX_CASES: list[tuple[str, str, Message]] = [
    ("a scalar field", "a: 1", {"a": [1]}),
    ("a message without a colon", "a { b: 2 }", {"a": [{"b": [2]}]}),
    ("a message with a colon", "a: { b: 2 }", {"a": [{"b": [2]}]}),
    ("a message in angle brackets", "a < b: 2 >", {"a": [{"b": [2]}]}),
    ("an empty message", "a {}", {"a": [{}]}),
    ("a repeated field", "a: 1 a: 2 b: 3 a: 4", {"a": [1, 2, 4], "b": [3]}),
    ("a repeated field in list syntax", "a: [1, 2] a: 3", {"a": [1, 2, 3]}),
    ("an empty list", "a: []", {"a": []}),
    ("a list of messages", "a: [{b: 1}, <b: 2>]", {"a": [{"b": [1]}, {"b": [2]}]}),
    ("comma and semicolon separators", "a: 1, b: 2; c {},", {"a": [1], "b": [2], "c": [{}]}),
    ("comments", "# head\na: 1 # tail\n# end", {"a": [1]}),
    (
        "an Any expansion",
        "v { [type.googleapis.com/google.protobuf.Duration] { seconds: 1 } }",
        {"v": [{"[type.googleapis.com/google.protobuf.Duration]": [{"seconds": [1]}]}]},
    ),
    ("an extension name", "[pkg.ext]: 5", {"[pkg.ext]": [5]}),
    ("an enum identifier", "n: NULL_VALUE", {"n": [Ident("NULL_VALUE")]}),
    (
        "true and false as identifiers",
        "t: true f: false",
        {"t": [Ident("true")], "f": [Ident("false")]},
    ),
    ("a double-quoted string as bytes", 's: "abc"', {"s": [b"abc"]}),
    ("a single-quoted string", "s: 'a\"b'", {"s": [b'a"b']}),
    ("adjacent strings concatenated", 's: "ab" \'cd\'\n "ef"', {"s": [b"abcdef"]}),
    ("raw UTF-8 kept as its bytes", 's: "é☺"', {"s": ["é☺".encode()]}),
    ("an empty document", "  # nothing\n", {}),
]

ESCAPE_CASES: list[tuple[str, bytes]] = [
    (r"\n\t\r", b"\n\t\r"),
    (r"\a\b\f\v", b"\x07\x08\x0c\x0b"),
    (r"\\\'\"\?", b"\\'\"?"),
    (r"\0\101\377", b"\x00A\xff"),
    (r"\1234", b"S4"),  # octal takes at most three digits
    (r"\x4a\xA\x4Bz", b"J\nKz"),  # one or two hex digits
    (r"\u00e9", "é".encode()),
    (r"\u270C", "✌".encode()),
    (r"\U0001F431", "🐱".encode()),
    (r"\ud83d\udc31", "🐱".encode()),  # a surrogate pair is one code point
    (r"\303\251", "é".encode()),  # escapes are bytes, not code points
    (r"\xff\xfe", b"\xff\xfe"),
]

NUMBER_CASES: list[tuple[str, int | float]] = [
    ("0", 0),
    ("42", 42),
    ("-7", -7),
    ("0x1F", 31),
    ("-0x10", -16),
    ("017", 15),
    ("9223372036854775807", 2**63 - 1),
    ("18446744073709551615", 2**64 - 1),
    ("1.5", 1.5),
    ("-2.5e-3", -0.0025),
    ("1e10", 1e10),
    ("1E+2", 100.0),
    (".5", 0.5),
    ("3.", 3.0),
    ("1.5f", 1.5),
    ("2F", 2.0),
]

ERROR_CASES: list[tuple[str, str, str]] = [
    ("an unterminated string", 'a: "abc', "1:4: unterminated string"),
    ("a newline inside a string", 'a: "ab\ncd"', "unterminated string"),
    ("an unknown escape", r'a: "\q"', r"unknown escape \q"),
    ("an octal escape above a byte", r'a: "\400"', "above"),
    ("a hex escape without digits", r'a: "\xg"', "hex digit"),
    ("a short \\u escape", r'a: "\u12"', "4 hex digits"),
    ("a short \\U escape", r'a: "\U0001F4"', "8 hex digits"),
    ("a code point beyond Unicode", r'a: "\U00110000"', "beyond"),
    ("an unpaired high surrogate", r'a: "\ud800x"', "unpaired high surrogate"),
    ("an unpaired low surrogate", r'a: "\udc00"', "unpaired low surrogate"),
    ("a missing closing brace", "a { b: 1", "expected a field name, found end of input"),
    ("a stray closing brace", "a: 1 }", "expected a field name"),
    ("a mismatched closer", "a { b: 1 >", "expected a field name"),
    ("a scalar without a colon", "a 1", "expected ':'"),
    ("a colon without a value", "a: }", "expected a value"),
    ("a malformed number", "a: 1x", "malformed number '1x'"),
    ("a bad octal number", "a: 08", "malformed number '08'"),
    ("a minus before a name", "a: -foo", "unexpected '-' before 'foo'"),
    ("a minus alone", "a: - 1", "a number must follow '-'"),
    ("a list without commas", "a: [1 2]", "expected ',' or ']'"),
    ("an unexpected character", "a: $", "unexpected character '$'"),
    ("an empty Any name", "[] { }", "expected a type URL"),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [pytest.param(text, expected, id=name) for name, text, expected in SYNTAX_CASES],
)
def test_text_format_parses_into_the_generic_tree(text: str, expected: Message) -> None:
    assert textproto.parse(text) == expected


@pytest.mark.parametrize(("escaped", "expected"), ESCAPE_CASES)
def test_string_escapes_denote_bytes(escaped: str, expected: bytes) -> None:
    for quote in "\"'":
        assert textproto.parse(f"s: {quote}{escaped}{quote}") == {"s": [expected]}


@pytest.mark.parametrize(("literal", "expected"), NUMBER_CASES)
def test_numbers_keep_their_integer_or_float_kind(literal: str, expected: float) -> None:
    (value,) = textproto.parse(f"n: {literal}")["n"]
    assert type(value) is type(expected)
    assert value == expected


@pytest.mark.parametrize(
    ("literal", "expected"),
    [("inf", math.inf), ("-inf", -math.inf), ("Infinity", math.inf), ("-Infinity", -math.inf)],
)
def test_infinities_read_as_floats(literal: str, expected: float) -> None:
    (value,) = textproto.parse(f"d: {literal}")["d"]
    assert textproto.as_float(value) == expected


def test_nan_reads_as_a_float_nan() -> None:
    (value,) = textproto.parse("d: nan")["d"]
    assert math.isnan(textproto.as_float(value))


@pytest.mark.parametrize(
    ("text", "message"),
    [pytest.param(text, message, id=name) for name, text, message in ERROR_CASES],
)
def test_malformed_text_is_rejected_with_its_position(text: str, message: str) -> None:
    with pytest.raises(TextprotoError, match=r"^\d+:\d+: ") as caught:
        textproto.parse(text)
    assert message in str(caught.value)


def test_error_positions_count_lines_and_columns() -> None:
    with pytest.raises(TextprotoError, match=r"^3:6: unterminated string"):
        textproto.parse('a: 1\nb { c: 2 }\nd: 3 "x')


ACCESSOR_CASES: list[tuple[str, Value, object]] = [
    ("as_text decodes UTF-8", b"\xc3\xa9", "é"),
    ("as_bytes keeps bytes", b"\xff", b"\xff"),
    ("as_int reads an integer", -3, -3),
    ("as_float widens an integer", 2, 2.0),
    ("as_float reads -inf", Ident("-inf"), -math.inf),
    ("as_bool reads true", Ident("true"), True),
    ("as_bool reads False", Ident("False"), False),
    ("as_bool reads 1", 1, True),
    ("as_enum reads a name", Ident("NULL_VALUE"), "NULL_VALUE"),
    ("as_enum reads a number", 0, 0),
]

_ACCESSORS: dict[str, Callable[[Value], object]] = {
    "as_text": textproto.as_text,
    "as_bytes": textproto.as_bytes,
    "as_int": textproto.as_int,
    "as_float": textproto.as_float,
    "as_bool": textproto.as_bool,
    "as_enum": textproto.as_enum,
}


@pytest.mark.parametrize(
    ("accessor", "value", "expected"),
    [pytest.param(name.split()[0], v, e, id=name) for name, v, e in ACCESSOR_CASES],
)
def test_accessors_apply_the_field_type(accessor: str, value: Value, expected: object) -> None:
    result = _ACCESSORS[accessor](value)
    assert type(result) is type(expected)
    assert result == expected


@pytest.mark.parametrize(
    ("accessor", "value"),
    [
        ("as_text", b"\xff"),
        ("as_text", 1),
        ("as_bytes", Ident("x")),
        ("as_int", 1.0),
        ("as_int", b"1"),
        ("as_float", Ident("many")),
        ("as_bool", 2),
        ("as_bool", Ident("yes")),
        ("as_enum", 1.5),
    ],
)
def test_accessors_refuse_values_of_another_type(accessor: str, value: Value) -> None:
    with pytest.raises(TextprotoError):
        _ACCESSORS[accessor](value)


def test_a_singular_field_given_twice_is_an_error() -> None:
    msg = textproto.parse("a: 1 a: 2")
    with pytest.raises(TextprotoError, match="given 2 times"):
        textproto.single(msg, "a")


def test_a_missing_singular_field_reads_as_none() -> None:
    assert textproto.single(textproto.parse("a: 1"), "b") is None
    assert textproto.values(textproto.parse("a: 1"), "b") == []


# The number of tests (and sections) in each of cel-spec's files, counted independently
# of this parser (by the `test {` and `section {` lines of each file).
SPEC_FILES: dict[str, tuple[int, int]] = {
    "basic": (43, 5),
    "comparisons": (406, 10),
    "conversions": (109, 9),
    "fields": (60, 5),
    "fp_math": (30, 1),
    "integer_math": (64, 2),
    "lists": (39, 4),
    "logic": (30, 4),
    "macros": (44, 6),
    "macros2": (46, 5),
    "math_ext": (199, 21),
    "network_ext": (69, 4),
    "optionals": (70, 1),
    "parse": (219, 9),
    "plumbing": (5, 4),
    "string": (51, 7),
    "string_ext": (216, 15),
    "timestamps": (78, 11),
}


def _spec_dir() -> Path:
    directory = conformance.testdata_dir()
    if not directory.is_dir():
        if conformance.data_required():
            pytest.fail(f"cel-spec test data missing at {directory}")
        pytest.skip(f"cel-spec test data not found at {directory} (set POLICYEXT_CEL_SPEC)")
    return directory


@pytest.mark.parametrize(
    ("name", "counts"), [pytest.param(n, c, id=n) for n, c in SPEC_FILES.items()]
)
def test_every_spec_file_parses_with_all_its_tests(name: str, counts: tuple[int, int]) -> None:
    root = textproto.parse_file(_spec_dir() / f"{name}.textproto")
    sections = [textproto.as_message(s) for s in textproto.values(root, "section")]
    tests = [textproto.as_message(t) for s in sections for t in textproto.values(s, "test")]
    assert (len(tests), len(sections)) == counts
    assert textproto.as_text(textproto.values(root, "name")[0]) == name
    assert all(textproto.as_text(t["expr"][0]) for t in tests)


def test_the_spec_folder_holds_exactly_the_known_files() -> None:
    found = {p.stem for p in _spec_dir().glob("*.textproto")}
    assert found == set(SPEC_FILES)
