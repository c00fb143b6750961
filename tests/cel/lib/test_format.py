"""`"...".format([args])`, with the clauses and value renderings of Kubernetes 1.37 (cel-go's
string extensions, version 2; tests/cel/test_kubernetes_parity.py checks them against it)."""

from __future__ import annotations

import math

import pytest

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import merge_libraries
from policyext.cel.lib.format import FORMAT_LIBRARY, format_value
from policyext.cel.values import CELType, Duration, Optional, Timestamp, UInt

TABLE = merge_libraries([FORMAT_LIBRARY])
NAN = math.nan
INF = math.inf
SECOND = 1_000_000_000


def fmt(template: str, *args: object) -> object:
    table = TABLE.find_member("format", 1)
    assert table is not None
    return table.by_type[str].impl(template, list(args))


@pytest.mark.parametrize(
    ("template", "args", "expected"),
    [
        ("nothing to do", (), "nothing to do"),
        ("a %s b", ("x",), "a x b"),
        ("100%% sure, %%", (), "100% sure, %"),
        ("%%%s%%", ("in",), "%in%"),
        ("%s%%", ("left",), "left%"),
        ("%%%s", ("right",), "%right"),
        ("%d-%s-%d-%s", (1, "a", 2, "b"), "1-a-2-b"),
        ("%s", ("",), ""),
        ("€%sλ", ("x",), "€xλ"),
    ],
)
def test_clauses_substitute_arguments_in_order(
    template: str, args: tuple[object, ...], expected: str
) -> None:
    assert fmt(template, *args) == expected


@pytest.mark.parametrize(
    ("template", "value", "expected"),
    [
        # %d: integers only
        ("%d", 42, "42"),
        ("%d", -7, "-7"),
        ("%d", UInt(64), "64"),
        # %f: doubles, precision 6 unless given, thousands grouped
        ("%f", 2.71828, "2.718280"),
        ("%.1f", 12345.0, "12,345.0"),
        ("%.2f", 1234567.891, "1,234,567.89"),
        ("%.3f", 1.2345, "1.234"),
        ("%.3f", 123.4999, "123.500"),
        ("%.3f", 123.4994, "123.499"),
        ("%.3f", -123.4999, "-123.500"),
        ("%.3f", -123.4994, "-123.499"),
        ("%.5f", -1.2, "-1.20000"),
        ("%.0f", 123.0, "123"),
        ("%.0f", 3.5001, "4"),
        ("%.0f", 3.4999, "3"),
        # halfway cases round to even
        ("%.0f", 1.5, "2"),
        ("%.0f", 2.5, "2"),
        ("%f", NAN, "NaN"),
        ("%f", "NaN", "NaN"),
        ("%.2f", INF, "∞"),
        ("%f", -INF, "-∞"),
        # a negative zero prints without its sign; a negative number rounded to zero with it
        ("%f", -0.0, "0.000000"),
        ("%.3f", -0.0001, "-0.000"),
        # up to 255 decimals, the double's exact binary value
        ("%.30f", 0.1, "0.100000000000000005551115123126"),
        ("%.255f", 1.0, "1." + "0" * 255),
        # %e: scientific, two exponent digits at least
        # %e: six decimals whatever the precision, the exponent in superscript
        ("%e", 2.71828, "2.718280×10⁰⁰"),
        ("%e", 1234.5, "1.234500×10⁰³"),
        ("%.2e", 0.000123, "1.230000×10⁻⁰⁴"),
        ("%e", -5.0, "-5.000000×10⁰⁰"),
        ("%.2e", 1e-300, "1.000000×10⁻³⁰⁰"),
        # the precision is a width in Kubernetes: the text is padded to it on the left
        ("%e", NAN, "   NaN"),
        ("%.10e", -INF, "        -∞"),
        ("%e", "Infinity", "     ∞"),
        ("%.14e", 1.5, " 1.500000×10⁰⁰"),
        ("%.14e", -1.5, "-1.500000×10⁰⁰"),
        ("%e", -0.0, "0.000000×10⁰⁰"),
        # %b, %o, %x, %X
        ("%b", 5, "101"),
        ("%b", -5, "-101"),
        ("%b", UInt(64), "1000000"),
        ("%b", True, "1"),
        ("%b", False, "0"),
        ("%o", 11, "13"),
        ("%o", UInt(65535), "177777"),
        ("%x", 30, "1e"),
        ("%X", 30, "1E"),
        ("%x", -30, "-1e"),
        ("%X", UInt(6000), "1770"),
        ("%x", "Hello world!", "48656c6c6f20776f726c6421"),
        ("%X", "Hello world!", "48656C6C6F20776F726C6421"),
        ("%x", "é", "c3a9"),
        ("%x", b"byte string", "6279746520737472696e67"),
        ("%X", b"byte string", "6279746520737472696E67"),
    ],
)
def test_numeric_clauses_print_as_cel_go_prints(
    template: str, value: object, expected: str
) -> None:
    assert fmt(template, value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (999999999999, "999999999999"),
        (UInt(18446744073709551615), "18446744073709551615"),
        # a double alone: Go's %g
        (56.8, "56.8"),
        (1.0, "1"),
        (-0.0, "-0"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (1e21, "1e+21"),
        (1.5e-7, "1.5e-07"),
        (0.0001, "0.0001"),
        (NAN, "NaN"),
        (-INF, "-Inf"),
        ("text", "text"),
        (b"xyz", "xyz"),
        (CELType("string"), "string"),
        (CELType("google.protobuf.Duration"), "google.protobuf.Duration"),
        (Duration(6347 * SECOND), "6347s"),
        (Duration(-1_500_000_000), "-1.5s"),
        (Duration(1), "0.000000001s"),
        (Timestamp(1675467080 * SECOND), "2023-02-03T23:31:20Z"),
        (Timestamp(1675467080 * SECOND + 120_000_000), "2023-02-03T23:31:20.12Z"),
        (Timestamp(-62135596800 * SECOND), "0001-01-01T00:00:00Z"),
        # inside lists and maps: strings quoted, doubles with six decimals, durations and
        # timestamps as the calls that make them; map entries sort by printed key
        (
            ["abc", 3.14, None, [9, 8], Timestamp(1675467080 * SECOND)],
            '["abc", 3.140000, null, [9, 8], timestamp("2023-02-03T23:31:20Z")]',
        ),
        ((), "[]"),
        (
            {"k1": b"xyz", "k5": None, "k2": Duration(7200 * SECOND), "k4": True, "k3": 2.71828},
            '{"k1":b"xyz", "k2":duration("7200s"), "k3":2.718280, "k4":true, "k5":null}',
        ),
        ({"strKey": "x", 6: Duration(422 * SECOND)}, '{"strKey":"x", 6:duration("422s")}'),
        ({1: "one", UInt(2): "two"}, '{1:"one", 2:"two"}'),
        ([NAN, INF, -INF], '["NaN", "+Inf", "-Inf"]'),
        (['tab\there "q"'], '["tab\\there \\"q\\""]'),
        ({}, "{}"),
    ],
)
def test_string_clause_prints_every_kind_of_value(value: object, expected: str) -> None:
    assert fmt("%s", value) == expected
    assert format_value(value) == expected


@pytest.mark.parametrize(
    ("template", "args", "message"),
    [
        ("%a", (1,), 'could not parse formatting clause: unrecognized formatting clause "a"'),
        ("%E", (0.5,), 'could not parse formatting clause: unrecognized formatting clause "E"'),
        ("%d %d %d", (0, 1), "index 2 out of range"),
        ("%s", (), "index 0 out of range"),
        ("trailing %", (1,), "unexpected end of string"),
        (
            "%.3",
            (1.0,),
            "could not parse formatting clause: error while parsing precision: "
            "could not find end of precision specifier",
        ),
        (
            "%.256f",
            (1.0,),
            "could not parse formatting clause: error while parsing precision: "
            "precision 256 exceeds maximum allowed precision 255",
        ),
        (
            "%b",
            ("abc",),
            "error during formatting: only integers and bools can be formatted as binary, "
            "was given string",
        ),
        (
            "%d",
            (2.5,),
            "error during formatting: decimal clause can only be used on integers, was given double",
        ),
        (
            "%f",
            (2,),
            "error during formatting: fixed-point clause can only be used on doubles, was given int",
        ),
        (
            "%e",
            (UInt(3),),
            "error during formatting: scientific clause can only be used on doubles, was given uint",
        ),
        (
            "%d",
            (Duration(SECOND),),
            "error during formatting: decimal clause can only be used on integers, "
            "was given google.protobuf.Duration",
        ),
        (
            "%o",
            ("a string",),
            "error during formatting: octal clause can only be used on integers, was given string",
        ),
        (
            "%x",
            (0.5,),
            "error during formatting: only integers, byte buffers, and strings can be "
            "formatted as hex, was given double",
        ),
        (
            "%s",
            (Optional(1),),
            "error during formatting: string clause can only be used on strings, bools, bytes, "
            "ints, doubles, maps, lists, types, durations, and timestamps, was given optional_type",
        ),
        (
            "%s",
            ([1, 2, Optional()],),
            "error during formatting: string clause can only be used on strings, bools, bytes, "
            "ints, doubles, maps, lists, types, durations, and timestamps, was given optional_type",
        ),
        (
            "%s",
            ({1: "a", 2: Optional()},),
            "error during formatting: string clause can only be used on strings, bools, bytes, "
            "ints, doubles, maps, lists, types, durations, and timestamps, was given optional_type",
        ),
        (
            "%d",
            (None,),
            "error during formatting: decimal clause can only be used on integers, "
            "was given null_type",
        ),
        (
            "%e",
            (None,),
            "error during formatting: scientific clause can only be used on doubles, "
            "was given null_type",
        ),
        (
            "%f",
            (None,),
            "error during formatting: fixed-point clause can only be used on doubles, "
            "was given null_type",
        ),
        (
            "%X",
            (None,),
            "error during formatting: only integers, byte buffers, and strings can be "
            "formatted as hex, was given null_type",
        ),
        (
            "%b",
            (None,),
            "error during formatting: only integers and bools can be formatted as binary, "
            "was given null_type",
        ),
        (
            "%o",
            (None,),
            "error during formatting: octal clause can only be used on integers, "
            "was given null_type",
        ),
    ],
)
def test_bad_clauses_and_arguments_are_errors(
    template: str, args: tuple[object, ...], message: str
) -> None:
    with pytest.raises(CELEvalError) as e:
        fmt(template, *args)
    assert e.value.message == message


def test_format_needs_a_list_of_arguments() -> None:
    table = TABLE.find_member("format", 1)
    assert table is not None
    with pytest.raises(CELEvalError, match="no such overload"):
        table.by_type[str].impl("%s", "not a list")


def test_format_cost_grows_with_the_template() -> None:
    table = TABLE.find_member("format", 1)
    assert table is not None
    cost = table.by_type[str].cost
    assert cost is not None
    assert cost("%s" * 100, []) > cost("%s", [])
