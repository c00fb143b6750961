"""The syntax of CEL as policies write it: literals, optional syntax, names, and the positions
of syntax errors. Everything goes through the public API (`compile` and `evaluate`)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from policyext.cel import (
    CELCheckError,
    CELError,
    CELEvalError,
    CELSyntaxError,
    Optional,
    UInt,
    compile,
)
from tests.cel.same import same


def evaluate(source: str, activation: Mapping[str, object] | None = None) -> object:
    bindings = dict(activation or {})
    return compile(source, dict.fromkeys(bindings, "dyn")).evaluate(bindings)


# -- literals ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # strings: both quotes, escapes meaning code points
        ("'abc'", "abc"),
        ('"abc"', "abc"),
        ('"it\'s"', "it's"),
        ("'say \"hi\"'", 'say "hi"'),
        ("''", ""),
        (r"'\a\b\f\n\r\t\v'", "\a\b\f\n\r\t\v"),
        (r"'\\ \? \` \' \"'", "\\ ? ` ' \""),
        (r"'\x41\X42'", "AB"),
        (r"'\101'", "A"),
        (r"'\377'", "\u00ff"),
        (r"'\xff'", "\u00ff"),
        (r"'\u00e9\u00E9'", "éé"),
        (r"'\U0001F600'", "\U0001f600"),
        ("'€λ'", "€λ"),
        # raw strings keep backslashes
        (r"r'\n'", "\\n"),
        (r"R'\d+'", "\\d+"),
        (r"r'\"'", '\\"'),
        # triple-quoted strings keep their newlines and may hold quotes
        ("'''a\nb'''", "a\nb"),
        ('"""a\n\n  b"""', "a\n\n  b"),
        ("'''it's'''", "it's"),
        ('"""say "hi" """', 'say "hi" '),
        ("r'''a\\n\nb'''", "a\\n\nb"),
        ("'''\\t\n'''", "\t\n"),
        # bytes: escapes are bytes, characters are their UTF-8 encoding
        ("b'abc'", b"abc"),
        ('B"abc"', b"abc"),
        (r"b'\xff\x00'", b"\xff\x00"),
        (r"b'\377'", b"\xff"),
        (r"b'\n'", b"\n"),
        ("b'ÿ'", b"\xc3\xbf"),
        (r"bR'\x00'", b"\\x00"),
        (r"br'\n'", b"\\n"),
        ("b'''a\nb'''", b"a\nb"),
        # integers: decimal and hexadecimal, signed and unsigned
        ("0", 0),
        ("42", 42),
        ("0x1F", 31),
        ("0x7fffffffffffffff", 2**63 - 1),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("-0x8000000000000000", -(2**63)),
        ("42u", UInt(42)),
        ("42U", UInt(42)),
        ("0x1Fu", UInt(31)),
        ("18446744073709551615u", UInt(2**64 - 1)),
        ("0xFFFFFFFFFFFFFFFFu", UInt(2**64 - 1)),
        # doubles
        ("1.5", 1.5),
        ("1e3", 1000.0),
        ("1E-2", 0.01),
        ("2.5e+2", 250.0),
        (".5", 0.5),
        ("0.0", 0.0),
        ("-0.0", -0.0),
        # the other literals
        ("true", True),
        ("false", False),
        ("null", None),
        ("[]", []),
        ("{}", {}),
        ("[dyn(1), dyn('a'), dyn(2.0), dyn(3u)]", [1, "a", 2.0, UInt(3)]),
        (
            "{dyn('a'): dyn(1), dyn(2): dyn('b'), dyn(true): dyn(null)}",
            {"a": 1, 2: "b", True: None},
        ),
    ],
    ids=repr,
)
def test_every_literal_form_evaluates_to_its_value_with_the_right_type(
    source: str, expected: object
) -> None:
    assert same(evaluate(source), expected)


@pytest.mark.parametrize(
    ("source", "line", "column"),
    [
        ("9223372036854775808", 1, 1),
        ("-9223372036854775809", 1, 2),
        ("-(9223372036854775808)", 1, 3),
        ("0x8000000000000000", 1, 1),
        ("18446744073709551616u", 1, 1),
        ("0x10000000000000000u", 1, 1),
        (r"'\q'", 1, 2),
        (r"'ab\u12'", 1, 4),
        (r"'\U00110000'", 1, 2),
        (r"'\uD800'", 1, 2),
        (r"'\400'", 1, 2),
        (r"'\8'", 1, 2),
        (r"'\xZ1'", 1, 2),
        (r"b'\u0041'", 1, 3),
        ("'abc", 1, 1),
        ("x + '''abc\ndef", 1, 5),
        ("'ab\ncd'", 1, 4),
        ("1_000", 1, 2),
    ],
    ids=repr,
)
def test_malformed_literals_are_syntax_errors_at_their_position(
    source: str, line: int, column: int
) -> None:
    with pytest.raises(CELSyntaxError) as caught:
        compile(source, {"x": "dyn"})
    assert (caught.value.line, caught.value.column) == (line, column)


# -- optional syntax -----------------------------------------------------------------------
NODE = {"metadata": {"labels": {"zone": "a", "tier-1": "yes"}, "name": "n1"}}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("node.?metadata.?labels.?zone", Optional("a")),
        ("node.?metadata.?labels.?region", Optional()),
        ("node.?spec.?taints", Optional()),
        ("node.metadata.?labels.zone", Optional("a")),
        ("node.metadata.labels[?'zone']", Optional("a")),
        ("node.metadata.labels[?'region']", Optional()),
        ("node.metadata.labels[?'region'].orValue('none')", "none"),
        ("node.?metadata.?name.hasValue()", True),
        ("[?node.?metadata.?name, ?node.?spec]", ["n1"]),
        ("[1, ?optional.none(), 2,]", [1, 2]),
        ("{?'zone': node.metadata.labels[?'zone'], ?'region': optional.none()}", {"zone": "a"}),
        ("{'n': 1, ?'m': optional.of(2),}", {"n": 1, "m": 2}),
    ],
    ids=repr,
)
def test_optional_syntax_selects_indexes_and_builds_literals(source: str, expected: object) -> None:
    assert same(evaluate(source, {"node": NODE}), expected)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("[1, 2, 3,]", [1, 2, 3]),
        ("[\n  'a',\n  'b',\n]", ["a", "b"]),
        ("{'a': 1,}", {"a": 1}),
        ("{\n  'a': 1,\n  'b': 2,\n}", {"a": 1, "b": 2}),
        ("[dyn([1,]), dyn({2: 3,}),]", [[1], {2: 3}]),
        # CEL's grammar allows the trailing comma of an empty literal too (as cel-go does)
        ("[,]", []),
        ("{,}", {}),
    ],
    ids=repr,
)
def test_trailing_commas_are_accepted_in_list_and_map_literals(
    source: str, expected: object
) -> None:
    assert same(evaluate(source), expected)


@pytest.mark.parametrize("source", ["[,,]", "{,,}", "[1,,]", "{'a': 1,,}", "[1 2]"], ids=repr)
def test_a_comma_without_an_element_is_a_syntax_error(source: str) -> None:
    with pytest.raises(CELSyntaxError):
        compile(source)


# -- names ---------------------------------------------------------------------------------
OBJECT = {"a-b": 1, "a.b": 2, "a/b": 3, "a b": 4, "if": 5, "ok": 6}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x.`a-b`", 1),
        ("x.`a.b`", 2),
        ("x.`a/b`", 3),
        ("x.`a b`", 4),
        ("x.`ok`", 6),
        ("x.?`a-b`", Optional(1)),
        ("x.?`c-d`", Optional()),
        ("has(x.`a-b`)", True),
        ("has(x.`c-d`)", False),
    ],
    ids=repr,
)
def test_backquoted_field_names_select_keys_that_are_not_identifiers(
    source: str, expected: object
) -> None:
    assert same(evaluate(source, {"x": OBJECT}), expected)


RESERVED = [
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
    "in",
]


@pytest.mark.parametrize("word", RESERVED)
def test_reserved_words_cannot_name_variables_or_functions(word: str) -> None:
    for source, column in ((word, 1), (f"1 + {word}", 5), (f"{word}(1)", 1)):
        with pytest.raises(CELSyntaxError) as caught:
            compile(source, {word: "dyn"})
        assert (caught.value.line, caught.value.column) == (1, column), source


def test_a_reserved_word_may_still_be_selected_as_a_field() -> None:
    assert evaluate("x.if + x.ok", {"x": OBJECT}) == 11


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("1 + // one\n  2", 3),
        ("// leading comment\n1", 1),
        ("\t1\r\n+\f2 ", 3),
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("10 - 4 - 3", 3),
        ("100 / 10 / 5", 2),
        ("-2 * 3", -6),
        ("--2", 2),
        ("!!true", True),
        ("!true || true", True),
        ("true || false && false", True),
        ("1 < 2 == true", True),
        ("'a' in ['a'] && 2 in [2]", True),
        ("false ? 1 : true ? 2 : 3", 2),
        ("true ? (false ? 1 : 2) : 3", 2),
        ("1 + 2 == 3 ? 'y' : 'n'", "y"),
        ("[1, 2][1] + {'a': 3}.a", 5),
        (".size('ab')", 2),
    ],
    ids=repr,
)
def test_comments_whitespace_precedence_and_associativity_follow_the_grammar(
    source: str, expected: object
) -> None:
    assert same(evaluate(source), expected)


# -- syntax errors -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "line", "column"),
    [
        ("1 +", 1, 4),
        ("", 1, 1),
        ("1 +\n  2 +\n  * 3", 3, 3),
        ("x.metadata\n  .labels(\n    1,\n    2\n  ]", 5, 3),
        ("x ==\n  'a\\qb'", 2, 5),
        ("x ==\n\n   #", 3, 4),
        ("[1,\n 2,,\n 3]", 2, 4),
        ("{'a': 1\n 'b': 2}", 2, 2),
        ("has(x)", 1, 5),
        ("has(\n  x.?y)", 2, 6),
        ("x.all(1, true)", 1, 7),
        ("[1].map(\n  x.y, x)", 2, 5),
        ("[1].all(i, i, true)", 1, 12),
        ("x.", 1, 3),
        ("x.?(y)", 1, 4),
        ("1 ? 2", 1, 6),
        ("\t\tx y", 1, 5),
        ("'é' + #", 1, 7),
        ("x &&\n  (x ||\n   x", 3, 5),
        ("x\n  .all(v,\n    v >)", 3, 8),
        # the middle operand of ?: is not itself a conditional without parentheses
        ("true ? false ? 1 : 2 : 3", 1, 14),
        ("`a`", 1, 1),
    ],
    ids=repr,
)
def test_syntax_errors_carry_the_1_based_line_and_column_of_the_problem(
    source: str, line: int, column: int
) -> None:
    with pytest.raises(CELSyntaxError) as caught:
        compile(source, {"x": "dyn"})
    error = caught.value
    assert (error.line, error.column) == (line, column)
    assert str(error).startswith(f"{line}:{column}: ")


def test_syntax_errors_are_cel_errors_but_neither_check_nor_evaluation_errors() -> None:
    with pytest.raises(CELSyntaxError) as caught:
        compile("1 +")
    assert isinstance(caught.value, CELError)
    assert not isinstance(caught.value, CELCheckError | CELEvalError)
    assert caught.value.message == "unexpected end of input"
