"""Fuzzing the CEL parser, compiler and evaluator.

Whatever the source text and whatever the variables, `compile()` and `evaluate()` either
succeed or raise a `CELError`: no Python exception of another kind, no crash, no hang.
Errors carry a position inside the source when they carry one at all.

Inputs stay small (the engine bounds source length, nesting and cost), and every call runs
under a generous alarm (tests/hang.py) so that a hang fails the test instead of stalling
the suite.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyext import cel
from policyext.cel import CELError, Limits
from tests.cel.strategies import (
    VARIABLE_NAMES,
    Case,
    arbitrary_values,
    cel_cases,
    long_literals,
    max_examples,
    near_cel,
    nested,
    token_soup,
)
from tests.hang import hang_guard

SETTINGS = settings(
    max_examples=max_examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
DECLARED = dict.fromkeys(VARIABLE_NAMES, "dyn")


def assert_well_formed(error: CELError, source: str) -> None:
    assert isinstance(error.message, str) and error.message, repr(error)
    if error.line is not None:
        assert error.column is not None and error.column >= 1, repr(error)
        assert 1 <= error.line <= source.count("\n") + 1, repr(error)


def compile_and_evaluate(
    source: str,
    activation: Mapping[str, object] | None = None,
    *,
    limits: Limits | None = None,
) -> list[str]:
    """Compile with and without the checker and evaluate what compiles. CELErrors are fine;
    any other exception escapes and fails the test. Returns what happened, per mode."""
    outcomes: list[str] = []
    for check in (True, False):
        with hang_guard():
            try:
                program = cel.compile(source, DECLARED, limits=limits, check=check)
            except CELError as error:
                assert_well_formed(error, source)
                outcomes.append("compile error")
                continue
            try:
                program.evaluate(activation or {})
            except CELError as error:
                assert_well_formed(error, source)
                outcomes.append("evaluation error")
                continue
            outcomes.append("value")
    return outcomes


# any code point, lone surrogates included (a Python str may hold them)
unicode_text = st.text(st.characters() | st.characters(categories=["Cs"]), max_size=200)


@SETTINGS
@given(source=unicode_text)
def test_arbitrary_unicode_text_only_ever_raises_cel_errors(source: str) -> None:
    assert len(compile_and_evaluate(source)) == 2


@SETTINGS
@given(source=token_soup)
def test_random_cel_token_soup_only_ever_raises_cel_errors(source: str) -> None:
    assert len(compile_and_evaluate(source)) == 2


@SETTINGS
@given(source=near_cel())
def test_almost_valid_expressions_only_ever_raise_cel_errors(source: str) -> None:
    assert len(compile_and_evaluate(source)) == 2


@SETTINGS
@given(source=nested())
def test_deeply_nested_input_only_ever_raises_cel_errors(source: str) -> None:
    assert len(compile_and_evaluate(source)) == 2


@SETTINGS
@given(source=long_literals())
def test_very_long_literals_only_ever_raise_cel_errors(source: str) -> None:
    assert len(compile_and_evaluate(source)) == 2


@SETTINGS
@given(case=cel_cases(), data=st.data())
def test_any_activation_only_ever_raises_cel_errors(case: Case, data: st.DataObject) -> None:
    # the generated expression, but over values of any shape bound to the same names
    activation = data.draw(st.fixed_dictionaries(dict.fromkeys(case.activation, arbitrary_values)))
    assert len(compile_and_evaluate(case.source, activation)) == 2


# Inputs that have broken parsers before: extremes of nesting, length and encoding.
EXTREME_SOURCES = [
    "(" * 100_000,
    "(" * 5_000 + "1" + ")" * 5_000,
    "[" * 5_000 + "]" * 5_000,
    "{" * 5_000,
    "-" * 5_000 + "1",
    "!" * 5_000 + "true",
    "a." * 4_000 + "b",
    "a" + "[0]" * 3_000,
    "f(" * 3_000,
    "x.all(a, " * 100 + "true" + ")" * 100,
    "1 + " * 3_000 + "1",
    "true && " * 3_000 + "true",
    "true ? " * 2_000 + "1" + " : 2" * 2_000,
    "1" * 100_000,
    "0x" + "f" * 50_000,
    "1." + "5" * 50_000,
    "'" + "a" * 9_000 + "'",
    "'" + "\\u00e9" * 1_500 + "'",
    "b'" + "\\xff" * 2_000 + "'",
    "[" + "1," * 4_000 + "1]",
    "{" + ", ".join(f"{i}: {i}" for i in range(1_500)) + "}",
    "\x00",
    "\ud800",
    "'\ud800'",
    "\ufeff1",
    "'\\",
    "'''",
    "r'",
    "b'\\u0041'",
    "'\\U00110000'",
    "1e999999999999",
    "99999999999999999999999999999999999999",
    "-9223372036854775809",
    "18446744073709551616u",
    "x.?",
    "[?]",
    "{?}",
    "has()",
    "has(x)",
    "x.all()",
    "x.map(1, 2)",
    "x.exists_one(a, b, c, d)",
    "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z(1)",
]


@pytest.mark.parametrize("source", EXTREME_SOURCES, ids=[repr(s[:30]) for s in EXTREME_SOURCES])
def test_extreme_source_only_ever_raises_cel_errors(source: str) -> None:
    assert len(compile_and_evaluate(source)) == 2


@pytest.mark.parametrize("depth", [49, 50, 51, 100, 400])
@pytest.mark.parametrize("shape", ["({})", "[{}]", "-{}", "!{}", "{{1: {}}}", "f({})"])
def test_nesting_up_to_a_raised_limit_only_ever_raises_cel_errors(depth: int, shape: str) -> None:
    source = "1"
    for _ in range(depth):
        source = shape.format(source)
    limits = Limits(max_nesting_depth=400, max_source_length=100_000)
    assert len(compile_and_evaluate(source, limits=limits)) == 2


# Python values that are not CEL values, or sit at the edges of CEL's ranges.
FOREIGN_VALUES: list[object] = [
    object(),
    {1, 2},
    frozenset(),
    complex(1, 2),
    2**64,
    -(2**63) - 1,
    float("nan"),
    float("-inf"),
    bytearray(b"ab"),
    memoryview(b"ab"),
    (1, (2, (3,))),
    {(1, 2): "tuple key"},
    {1.5: "float key"},
    {None: "null key"},
    {b"k": "bytes key"},
    {True: "t", 2: "two"},
    [[[[[[[[[[[]]]]]]]]]]],
    range(3),
    type,
    print,
    Ellipsis,
]
EXPRESSIONS_OVER_X = [
    "x",
    "x == x",
    "x != 1",
    "x + x",
    "size(x)",
    "type(x)",
    "string(x)",
    "x.a",
    "has(x.a)",
    "x[0]",
    "x['k']",
    "1 in x",
    "x.all(v, v == v)",
    "x.map(v, v)",
    "[x] == [x]",
    "{'k': x}.k",
    "dyn(x) < 1",
]


@pytest.mark.parametrize("expression", EXPRESSIONS_OVER_X)
@pytest.mark.parametrize("value", FOREIGN_VALUES, ids=[type(v).__name__ for v in FOREIGN_VALUES])
def test_foreign_python_values_only_ever_raise_cel_errors(expression: str, value: object) -> None:
    assert len(compile_and_evaluate(expression, {"x": value})) == 2
