"""Differential tests: our CEL engine against Google's C++ CEL runtime as the oracle.

The oracle is `cel-expr-python` (a test-only dependency). Both engines evaluate the same
generated expression over the same activation, with every variable declared `dyn`. They
agree when both produce the same value, with exact CEL types (int, uint and double are
told apart, NaN equals NaN, -0.0 differs from 0.0, lists and maps element by element), or
when both fail: any error counts, at compile time or at evaluation time, on either side.

Where the oracle differs from cel-go (the runtime Kubernetes uses), cel-go is right: such
shapes are kept out of the generator, each with its reason (see `strategies`).

Runs `max_examples` per test; set `HYPOTHESIS_PROFILE=long` (or `soak`) for longer runs.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, note, settings

import policyext.cel as ours
from policyext.cel.errors import CELError, CELSyntaxError
from policyext.cel.values import CELType, Duration, Timestamp, UInt
from tests.cel.strategies import Case, cel_cases, max_examples, near_cel, token_soup

cel = pytest.importorskip("cel_expr_python.cel", reason="the oracle, cel-expr-python, is missing")
ext_optional = pytest.importorskip("cel_expr_python.ext.ext_optional")
ext_strings = pytest.importorskip("cel_expr_python.ext.ext_strings")
ext_math = pytest.importorskip("cel_expr_python.ext.ext_math")
ext_encoders = pytest.importorskip("cel_expr_python.ext.ext_encoders")

SETTINGS = settings(
    max_examples=max_examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@dataclass(frozen=True)
class Outcome:
    """What one engine made of a case: a value, or an error (with the stage it came from)."""

    value: object = None
    error: str | None = None

    def __repr__(self) -> str:
        return f"error({self.error!r})" if self.error is not None else f"value({self.value!r})"


# ---------------------------------------------------------------------------------------
# The oracle, and its results in our representation.

# The oracle's type names, as our `type()` names them.
_TYPE_NAMES = {
    "NULL": "null_type",
    "DURATION": "google.protobuf.Duration",
    "TIMESTAMP": "google.protobuf.Timestamp",
}


@cache
def _oracle_env(names: tuple[str, ...]) -> Any:
    # the extensions Kubernetes has too; optional syntax only matters to the parser test
    extensions = [
        ext_optional.ExtOptional(),
        ext_strings.ExtStrings(),
        ext_math.ExtMath(),
        ext_encoders.ExtEncoders(),
    ]
    return cel.NewEnv(variables={name: cel.Type.DYN for name in names}, extensions=extensions)


def oracle_type_name(type_: Any) -> str:
    name: str = type_.name()
    base = name.split("<", 1)[0]
    return _TYPE_NAMES.get(base, base.lower())


def from_oracle(value: Any) -> Outcome:
    """Convert one of the oracle's `Value`s (recursively) to our runtime representation."""
    kind = oracle_type_name(value.type())
    if kind == "error":
        return Outcome(error=f"eval: {value.plain_value()}")
    return Outcome(value=_convert(kind, value.value()))


def _convert(kind: str, raw: Any) -> object:
    if kind == "uint":
        return UInt(raw)
    if kind == "bytes":
        return bytes(raw)
    if kind == "list":
        return [_element(item) for item in raw]
    if kind == "map":
        # keys come back as plain Python values: a uint key reads as an int (see `same_key`)
        return {key: _element(item) for key, item in raw.items()}
    if kind == "type":
        return CELType(oracle_type_name(raw))
    if kind == "google.protobuf.Duration":
        assert isinstance(raw, datetime.timedelta)
        micros = (raw.days * 86_400 + raw.seconds) * 1_000_000 + raw.microseconds
        return Duration(micros * 1000)
    if kind == "google.protobuf.Timestamp":
        assert isinstance(raw, datetime.datetime)
        return Timestamp.from_datetime(raw)
    if kind in ("null_type", "bool", "int", "double", "string"):
        return raw
    raise AssertionError(f"the oracle returned a value of an unexpected type: {kind}")


def _element(value: Any) -> object:
    outcome = from_oracle(value)
    assert outcome.error is None, outcome.error
    return outcome.value


def run_oracle(case: Case, *, check: bool) -> Outcome:
    env = _oracle_env(tuple(sorted(case.activation)))
    try:
        expr = env.compile(case.source, disable_check=not check)
    except RuntimeError as error:
        return Outcome(error=f"compile: {error}")
    try:
        return from_oracle(expr.eval(data=case.activation))
    except RuntimeError as error:  # some evaluation errors are raised, not returned
        return Outcome(error=f"eval: {error}")


def run_ours(case: Case, *, check: bool) -> Outcome:
    """Our engine; anything but a CELError escapes and fails the test."""
    variables = {name: "dyn" for name in case.activation}
    try:
        program = ours.compile(
            case.source, variables, check=check, homogeneous=False, extensions=True
        )
    except CELError as error:
        return Outcome(error=f"compile: {error}")
    try:
        return Outcome(value=program.evaluate(case.activation))
    except CELError as error:
        return Outcome(error=f"eval: {error}")


# ---------------------------------------------------------------------------------------
# Exact comparison of values.


def same_value(a: object, b: object) -> bool:
    """Equal, with exact CEL types: no 1 == 1u == 1.0, no True == 1; NaN is NaN."""
    if isinstance(a, list | tuple):
        return (
            isinstance(b, list | tuple)
            and len(a) == len(b)
            and all(same_value(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and same_map(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        assert isinstance(b, float)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def same_key(a: object, b: object) -> bool:
    # the oracle loses the int/uint distinction of map keys, so only bool is told apart
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int) and isinstance(b, int):
        return int(a) == int(b)
    return type(a) is type(b) and a == b


def same_map(a: Mapping[object, object], b: Mapping[object, object]) -> bool:
    if len(a) != len(b):
        return False
    for key, value in a.items():
        match = [other for other in b if same_key(key, other)]
        if len(match) != 1 or not same_value(value, b[match[0]]):
            return False
    return True


def agree(mine: Outcome, theirs: Outcome) -> bool:
    if mine.error is not None or theirs.error is not None:
        return mine.error is not None and theirs.error is not None
    return same_value(mine.value, theirs.value)


# ---------------------------------------------------------------------------------------
# The properties.


@SETTINGS
@given(case=cel_cases())
def test_our_engine_agrees_with_googles_runtime_without_type_checking(case: Case) -> None:
    theirs = run_oracle(case, check=False)
    mine = run_ours(case, check=False)
    note(f"oracle: {theirs!r}\nours:   {mine!r}")
    assert agree(mine, theirs), f"{case!r}\n  oracle: {theirs!r}\n  ours:   {mine!r}"


@SETTINGS
@given(case=cel_cases())
def test_what_googles_checker_accepts_ours_accepts_and_evaluates_alike(case: Case) -> None:
    theirs = run_oracle(case, check=True)
    if theirs.error is not None and theirs.error.startswith("compile:"):
        return  # a checker may be more lenient than Google's; only false rejections count
    mine = run_ours(case, check=True)
    note(f"oracle: {theirs!r}\nours:   {mine!r}")
    if _failed(theirs, "eval:") and _failed(mine, "compile:"):
        # a conversion of a constant that fails (`uint('-1')`): Kubernetes converts constants
        # when it builds the program and refuses the rule there, as ours does when compiling;
        # the C++ runtime fails it when evaluating
        return
    assert mine.error is None or not mine.error.startswith("compile:"), (
        f"our checker rejects what Google's accepts: {case!r}\n  ours: {mine!r}"
    )
    assert agree(mine, theirs), f"{case!r}\n  oracle: {theirs!r}\n  ours:   {mine!r}"


def _failed(outcome: Outcome, stage: str) -> bool:
    return outcome.error is not None and outcome.error.startswith(stage)


def parses_in_oracle(source: str) -> bool:
    try:
        _oracle_env(("x", "y", "obj")).compile(source, disable_check=True)
    except RuntimeError:
        return False
    return True


def parses_in_ours(source: str) -> bool:
    try:
        ours.compile(source, {"x": "dyn", "y": "dyn", "obj": "dyn"}, check=False, extensions=True)
    except CELSyntaxError:
        return False
    except CELError:
        return True  # parsed, then refused for another reason (e.g. an unknown function)
    return True


# Sources where the two parsers legitimately differ:
# - cel-go's two-variable comprehensions (`m.all(k, v, p)`), which Kubernetes enables, read
#   these calls as macros with their own rules; Google's C++ parser reads plain calls;
# - a raw string that ends in a backslash (`r'\'`) is valid in the grammar and in cel-go,
#   but C++ rejects it when it unescapes the literal.
PARSERS_DIFFER = re.compile(
    r"\.\s*(all|exists|exists_one|existsOne|transform\w*)\s*\(\s*\w+\s*,\s*\w+\s*,"
    r"|[rR]('[^'\n]*\\'|\"[^\"\n]*\\\")"
)


@SETTINGS
@given(source=near_cel() | token_soup)
def test_our_parser_accepts_exactly_what_googles_parser_accepts(source: str) -> None:
    assume(not PARSERS_DIFFER.search(source))
    theirs = parses_in_oracle(source)
    assert parses_in_ours(source) == theirs, (
        f"{source!r}: Google's parser {'accepts' if theirs else 'rejects'} it, ours does not"
    )


# Shapes worth checking on every run, whatever hypothesis draws: error absorption, numeric
# bounds, heterogeneous equality, NaN and signed zero, Unicode and escapes.
KNOWN_CASES = [
    Case("(1 / 0 == 1) || true"),
    Case("true || (1 / 0 == 1)"),
    Case("(1 / 0 == 1) && false"),
    Case("false && (1 / 0 == 1)"),
    Case("(1 / 0 == 1) || (2 / 0 == 1)"),
    Case("x.missing || true", {"x": {"a": 1}}),
    Case("true ? 1 : 1 / 0"),
    Case("(1 / 0 > 0) ? 1 : 2"),
    Case("[0, 1].exists(i, 1 / i > 0)"),
    Case("[0, 1].all(i, 1 / i > 0)"),
    Case("[1, 2, 3].exists_one(i, i / (i - 2) > 0)"),
    Case("9223372036854775807 + 1"),
    Case("-9223372036854775808"),
    Case("-9223372036854775808 / -1"),
    Case("-9223372036854775808 % -1"),
    Case("-0x8000000000000000"),
    Case("18446744073709551615u + 1u"),
    Case("0u - 1u"),
    Case("-5 / 2"),
    Case("-5 % 3"),
    Case("int(-1.9)"),
    Case("int(9.223372036854775807e18)"),
    Case("uint(-0.5)"),
    Case("uint(1.8446744073709552e19)"),
    Case("double(18446744073709551615u)"),
    Case("1 == 1u && 1u == 1.0 && 1.0 == 1"),
    Case("[1] == [1.0]"),
    Case("{1: 'a'}[1u] + {1: 'b'}[1.0]"),
    Case("{1: 'a'}[1.5]"),
    Case("{true: 1}[1]"),
    Case("size({true: 0, 1: 1, false: 2, 0u: 3})"),
    Case("{1: 0, true: 1}[1]"),
    Case("{1: 0, true: 1}[true]"),
    Case("{false: 'f', 0: 'zero'}[false] + {false: 'f', 0: 'zero'}[0.0]"),
    Case("1 < 1u || 1.5 > 1u"),
    Case("0.0 / 0.0 == 0.0 / 0.0"),
    Case("[0.0 / 0.0] == [0.0 / 0.0]"),
    Case("-0.0"),
    Case("-0.0 == 0.0"),
    Case("1.0 / 0.0"),
    Case("string(-0.0) + string(1e20) + string(123456789.0) + string(1e-05)"),
    Case("x == 1.0", {"x": 1}),
    Case("'\\101\\x41\\u00e9\\U0001F600' == 'AAé😀'"),
    Case("b'\\xff\\377' + b'é'"),
    Case("size('héllo😀')"),
    Case("'é' < 'z'"),
    Case("string(b'\\xff')"),
    Case("bytes('😀')"),
    Case("r'\\n' + '''a\nb'''"),
    # (a key written twice is an error in C++ and keeps its last value in cel-go, which
    # policyext follows: the parity test against Kubernetes checks it)
    Case("{[1]: 2}"),
    Case("has(x.a) && !has(x.b)", {"x": {"a": None}}),
    Case("has(x.a.b)", {"x": {"a": 1}}),
    Case("x.a.b", {"x": {"a": 1}}),
    Case("x[1]", {"x": [1, 2.5]}),
    Case("x[2]", {"x": [1, 2.5]}),
    Case("x[-1]", {"x": [1, 2.5]}),
    Case("size(x.map(k, x[k])) + size(x.filter(k, k == 'a'))", {"x": {"a": 1, "b": [None]}}),
    Case("[1, 2, 3].map(i, i > 1, i * 10)"),
    Case("[1, 2].filter(i, i)"),
    Case("[1].exists(i, i)"),
    Case("type(x) == map && type(x.a) == list && type(null) == null_type", {"x": {"a": []}}),
    Case("type(type(1)) == type"),
    Case("[int, uint, double, bool, string, bytes, list, map, null_type, type]"),
    Case("'abc'.matches('^a.c$') && matches('abc', 'b')"),
    Case("'abc'.matches('[')"),
    Case("int('-9223372036854775808') + int('007')"),
    Case("int('1.5')"),
    Case("int('١٢')"),  # Arabic-Indic digits: Python's int() reads them, CEL does not
    Case("uint('١')"),
    Case("double('١.5')"),
    Case("uint('18446744073709551616')"),
    Case("double('1e3') + double('.5') + double('-0')"),
    Case("bool('true') && !bool('FALSE') && bool('1')"),
    Case("bool('yes')"),
    Case("duration('1h30m') + duration('-90m') == duration('0')"),
    Case("timestamp('2020-01-01T00:00:00Z') - duration('1h')"),
    Case("timestamp(253402300800)"),
    Case("timestamp('2020-01-01T00:00:00Z') - timestamp(0)"),
    Case("int(timestamp('1970-01-01T00:00:10Z'))"),
    Case("1 in [1.0] && 1u in {1: 2} && !('a' in {'b': 1})"),
    Case("'a' in 'abc'"),
    Case("[1] + ['a']"),
    Case("{'a': 1} + {'b': 2}"),
    Case("1 + 1.0"),
    Case("!1"),
    Case("1 ? 2 : 3"),
    Case("dyn(1u) == 1.0"),
    Case("undeclared"),
]


# CEL keeps `true` and `1` apart as map keys; our maps are Python dicts, which cannot.
_BOOL_AND_INT_KEYS = "a map with bool and int keys"
KNOWN_LIMITATIONS = {
    "size({true: 0, 1: 1, false: 2, 0u: 3})": _BOOL_AND_INT_KEYS,
    "{1: 0, true: 1}[1]": _BOOL_AND_INT_KEYS,
    "{1: 0, true: 1}[true]": _BOOL_AND_INT_KEYS,
    "{false: 'f', 0: 'zero'}[false] + {false: 'f', 0: 'zero'}[0.0]": _BOOL_AND_INT_KEYS,
    # where Kubernetes (cel-go) differs from the C++ runtime, Kubernetes is followed
    "has(x.a.b)": "has() of a field of an int is false in Kubernetes, an error in C++",
}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            case,
            id=case.source,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_LIMITATIONS[case.source])]
            if case.source in KNOWN_LIMITATIONS
            else [],
        )
        for case in KNOWN_CASES
    ],
)
def test_known_tricky_expression_evaluates_as_in_googles_runtime(case: Case) -> None:
    theirs = run_oracle(case, check=False)
    mine = run_ours(case, check=False)
    assert agree(mine, theirs), f"oracle: {theirs!r}\nours:   {mine!r}"


# Spellings at the edges of the grammar: literal forms, prefixes, escapes, trailing commas,
# keywords where identifiers go, macros with the wrong arguments.
PARSE_EDGE_CASES = [
    "0X10",
    "0x",
    "1e",
    "1.e5",
    "01",
    "0u",
    "1U",
    "0x1fU",
    "1.0u",
    ".5e1",
    "5.",
    "rb'a'",
    "bR'a'",
    "BR'a'",
    "b'\\u0041'",
    "'\\X41'",
    "'\\400'",
    "'\\377'",
    "'\\08'",
    "'\\U00110000'",
    "'\\uD800'",
    "'\\x4'",
    '"""a""""',
    "'a\nb'",
    "'''a\nb'''",
    "'a\rb'",
    "1 // comment",
    "/* c */ 1",
    "!!true",
    "--1",
    "-!1",
    "!-1",
    "a ? b : c ? d : e",
    "a ? b ? c : d : e",
    "x[1:2]",
    "f()()",
    "[1,]",
    "[,]",
    "{1: 2,}",
    "{,}",
    "f(1,)",
    "f(,)",
    "x.all(a, a,)",
    "has(x.y,)",
    "has(x[0])",
    "has(.x.y)",
    "x in",
    "1 < 2 < 3",
    "x.1",
    "x.`a.b/c-d`",
    "x.``",
    "Foo{a: 1}",
    ".Foo{}",
    "x.?y.?z",
    "x[?0]",
    "[?x]",
    "{?1: x}",
    "é",
    "\ufeff1",
    "\u00a01",
    ".x",
    "x.as",
    ".as",
    "as",
    "x.while",
    "x.in",
    ".true",
    "x.true",
    "x.?null",
    "true.false",
    "x.null()",
    "(1)(2)",
    "1 2",
]


@pytest.mark.parametrize("source", PARSE_EDGE_CASES)
def test_our_parser_accepts_an_edge_case_exactly_when_googles_parser_does(source: str) -> None:
    theirs = parses_in_oracle(source)
    assert parses_in_ours(source) == theirs, (
        f"Google's parser {'accepts' if theirs else 'rejects'} it, ours does not"
    )
