"""The public API of `policyext.cel`, and the examples of docs/cel.md.

Every example written `` `expression` → `result` `` in docs/cel.md is evaluated here, so the
documentation cannot drift from the engine. A result is a CEL literal compared by exact
type, or `error: text` (an evaluation error whose message contains `text`), `check error:
text` or `syntax error: text` (rejected by `compile`).
"""

from __future__ import annotations

import dataclasses
import re
import types
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from policyext import cel
from policyext.cel import (
    CELCheckError,
    CELError,
    CELEvalError,
    CELSyntaxError,
    CostLimitExceeded,
    Limits,
    Program,
    UInt,
    compile,
)
from tests.cel.same import same

DOC: Final = Path(__file__).resolve().parents[2] / "docs" / "cel.md"


# == the API ===============================================================================
def test_the_package_exports_the_api_the_policies_use() -> None:
    for name in (
        "compile",
        "Program",
        "Limits",
        "CELError",
        "CELSyntaxError",
        "CELCheckError",
        "CELEvalError",
        "CostLimitExceeded",
    ):
        assert name in cel.__all__
        assert hasattr(cel, name)


@pytest.mark.parametrize(
    ("error", "base"),
    [
        (CELSyntaxError, CELError),
        (CELCheckError, CELError),
        (CELEvalError, CELError),
        (CostLimitExceeded, CELEvalError),
        (CELError, Exception),
    ],
)
def test_the_error_classes_form_one_hierarchy(error: type, base: type) -> None:
    assert issubclass(error, base)


@pytest.mark.parametrize(
    ("source", "error", "position"),
    [
        ("1 +\n  )", CELSyntaxError, (2, 3)),
        ("a\n  + b", CELCheckError, (1, 1)),
        ("x" * 10_001, CELCheckError, (None, None)),
    ],
    ids=["syntax", "check", "limit"],
)
def test_errors_carry_a_message_and_a_position_when_there_is_one(
    source: str, error: type[CELError], position: tuple[int | None, int | None]
) -> None:
    with pytest.raises(error) as caught:
        compile(source)
    e = caught.value
    assert (e.line, e.column) == position
    assert e.message
    if e.line is None:
        assert str(e) == e.message
    else:
        assert str(e) == f"{e.line}:{e.column}: {e.message}"


def test_a_program_describes_itself() -> None:
    program = compile("node.metadata.name == 'a' && size(pod) > 0", {"node": "map", "pod": "map"})
    assert isinstance(program, Program)
    assert program.source == "node.metadata.name == 'a' && size(pod) > 0"
    assert program.result_type == "bool"
    assert program.references == frozenset({"node", "pod"})
    assert program.selections == frozenset({("node", "metadata")})
    assert program.limits == Limits()
    assert "node.metadata.name" in repr(program)


def test_limits_are_immutable_values() -> None:
    limits = Limits(cost_budget=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.cost_budget = 20  # type: ignore[misc]
    assert limits == Limits(cost_budget=10)
    assert compile("1", limits=limits).limits is limits


def test_limits_and_check_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        compile("1", {}, Limits())  # type: ignore[call-arg]
    assert compile("a", None, check=False).result_type == "dyn"


@pytest.mark.parametrize(
    ("source", "activation", "expected"),
    [
        ("x.a", {"x": {"a": [1, "b", None, True, 2.5]}}, [1, "b", None, True, 2.5]),
        ("x.a + []", {"x": {"a": (1, 2)}}, [1, 2]),  # tuples are lists
        ("x.a", {"x": {"a": {"k": "v"}}, "unused": object()}, {"k": "v"}),
    ],
    ids=["json", "tuple", "extra variables"],
)
def test_evaluation_takes_and_returns_plain_python_values(
    source: str, activation: dict[str, object], expected: object
) -> None:
    assert same(compile(source, {"x": "map"}).evaluate(activation), expected)


def test_a_declared_variable_missing_from_the_activation_is_an_evaluation_error() -> None:
    program = compile("node.name", {"node": "map"})
    with pytest.raises(CELEvalError) as caught:
        program.evaluate({})
    assert "node" in caught.value.message


def test_a_value_nested_too_deeply_is_an_evaluation_error_not_a_crash() -> None:
    deep: list[object] = []
    for _ in range(20_000):
        deep = [deep]
    with pytest.raises(CELEvalError):
        compile("x == y", {"x": "dyn", "y": "dyn"}).evaluate({"x": deep, "y": deep})


def test_a_program_can_be_shared_between_threads() -> None:
    program = compile(
        "x.items.filter(i, i % 2 == 0).map(i, i * k).sum() + optional.of(k).optMap(t, t).value()",
        {"x": "map", "k": "int"},
    )

    def run(k: int) -> object:
        activation = types.MappingProxyType({"x": {"items": list(range(100))}, "k": k})
        return [program.evaluate(activation) for _ in range(50)]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, range(16)))
    for k, values in enumerate(results):
        assert values == [2450 * k + k] * 50


def test_a_uint_is_an_int_that_remembers_it_is_unsigned() -> None:
    value = compile("1u + 2u").evaluate({})
    assert type(value) is UInt
    assert value == 3


# == the examples of docs/cel.md ===========================================================
@dataclass(frozen=True)
class Example:
    line: int
    source: str
    result: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.source} → {self.result}"


def _closing(line: str, start: int, fence: str) -> int:
    """Where the code span opened by `fence` ends, or -1: the next run of exactly as many
    backquotes (Markdown's rule)."""
    at = line.find(fence, start)
    while at >= 0:
        end = at + len(fence)
        if (line[at - 1] != "`") and (end >= len(line) or line[end] != "`"):
            return at
        at = line.find(fence, end)
    return -1


def spans(line: str) -> list[tuple[bool, str]]:
    """The line as a sequence of (is_code, text), code spans unwrapped as Markdown does."""
    parts: list[tuple[bool, str]] = []
    text_start = pos = 0
    while pos < len(line):
        if line[pos] != "`":
            pos += 1
            continue
        run = pos
        while run < len(line) and line[run] == "`":
            run += 1
        fence = line[pos:run]
        close = _closing(line, run, fence)
        if close < 0:
            pos = run
            continue
        parts.append((False, line[text_start:pos]))
        code = line[run:close]
        if code.startswith(" ") and code.endswith(" ") and code.strip():
            code = code[1:-1]
        if line.startswith("|"):
            code = code.replace("\\|", "|")  # a pipe escaped for the table
        parts.append((True, code))
        pos = text_start = close + len(fence)
    parts.append((False, line[text_start:]))
    return parts


TYPED_OBJECTS = {"pod": cel.kubernetes_type("pod"), "node": cel.kubernetes_type("node")}


def doc_examples(doc: Path = DOC) -> list[Example]:
    examples = []
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
        parts = spans(line)
        triples = zip(parts, parts[1:], parts[2:], strict=False)
        for (c1, source), (c2, arrow), (c3, result) in triples:
            if c1 and not c2 and c3 and arrow.strip() == "→":
                examples.append(Example(number, source, result))
    return examples


EXAMPLES: Final = doc_examples()


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_every_example_in_the_documentation_evaluates_as_stated(example: Example) -> None:
    kind, _, fragment = example.result.partition(":")
    fragment = fragment.strip()
    if kind in ("syntax error", "check error"):
        expected_error = CELSyntaxError if kind == "syntax error" else CELCheckError
        with pytest.raises(expected_error) as caught:
            # `pod` and `node` typed as in a policy, for the examples of the checker
            compile(example.source, TYPED_OBJECTS)
        assert fragment in caught.value.message
        return
    program = compile(example.source)
    if kind == "error":
        with pytest.raises(CELEvalError) as failed:
            program.evaluate({})
        assert fragment in failed.value.message
        return
    actual = program.evaluate({})
    expected = compile(example.result).evaluate({})
    assert same(actual, expected), f"{example.source} gave {actual!r}"


def test_the_documentation_has_examples_for_every_section() -> None:
    assert len(EXAMPLES) >= 200
    text = DOC.read_text(encoding="utf-8")
    headings = [(m.start(), m.group(1)) for m in re.finditer(r"^#{2,3} (.+)$", text, re.MULTILINE)]
    lines = [text.count("\n", 0, start) + 1 for start, _ in headings]
    needs_examples = {
        "Literals",
        "Names, fields and indexes",
        "Operators",
        "Types and conversions",
        "Macros",
        "Optionals",
        "Standard functions",
        "Strings",
        "Format",
        "Lists",
        "Sets",
        "Regex",
        "Quantity",
        "Semver",
        "IP addresses and CIDRs",
        "URL",
    }
    for (_, title), first, last in zip(headings, lines, [*lines[1:], 10**9], strict=True):
        if title in needs_examples:
            count = sum(first < e.line < last for e in EXAMPLES)
            assert count >= 1, f"no example under '{title}'"
            needs_examples.discard(title)
    assert not needs_examples, f"sections missing: {needs_examples}"


def test_the_documented_defaults_are_the_defaults() -> None:
    text = DOC.read_text(encoding="utf-8")
    for field in dataclasses.fields(Limits):
        row = re.search(rf"^\| `{field.name}` \| ([0-9,]+) \|", text, re.MULTILINE)
        assert row is not None, f"{field.name} is not documented"
        assert int(row.group(1).replace(",", "")) == getattr(Limits(), field.name)


def test_the_conformance_table_is_what_the_conformance_run_gives() -> None:
    from tests.cel import conformance

    directory = conformance.testdata_dir()
    if not directory.is_dir():
        if conformance.data_required():
            pytest.fail(f"the cel-spec test data is missing: {directory}")
        pytest.skip(f"the cel-spec test data is not at {directory}")
    cases = conformance.load_cases(directory)
    by_file = conformance.tally((c, conformance.outcome_of(c)) for c in cases)
    section = DOC.read_text(encoding="utf-8")[
        DOC.read_text(encoding="utf-8").index("## Conformance") :
    ]
    assert "python -m tests.cel.conformance" in section
    for name, t in by_file.items():
        row = re.search(
            rf"^\| {name}(?: \(not in the bar\))? \| (\d+) \| (\d+) \| (\d+) \|", section, re.M
        )
        assert row is not None, f"{name} is missing from the conformance table"
        assert tuple(int(g) for g in row.groups()) == (t.passed, t.failed, t.skipped), name


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("`1 + 1` → `2`", [Example(1, "1 + 1", "2")]),
        ("| `a \\|\\| b` → `true` | x |", [Example(1, "a || b", "true")]),
        ("`` x.`a-b` `` → `1`", [Example(1, "x.`a-b`", "1")]),
        ("`` `e` → `r` `` means", []),
        (
            "`a` and `b`; `c` → `d`; `e` → `error: f`",
            [
                Example(1, "c", "d"),
                Example(1, "e", "error: f"),
            ],
        ),
    ],
    ids=repr,
)
def test_the_example_extractor_reads_code_spans_as_markdown_does(
    line: str, expected: list[Example], tmp_path: Path
) -> None:
    doc = tmp_path / "cel.md"
    doc.write_text(line + "\n", encoding="utf-8")
    assert doc_examples(doc) == expected
