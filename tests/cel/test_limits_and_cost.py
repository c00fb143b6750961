"""The limits on what a policy expression may be (source length, nesting, comprehension
nesting) and on what one evaluation may do (the cost budget), through the public API."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest

from policyext.cel import (
    COST,
    CELCheckError,
    CELError,
    CELEvalError,
    CELSyntaxError,
    CostLimitExceeded,
    Limits,
    Program,
    compile,
    new_frame,
)
from tests.hang import hang_guard


def test_the_default_limits_are_the_documented_ones() -> None:
    limits = Limits()
    assert limits.max_source_length == 10_000
    assert limits.max_nesting_depth == 50
    assert limits.max_comprehension_nesting == 50
    assert limits.cost_budget == 1_000_000
    assert compile("1").limits == limits


# -- the source ----------------------------------------------------------------------------
@pytest.mark.parametrize("limit", [1, 5, 100])
def test_an_expression_longer_than_max_source_length_is_a_check_error(limit: int) -> None:
    at_limit = "1" + " " * (limit - 1)
    assert compile(at_limit, limits=Limits(max_source_length=limit)).evaluate({}) == 1
    with pytest.raises(CELCheckError) as caught:
        compile(at_limit + " ", limits=Limits(max_source_length=limit))
    assert str(limit) in caught.value.message


def test_the_default_source_length_limit_applies_without_explicit_limits() -> None:
    compile("1" + " " * 9_999)
    with pytest.raises(CELCheckError):
        compile("1" + " " * 10_000)


# each builds an expression nested `depth` levels deep
NESTINGS: dict[str, Callable[[int], str]] = {
    "parentheses": lambda d: "(" * d + "1" + ")" * d,
    "lists": lambda d: "[" * d + "1" + "]" * d,
    "maps": lambda d: "{'a': " * d + "1" + "}" * d,
    "calls": lambda d: "dyn(" * d + "1" + ")" * d,
    "indexes": lambda d: "x[" * d + "0" + "]" * d,
    "conditionals": lambda d: "true ? 1 : " * d + "2",
    "lines": lambda d: "[\n" * d + "1" + "\n]" * d,
    "negations": lambda d: "!" * d + "true",
    "minus signs": lambda d: "-" * d + "1",
}


@pytest.mark.parametrize(
    "shape",
    [pytest.param(name) if name in ("negations", "minus signs") else name for name in NESTINGS],
)
def test_nesting_deeper_than_max_nesting_depth_is_a_syntax_error_with_position(
    shape: str,
) -> None:
    build = NESTINGS[shape]
    limits = Limits(max_nesting_depth=20)
    compile(build(5), {"x": "dyn"}, limits=limits)  # well within the limit
    for depth in (25, 60, 300):
        with pytest.raises(CELSyntaxError) as caught:
            compile(
                build(depth),
                {"x": "dyn"},
                limits=Limits(max_nesting_depth=20, max_source_length=10**5),
            )
        assert caught.value.line is not None and caught.value.column is not None
        assert "nested" in caught.value.message
    with pytest.raises(CELSyntaxError):
        compile(build(60), {"x": "dyn"})  # the default limit is 50


def test_a_nesting_error_on_a_later_line_reports_that_line() -> None:
    with pytest.raises(CELSyntaxError) as caught:
        compile("[\n" * 60 + "1" + "\n]" * 60)
    assert caught.value.line is not None and caught.value.line > 1


TOO_DEEP = "expression nested too deeply to compile"
LONG_CHAINS = [
    ("1" + " + 1" * 3000, CELCheckError, TOO_DEEP),
    ("x" + ".a" * 3000, CELCheckError, TOO_DEEP),
    ("x" + "[0]" * 3000, CELCheckError, TOO_DEEP),
    ("x" + ".f()" * 2000, CELCheckError, TOO_DEEP),
    ("true" + " && x" * 3000, CELCheckError, TOO_DEEP),
    ("-" * 3000 + "1", CELSyntaxError, "expression nested more than 50 levels deep"),
]


@pytest.mark.parametrize(
    ("source", "error", "message"),
    [
        pytest.param(*chain, id=chain[0][:12] + f"...({len(chain[0])} chars)")
        for chain in LONG_CHAINS
    ],
)
def test_very_long_chains_fail_as_cel_errors_never_as_python_errors(
    source: str, error: type[CELError], message: str
) -> None:
    """Chains the parser does not count as nesting are still refused when compiled, with a
    CEL error that says why (a RecursionError would be a crash)."""
    limits = Limits(max_source_length=100_000)
    with pytest.raises(error) as caught:
        compile(source, {"x": "dyn"}, limits=limits)
    assert caught.value.message == message


# -- comprehension nesting -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "line", "column"),
    [
        ("[1].all(a, [2].all(b, [3].all(c, true)))", 1, 27),
        ("[1].map(a, [1].map(b, [1].map(c, c)))", 1, 27),
        ("[1].all(a,\n  [2].all(b,\n    [3].exists(c, true)))", 3, 9),
        ("{'k': 1}.all(k, v, [1].all(a, [1].exists(i, e, true)))", 1, 35),
        ("[1].all(a, cel.bind(b, [1], b.all(c, b.exists(d, true))))", 1, 40),
    ],
    ids=repr,
)
def test_a_comprehension_nested_past_the_limit_is_a_check_error_at_its_position(
    source: str, line: int, column: int
) -> None:
    with pytest.raises(CELCheckError) as caught:
        compile(source, limits=Limits(max_comprehension_nesting=2), extensions=True)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert "nested" in caught.value.message


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("[1].all(a, [2].all(b, true))", True),
        ("[1].all(a, [2].all(b, true)) && [1].all(a, [2].all(b, true))", True),
        ("[1].all(a, cel.bind(b, 1, [2].all(c, c > b)))", True),
        ("[1].all(a, optional.of(1).optMap(o, [o].all(c, c == a)).value())", True),
        ("[[1]].map(a, a.map(b, b + 1))", [[2]]),
        pytest.param("[1, 2].map(a, a).map(b, b).map(c, c)", [1, 2]),
        pytest.param("[1, 2, 3].filter(a, a > 1).map(b, b * 2).all(c, c > 0)", True),
        pytest.param("[[1]].all(a, a.map(b, b).map(c, c) == [1])", True),
    ],
    ids=repr,
)
def test_two_nested_comprehensions_and_any_number_in_sequence_are_allowed_at_a_limit_of_two(
    source: str, expected: object
) -> None:
    limits = Limits(max_comprehension_nesting=2)
    assert compile(source, limits=limits, extensions=True).evaluate({}) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("[1].map(x, [2].map(y, [3].map(z, x + y + z)))", [[[6]]]),
        ("[1].all(a, [2].all(b, [3].all(c, [4].all(d, a < b && c < d))))", True),
        ("{'a': 1}.map(k, {'b': 2}.map(k2, {'c': 3}.map(k3, k + k2 + k3)))", [[["abc"]]]),
    ],
    ids=repr,
)
def test_by_default_comprehensions_nest_as_deep_as_in_kubernetes(
    source: str, expected: object
) -> None:
    assert compile(source).evaluate({}) == expected


def test_nested_loops_that_would_do_too_much_are_stopped_by_the_cost_budget() -> None:
    three_deep = "lists.range(200).all(x, lists.range(200).all(y, lists.range(200).all(z, true)))"
    with pytest.raises(CostLimitExceeded):
        compile(three_deep).evaluate({})


def test_max_comprehension_nesting_can_be_raised() -> None:
    three = "[1].all(a, [2].all(b, [3].all(c, true)))"
    assert compile(three, limits=Limits(max_comprehension_nesting=3)).evaluate({}) is True
    with pytest.raises(CELCheckError):
        compile(
            three.replace("true", "[4].all(d, true)"), limits=Limits(max_comprehension_nesting=3)
        )


# -- the cost budget -----------------------------------------------------------------------
NESTED_LOOPS = "[1, 2, 3].map(x, lists.range(1000).map(y, x * y)).size()"


def test_nested_loops_over_a_large_range_exceed_a_small_budget() -> None:
    program = compile(NESTED_LOOPS, limits=Limits(cost_budget=1000))
    with pytest.raises(CostLimitExceeded) as caught:
        program.evaluate({})
    assert isinstance(caught.value, CELEvalError)
    assert "1000" in caught.value.message
    assert compile(NESTED_LOOPS, limits=Limits(cost_budget=100_000)).evaluate({}) == 3


def test_a_budget_passed_to_evaluate_overrides_the_programs_budget() -> None:
    small = compile(NESTED_LOOPS, limits=Limits(cost_budget=1000))
    assert small.evaluate({}, budget=100_000) == 3
    default = compile(NESTED_LOOPS)
    assert default.evaluate({}) == 3
    with pytest.raises(CostLimitExceeded):
        default.evaluate({}, budget=1000)


def _passes(program: Program, n: int, budget: int | None) -> bool:
    try:
        program.evaluate({"n": n}, budget=budget)
    except CostLimitExceeded:
        return False
    return True


def test_the_default_budget_is_one_million_units() -> None:
    # find the largest n whose cost fits in 1,000,000 units, given explicitly...
    program = compile("lists.range(n).size()", {"n": "int"})
    low, high = 0, 2_000_000
    assert _passes(program, low, 1_000_000) and not _passes(program, high, 1_000_000)
    while high - low > 1:
        middle = (low + high) // 2
        if _passes(program, middle, 1_000_000):
            low = middle
        else:
            high = middle
    # ...then the default budget draws the line at the same place
    assert _passes(program, low, None)
    assert not _passes(program, low + 1, None)


def test_every_evaluation_starts_with_a_fresh_budget() -> None:
    program = compile("lists.range(1000).all(e, e >= 0)")
    for _ in range(5):
        assert program.evaluate({}, budget=5000) is True


BIG = "a" * 100_000
SMALL = "a" * 10


@pytest.mark.parametrize(
    "source",
    [
        "s.contains('b')",
        "s.startsWith('b')",
        "s.endsWith('b')",
        "s.matches(p)",
        pytest.param(
            "s.matches('b+')",
        ),
        pytest.param(
            "matches(s, 'b+')",
        ),
        "s.find('b+')",
        "s.findAll('b+')",
        "s.lowerAscii()",
        "s.upperAscii()",
        "s.trim()",
        "s.replace('a', 'b')",
        "s.split('a')",
        "s.indexOf('b')",
        "s.lastIndexOf('b')",
        "s.substring(1)",
        "s.charAt(1)",
        "[s, s].join('')",
        "strings.quote(s)",
        "base64.encode(bytes(s))",
        "base64.decode(s)",
        pytest.param(
            "'%s'.format([s])",
        ),
        pytest.param("(s + s).size()"),
    ],
    ids=repr,
)
def test_string_functions_are_charged_by_the_size_of_their_input(source: str) -> None:
    program = compile(source, {"s": "string", "p": "string"}, extensions=True)
    program.evaluate({"s": SMALL, "p": "b+"}, budget=1000)
    with pytest.raises(CostLimitExceeded):
        program.evaluate({"s": BIG, "p": "b+"}, budget=1000)


@pytest.mark.parametrize(
    "source",
    [
        "l.sum()",
        "l.isSorted()",
        "l.sort()",
        "l.distinct()",
        "l.indexOf(-1)",
        "l.min()",
        "l.max()",
        "l.reverse()",
        "l.slice(0, size(l))",
        "l.flatten()",
        "sets.contains(l, l)",
        "math.greatest(l)",
        "lists.range(size(l))",
        "l.map(e, e)",
        "l.filter(e, true)",
        "l.exists(e, false)",
        pytest.param("(l + l).size()"),
        pytest.param("-1 in l"),
    ],
    ids=repr,
)
def test_list_functions_and_loops_are_charged_by_the_size_of_their_input(source: str) -> None:
    program = compile(source, {"l": "list"}, extensions=True)
    program.evaluate({"l": list(range(10))}, budget=1000)
    with pytest.raises(CostLimitExceeded):
        program.evaluate({"l": list(range(100_000))}, budget=1000)


def test_a_catastrophic_backtracking_pattern_does_not_backtrack() -> None:
    """A backtracking engine takes longer than the age of the universe on these; RE2 is
    linear, so the generous guard only ever catches a regression to backtracking."""
    program = compile("s.matches(p)", {"s": "string", "p": "string"})
    with hang_guard():
        assert program.evaluate({"s": "a" * 20_000 + "!", "p": "^(a+)+$"}) is False
        assert program.evaluate({"s": "a" * 20_000 + "!", "p": "^(a|aa)*$"}) is False


def test_a_huge_range_is_refused_before_it_is_allocated() -> None:
    tracemalloc.start()
    try:
        with pytest.raises(CELEvalError):
            compile("lists.range(100000000).size()").evaluate({})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10 * 1024 * 1024, f"{peak} bytes allocated: the list was built"


def _doubling(seed: str, times: int) -> str:
    """`cel.bind(a, seed, cel.bind(a, a + a, ...))`: the value doubles at each level."""
    source = "a.size()"
    for _ in range(times):
        source = f"cel.bind(a, a + a, {source})"
    return f"cel.bind(a, {seed}, {source})"


@pytest.mark.parametrize(
    ("source", "activation"),
    [
        pytest.param(_doubling("s", 7), {"s": "a" * 10_000}),
        pytest.param(_doubling("l", 7), {"l": list(range(10_000))}),
        pytest.param(
            "s.replace('', s).replace('', s).size()",
            {"s": "a" * 300},
        ),
        pytest.param(
            "l.all(e, e in l)",
            {"l": [f"s{i}" for i in range(2000)]},
        ),
    ],
    ids=["string doubling", "list doubling", "replace blow-up", "quadratic membership"],
)
def test_a_blow_up_is_stopped_by_the_budget(source: str, activation: dict[str, object]) -> None:
    program = compile(source, dict.fromkeys(activation, "dyn"), extensions=True)
    with pytest.raises(CostLimitExceeded):
        program.evaluate(activation, budget=100_000)


LONG = "x" * 100_000
SHARED = [LONG] * 1000  # a thousand references to one string: 8 kB, printed 100 MB
NESTED = [[[LONG] * 10] * 10] * 10  # 100 MB printed as well, from three short lists


# what each would build (about 100 MB each, several seconds for some), were it not charged
# before it is built; the inputs exist before the measurement starts
@pytest.mark.parametrize(
    ("source", "activation"),
    [
        ("s.replace('a', big).size()", {"s": "a" * 1000, "big": LONG}),
        ("s.replace('', big).size()", {"s": "a" * 1000, "big": LONG}),
        ("s.replace('a', big, 999).size()", {"s": "a" * 1000, "big": LONG}),
        ("'%s'.format([l]).size()", {"l": SHARED}),
        ("'%s'.format([l]).size()", {"l": NESTED}),
        ("l.join(big).size()", {"l": [""] * 1000, "big": LONG}),
        ("lists.range(1000).map(i, l).flatten().size()", {"l": list(range(100_000))}),
        ("s.split(',').size()", {"s": "," * 2_000_000}),
        ("s.findAll('x').size()", {"s": LONG * 20}),
        ("strings.quote(s).size()", {"s": LONG * 100}),
        ("(s + s).size()", {"s": LONG * 100}),
        ("(l + l).size()", {"l": [0] * 600_000}),
        ("base64.encode(b).size()", {"b": b"x" * 10_000_000}),
    ],
    ids=[
        "replace",
        "replace between every character",
        "replace 999 times",
        "format of one value repeated",
        "format of nested repetitions",
        "join with a big separator",
        "flatten of one list repeated",
        "split into two million parts",
        "findAll of two million matches",
        "quote",
        "string concatenation",
        "list concatenation",
        "base64",
    ],
)
def test_a_result_past_the_budget_is_refused_before_it_is_built(
    source: str, activation: dict[str, object]
) -> None:
    program = compile(source, dict.fromkeys(activation, "dyn"), extensions=True)
    tracemalloc.start()
    try:
        with pytest.raises(CostLimitExceeded):
            program.evaluate(activation)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024, f"{peak} bytes allocated: the result was built"


S = "ab-" * 1000
L = list(range(100))


# the units one evaluation is charged, as before results were charged before they are
# built: the bound charged first is given back down to what the result used
CHARGED = [
    ("s.replace('a', 'xyz')", {"s": S}, 1100),
    ("s.replace('-', '', 10)", {"s": S}, 899),
    ("s.split('-')", {"s": S}, 1601),
    ("s.split('', 7)", {"s": S}, 607),
    ("s.lowerAscii() + s.upperAscii()", {"s": S}, 1800),
    ("s.trim().substring(5, 900)", {"s": S}, 989),
    ("[s, s, s].join(s)", {"s": S}, 4500),
    ("strings.quote(s)", {"s": S}, 600),
    ("'%s and %s and %d'.format([s, [s, 1.5, {'k': s}], 7])", {"s": S}, 905),
    ("s.findAll('a')", {"s": S}, 1301),
    ("s.find('b-a')", {"s": S}, 301),
    ("base64.decode(base64.encode(bytes(s)))", {"s": S}, 1400),
    ("[l, [l, l]].flatten(2)", {"l": L}, 314),
    ("l + l + [1]", {"l": L}, 401),
]


@pytest.mark.parametrize(("source", "activation", "units"), CHARGED, ids=[c[0] for c in CHARGED])
def test_what_a_call_builds_is_charged_what_it_used(
    source: str, activation: dict[str, object], units: int
) -> None:
    program = compile(source, dict.fromkeys(activation, "dyn"), extensions=True)
    frame = new_frame(activation, 1_000_000)
    program.run(frame)
    assert frame[COST] == [units, 1_000_000]  # type: ignore[index]


@pytest.mark.parametrize(
    "source",
    [
        "lists.range(2000000).size() > 0 ? t : f",
        "lists.range(2000000).size() > 0 || t",
        "lists.range(2000000).size() > 0 && f",
        "[1, 2].exists(i, lists.range(2000000).size() > i || t)",
        "[1, 2].exists(i, i == 2 || lists.range(2000000).size() > i)",
    ],
    ids=repr,
)
def test_exceeding_the_budget_ends_the_evaluation_whatever_surrounds_it(source: str) -> None:
    # `t` and `f` are variables: a constant `|| true` is folded away at compile time, and
    # then nothing is evaluated (and nothing is charged) at all
    with pytest.raises(CostLimitExceeded):
        compile(source, {"t": "bool", "f": "bool"}).evaluate({"t": True, "f": False})


# -- constant regular expressions ----------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "line", "column"),
    [
        ("'a'.matches('[')", 1, 5),
        ("matches('a', '(')", 1, 1),
        ("s.matches(\n  '[a-')", 1, 3),
        ("s.size() > 0 &&\n  s.matches('*')", 2, 5),
        ("[s].all(e, e.matches('a{2,1}'))", 1, 14),
        pytest.param(
            "s.find('(')",
            1,
            3,
        ),
        pytest.param(
            "s.findAll('(')",
            1,
            3,
        ),
    ],
    ids=repr,
)
def test_an_invalid_constant_pattern_is_a_check_error_with_position(
    source: str, line: int, column: int
) -> None:
    with pytest.raises(CELCheckError) as caught:
        compile(source, {"s": "string"})
    assert (caught.value.line, caught.value.column) == (line, column)
    assert "regular expression" in caught.value.message


@pytest.mark.parametrize(
    "source", ["s.matches('[' + 'a')", "matches(s, '(' + '')", "s.find('[' + '')"], ids=repr
)
def test_an_invalid_pattern_built_by_an_expression_fails_when_evaluated_as_in_kubernetes(
    source: str,
) -> None:
    program = compile(source, {"s": "string"})
    with pytest.raises(CELEvalError, match="regular expression"):
        program.evaluate({"s": "a"})


def test_an_invalid_pattern_from_a_variable_is_an_evaluation_error() -> None:
    program = compile("s.matches(p)", {"s": "string", "p": "string"})
    with pytest.raises(CELEvalError) as caught:
        program.evaluate({"s": "a", "p": "["})
    assert "regular expression" in caught.value.message
