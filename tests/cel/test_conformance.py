"""cel-spec's conformance suite against `policyext.cel`, plus the runner's own rules.

One test per conformance case (id `file/section/name`), skipped with its reason when the
case needs protobuf messages or the checker's output; the cases listed in
`conformance_known_failures.txt` are strict xfails so that a fix gets noticed. The bar
test asserts the pass rate over the runnable cases of the bar files.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from policyext.cel.values import CELType, Duration, Optional, Timestamp, UInt
from tests.cel import conformance, textproto
from tests.cel.conformance import Case, DataError, ExpectError, ExpectValue, NotRunnable

DATA_DIR = conformance.testdata_dir()
HAVE_DATA = DATA_DIR.is_dir()
MISSING_DATA = f"cel-spec test data not found at {DATA_DIR} (set {conformance.SPEC_ENV})"
CASES = conformance.load_cases(DATA_DIR) if HAVE_DATA else []
KNOWN_FAILURES = conformance.load_known_failures()


def _require_data() -> None:
    if HAVE_DATA:
        return
    if conformance.data_required():
        pytest.fail(f"{MISSING_DATA}; {conformance.REQUIRE_ENV}=1 requires it")
    pytest.skip(MISSING_DATA)


def _param(case: Case) -> object:
    marks = []
    if case.id in KNOWN_FAILURES:
        reason = KNOWN_FAILURES[case.id] or "known failure"
        marks.append(pytest.mark.xfail(reason=reason, strict=True))
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_conformance_case_gives_the_result_the_spec_expects(case: Case) -> None:
    outcome = conformance.outcome_of(case)
    if outcome.status == "skipped":
        pytest.skip(outcome.detail)
    assert outcome.status == "passed", f"{case.expr}\n{outcome.detail}"


def test_conformance_data_is_present() -> None:
    _require_data()
    assert len(CASES) > 1000


def test_conformance_bar_is_met() -> None:
    _require_data()
    results = [(case, conformance.outcome_of(case)) for case in CASES]
    by_file = conformance.tally(results)
    table = conformance.format_table(by_file)
    print(table)
    assert set(conformance.BAR_FILES) <= set(by_file), table
    passed, runnable = conformance.bar_rate(by_file)
    assert runnable > 0, table
    assert passed >= conformance.BAR * runnable, table


def test_known_failures_name_runnable_cases() -> None:
    _require_data()
    by_id = {case.id: case for case in CASES}
    unknown = [case_id for case_id in KNOWN_FAILURES if case_id not in by_id]
    skipped = [case_id for case_id in KNOWN_FAILURES if case_id in by_id and by_id[case_id].skip]
    assert unknown == []
    assert skipped == []


# --- The runner's own rules (no test data needed) ---------------------------------------

NAN = math.nan

MATCH_CASES: list[tuple[str, object, object, bool]] = [
    ("equal ints", 1, 1, True),
    ("int against double", 1, 1.0, False),
    ("int against uint", 1, UInt(1), False),
    ("uint against uint", UInt(1), UInt(1), True),
    ("bool against int", True, 1, False),
    ("NaN against NaN", NAN, NAN, True),
    ("double against NaN", 1.0, NAN, False),
    ("null against null", None, None, True),
    ("string against bytes", "a", b"a", False),
    ("equal lists", [1, "a"], [1, "a"], True),
    ("lists differing in an element type", [1], [1.0], False),
    ("lists of different lengths", [1], [1, 2], False),
    ("list against tuple", [1, 2], (1, 2), True),
    ("nested lists with NaN", [[NAN]], [[NAN]], True),
    ("equal maps in another order", {"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
    ("maps with int and uint keys", {1: "a"}, {UInt(1): "a"}, False),
    ("maps with bool and int keys", {True: 1}, {1: 1}, False),
    ("maps with a value of another type", {"a": 1}, {"a": 1.0}, False),
    ("maps of different sizes", {"a": 1}, {"a": 1, "b": 2}, False),
    ("optionals holding equal values", Optional(1), Optional(1), True),
    ("optionals holding int and double", Optional(1), Optional(1.0), False),
    ("empty optionals", Optional(), Optional(), True),
    ("empty against present optional", Optional(), Optional(1), False),
    ("optional against its value", Optional(1), 1, False),
    ("equal type values", CELType("int"), CELType("int"), True),
    ("different type values", CELType("int"), CELType("uint"), False),
    ("equal durations", Duration(5), Duration(5), True),
    ("duration against timestamp", Duration(5), Timestamp(5), False),
]


@pytest.mark.parametrize(
    ("expected", "actual", "matches"),
    [pytest.param(e, a, m, id=name) for name, e, a, m in MATCH_CASES],
)
def test_results_compare_by_exact_cel_type(expected: object, actual: object, matches: bool) -> None:
    assert conformance.values_match(expected, actual) is matches


def _value(text: str) -> object:
    return conformance.convert_value(textproto.parse(text))


VALUE_CASES: list[tuple[str, str, object]] = [
    ("null by name", "null_value: NULL_VALUE", None),
    ("null by number", "null_value: 0", None),
    ("bool", "bool_value: true", True),
    ("negative int64", "int64_value: -9223372036854775808", -(2**63)),
    ("uint64", "uint64_value: 18446744073709551615", UInt(2**64 - 1)),
    ("double from an integer literal", "double_value: 0", 0.0),
    ("double infinity", "double_value: -inf", -math.inf),
    ("double NaN", "double_value: nan", NAN),
    ("string from escaped UTF-8", r'string_value: "\303\251\u00e9"', "éé"),
    ("bytes stay bytes", r'bytes_value: "\303\377"', b"\xc3\xff"),
    ("empty list", "list_value {}", []),
    (
        "list of mixed values",
        "list_value { values { int64_value: 1 } values { string_value: 'a' } }",
        [1, "a"],
    ),
    (
        "map",
        "map_value { entries { key { uint64_value: 1 } value { bool_value: false } } }",
        {UInt(1): False},
    ),
    ("type value", 'type_value: "google.protobuf.Duration"', CELType("google.protobuf.Duration")),
    (
        "duration",
        "object_value { [type.googleapis.com/google.protobuf.Duration] { seconds: -2 nanos: -5 } }",
        Duration(-2_000_000_005),
    ),
    (
        "timestamp",
        "object_value { [type.googleapis.com/google.protobuf.Timestamp] { seconds: 1 } }",
        Timestamp(1_000_000_000),
    ),
    (
        "int32 wrapper",
        "object_value { [type.googleapis.com/google.protobuf.Int32Value] { value: 7 } }",
        7,
    ),
    (
        "empty uint64 wrapper",
        "object_value { [type.googleapis.com/google.protobuf.UInt64Value] {} }",
        UInt(0),
    ),
    (
        "float wrapper rounds to 32 bits",
        "object_value { [type.googleapis.com/google.protobuf.FloatValue] { value: 0.1 } }",
        0.10000000149011612,
    ),
    (
        "JSON struct",
        "object_value { [type.googleapis.com/google.protobuf.Struct] { fields { key: 'a' "
        "value { list_value { values { number_value: 1 } values { null_value: NULL_VALUE } } } "
        "} } }",
        {"a": [1.0, None]},
    ),
    (
        "JSON value",
        "object_value { [type.googleapis.com/google.protobuf.Value] { string_value: 'x' } }",
        "x",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [pytest.param(t, e, id=name) for name, t, e in VALUE_CASES]
)
def test_spec_values_convert_to_runtime_values(text: str, expected: object) -> None:
    assert conformance.values_match(expected, _value(text))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("enum_value { type: 'E' value: 1 }", "protobuf enum"),
        (
            "object_value { [type.googleapis.com/cel.expr.conformance.proto3.TestAllTypes] {} }",
            "protobuf message cel.expr.conformance.proto3.TestAllTypes",
        ),
        ("object_value { type_url: 'x' value: 'y' }", "serialized"),
        (
            "map_value { entries { key { int64_value: 1 } value { int64_value: 1 } } "
            "entries { key { bool_value: true } value { int64_value: 2 } } }",
            "cannot tell apart",
        ),
    ],
)
def test_values_that_need_protobuf_make_the_case_skip(text: str, reason: str) -> None:
    with pytest.raises(NotRunnable, match=reason):
        _value(text)


@pytest.mark.parametrize(
    "text", ["", "int64_value: 1 bool_value: true", "int64_value: 1.5", "int64_value: 1e30"]
)
def test_malformed_spec_values_are_data_errors(text: str) -> None:
    with pytest.raises((DataError, textproto.TextprotoError)):
        _value(text)


PROTOBUF_CASES: list[tuple[str, str | None]] = [
    ("1 + 1", None),
    ("x in {'a': 1}", None),
    ("[1].map(x, {x: 1})", None),
    ("'TestAllTypes{}' + \"google.protobuf.Any\"", None),
    ("'''TestAllTypes{'''.size()", None),
    ("x // TestAllTypes{\n + 1", None),
    ("google.protobuf.Timestamp == type(timestamp(0))", None),
    ("type(duration('1s')) == google.protobuf.Duration", None),
    ("TestAllTypes{}", "message literal TestAllTypes{...}"),
    ("google.protobuf.Int64Value{value: 1} == 1", "message literal google.protobuf.Int64Value"),
    ("google.protobuf.Duration{seconds: 1}", "message literal google.protobuf.Duration"),
    (". cel. expr .conformance. proto3. TestAllTypes { }", "message literal cel.expr"),
    ("x == cel.expr.conformance.proto3.GlobalEnum.GAZ", "test type cel.expr.conformance"),
    ("type(x) == google.protobuf.Any", "type google.protobuf.Any"),
    ("r'\\' == TestAllTypes{}", "message literal TestAllTypes"),
]


@pytest.mark.parametrize(("expr", "reference"), PROTOBUF_CASES)
def test_protobuf_references_are_found_outside_string_literals(
    expr: str, reference: str | None
) -> None:
    found = conformance.protobuf_reference(expr)
    if reference is None:
        assert found is None
    else:
        assert found is not None
        assert reference in found


@pytest.mark.parametrize(
    ("text", "declared"),
    [
        ("primitive: INT64", "int"),
        ("primitive: UINT64", "uint"),
        ("primitive: BYTES", "bytes"),
        ("null: NULL_VALUE", "null_type"),
        ("well_known: TIMESTAMP", "timestamp"),
        ("message_type: 'google.protobuf.Duration'", "duration"),
        ("list_type { elem_type { primitive: INT64 } }", "dyn"),
        ("map_type { key_type { primitive: STRING } value_type { primitive: STRING } }", "dyn"),
        ("wrapper: INT64", "dyn"),
        ("dyn {}", "dyn"),
    ],
)
def test_declared_types_map_to_our_type_names(text: str, declared: str) -> None:
    assert conformance.declared_type(textproto.parse(text)) == declared


def test_a_variable_of_a_message_type_makes_the_case_skip() -> None:
    with pytest.raises(NotRunnable, match=r"message type cel\.expr\.conformance"):
        conformance.declared_type(textproto.parse("message_type: 'cel.expr.conformance.T'"))


SPEC_FILE = """
name: "sample"
section {
  name: "s"
  test { name: "default_true" expr: "true" }
  test: {
    name: "value"
    expr: "x + 1"
    disable_check: true
    type_env { name: "x" ident { type { primitive: INT64 } } }
    bindings { key: "x" value { value { int64_value: 2 } } }
    value: { int64_value: 3 }
  }
  test { name: "error" expr: "1/0" eval_error { errors { message: "divide by zero" } } }
  test {
    name: "any_error"
    expr: "1/0"
    any_eval_errors { errors { errors { message: "a" } } errors { errors { message: "b" } } }
  }
  test { name: "typed" expr: "1" typed_result { result { int64_value: 1 } } }
  test { name: "unknown" expr: "x" unknown { exprs: 1 } }
  test { name: "container" expr: "T{}" container: "cel.expr" }
  test { name: "check_only" expr: "1" check_only: true }
  test { name: "no_macros" expr: "1" disable_macros: true }
  test {
    name: "bound_error"
    expr: "x"
    bindings { key: "x" value { error { errors { message: "e" } } } }
  }
  test { name: "dup" expr: "1" value { int64_value: 1 } }
  test { name: "dup" expr: "2" value { int64_value: 2 } }
}
"""


@pytest.fixture
def sample_cases(tmp_path: Path) -> dict[str, Case]:
    path = tmp_path / "sample.textproto"
    path.write_text(SPEC_FILE, encoding="utf-8")
    return {case.name: case for case in conformance.load_file(path)}


def test_a_case_without_a_result_expects_true(sample_cases: dict[str, Case]) -> None:
    case = sample_cases["default_true"]
    assert (case.id, case.expect, case.skip) == ("sample/s/default_true", ExpectValue(True), None)


def test_a_case_carries_declarations_bindings_and_its_value(sample_cases: dict[str, Case]) -> None:
    case = sample_cases["value"]
    assert case.disable_check is True
    assert case.variables == {"x": "int"}
    assert case.bindings == {"x": 2}
    assert case.expect == ExpectValue(3)


@pytest.mark.parametrize(
    ("name", "messages"), [("error", ("divide by zero",)), ("any_error", ("a", "b"))]
)
def test_error_expectations_keep_their_messages(
    sample_cases: dict[str, Case], name: str, messages: tuple[str, ...]
) -> None:
    assert sample_cases[name].expect == ExpectError(messages)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("typed", "typed_result"),
        ("unknown", "unknowns"),
        ("container", "container cel.expr"),
        ("check_only", "check_only"),
        ("no_macros", "disable_macros"),
        ("bound_error", "error or unknown"),
    ],
)
def test_cases_this_engine_cannot_run_are_skipped_with_a_reason(
    sample_cases: dict[str, Case], name: str, reason: str
) -> None:
    skip = sample_cases[name].skip
    assert skip is not None
    assert reason in skip


def test_repeated_names_get_numbered_ids(sample_cases: dict[str, Case]) -> None:
    assert sample_cases["dup"].expr == "1"
    assert sample_cases["dup~2"].expr == "2"


def test_unknown_test_fields_are_data_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.textproto"
    path.write_text('section { name: "s" test { name: "t" expr: "1" colour: 1 } }')
    with pytest.raises(DataError, match="colour"):
        conformance.load_file(path)


def test_known_failures_file_lines_are_ids_with_reasons(tmp_path: Path) -> None:
    path = tmp_path / "known.txt"
    path.write_text(
        "# header\n\nbasic/s/a b  # too slow\nstring_ext/format/x~2\n", encoding="utf-8"
    )
    assert conformance.load_known_failures(path) == {
        "basic/s/a b": "too slow",
        "string_ext/format/x~2": "",
    }


def test_the_committed_known_failures_file_parses() -> None:
    assert conformance.KNOWN_FAILURES_FILE.exists()
    assert isinstance(conformance.load_known_failures(), dict)


RUN_CASES: list[tuple[str, Case, str, str]] = [
    ("a right value passes", Case("f", "s", "n", "1 + 1", expect=ExpectValue(2)), "passed", ""),
    (
        "a value of another type fails",
        Case("f", "s", "n", "1 + 1", expect=ExpectValue(2.0)),
        "failed",
        "expected 2.0, got 2",
    ),
    (
        "an expected error passes",
        Case("f", "s", "n", "1 / 0", expect=ExpectError(("divide by zero",))),
        "passed",
        "",
    ),
    (
        "a value where an error is expected fails",
        Case("f", "s", "n", "1", expect=ExpectError(("x",))),
        "failed",
        "expected an error, got 1",
    ),
    (
        "a compile error fails",
        Case("f", "s", "n", "1 +", expect=ExpectError(("x",))),
        "failed",
        "compile error",
    ),
    (
        "bindings are evaluated",
        Case("f", "s", "n", "x * 2", False, {"x": "int"}, {"x": 4}, ExpectValue(8)),
        "passed",
        "",
    ),
    ("a skipped case is not run", Case("f", "s", "n", "1 +", skip="why"), "skipped", "why"),
]


@pytest.mark.parametrize(
    ("case", "status", "detail"), [pytest.param(c, s, d, id=n) for n, c, s, d in RUN_CASES]
)
def test_run_case_judges_the_engine_result(case: Case, status: str, detail: str) -> None:
    outcome = conformance.run_case(case)
    assert outcome.status == status
    assert detail in outcome.detail


def test_the_bar_counts_only_runnable_cases_of_the_bar_files() -> None:
    by_file = {
        "basic": conformance.Tally(passed=90, failed=10, skipped=50),
        "math_ext": conformance.Tally(passed=0, failed=100),
    }
    assert conformance.bar_rate(by_file) == (90, 100)
    table = conformance.format_table(by_file)
    assert "math_ext" in table
    assert "(not in the bar)" in table
    assert "90/100 = 90.0%" in table
    assert "NOT met" in table
