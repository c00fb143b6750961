"""The cel-spec conformance suite, run against `policyext.cel`.

Each `SimpleTest` of cel-spec's `testdata/*.textproto` (format: `simple.proto` beside that
folder) becomes a `Case`: the expression, its declared variables and bindings as our
runtime values, and what evaluation must give (a value, or an error). A case that needs
protobuf messages or enums, a name-resolution container, or the checker's own output
(deduced types) cannot run here and carries a skip reason instead; everything else runs.

Results compare by exact CEL type: `1`, `1u` and `1.0` are three different results here
(while `1 == 1u` is true inside CEL), NaN matches NaN, and lists, maps and optionals
compare element by element under the same rule.

    python -m tests.cel.conformance [-v] [--file NAME]...

prints passed / failed / skipped per file, and the pass rate over the files of the bar.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
import struct
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from policyext.cel.values import (
    INT64_MAX,
    INT64_MIN,
    NANOS_PER_SECOND,
    UINT64_MAX,
    CELType,
    Duration,
    Optional,
    Timestamp,
    UInt,
    format_duration,
    format_timestamp,
)
from tests.cel import textproto
from tests.cel.textproto import Message, TextprotoError

if TYPE_CHECKING:
    from policyext.cel import Limits

SPEC_ENV: Final = "POLICYEXT_CEL_SPEC"
REQUIRE_ENV: Final = "POLICYEXT_REQUIRE_ALL"

# The files whose pass rate must reach BAR; math_ext is run and reported but not counted.
BAR_FILES: Final = (
    "basic",
    "comparisons",
    "conversions",
    "fields",
    "fp_math",
    "integer_math",
    "lists",
    "logic",
    "macros",
    "macros2",
    "parse",
    "plumbing",
    "string",
    "timestamps",
    "string_ext",
    "optionals",
    "network_ext",
)
REPORT_ONLY_FILES: Final = ("math_ext",)
BAR: Final = 0.97

KNOWN_FAILURES_FILE: Final = Path(__file__).with_name("conformance_known_failures.txt")


def testdata_dir() -> Path:
    """Where cel-spec's testdata lives: `$POLICYEXT_CEL_SPEC` (the cel-spec folder or its
    testdata folder), else `shared/cel-spec/testdata` beside the repository."""
    override = os.environ.get(SPEC_ENV)
    if override:
        base = Path(override)
        return base / "testdata" if (base / "testdata").is_dir() else base
    return (Path(__file__).resolve().parents[2] / "../shared/cel-spec/testdata").resolve()


def data_required() -> bool:
    """CI sets POLICYEXT_REQUIRE_ALL=1: there, missing test data is a failure, not a skip."""
    return os.environ.get(REQUIRE_ENV) == "1"


class DataError(ValueError):
    """The test data does not follow simple.proto."""


class NotRunnable(Exception):
    """A case needs something this engine does not have (protobuf messages, the checker)."""


@dataclass(frozen=True)
class ExpectValue:
    value: object


@dataclass(frozen=True)
class ExpectError:
    messages: tuple[str, ...]


Expectation = ExpectValue | ExpectError


@dataclass(frozen=True)
class Case:
    file: str
    section: str
    name: str
    expr: str
    disable_check: bool = False
    variables: Mapping[str, str] = field(default_factory=dict)
    bindings: Mapping[str, object] = field(default_factory=dict)
    expect: Expectation = ExpectValue(True)
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.file}/{self.section}/{self.name}"


# --- Reading the test data -----------------------------------------------------------

_TEST_FIELDS: Final = frozenset(
    {
        "name",
        "description",
        "expr",
        "disable_macros",
        "disable_check",
        "check_only",
        "type_env",
        "container",
        "locale",
        "bindings",
        "value",
        "typed_result",
        "eval_error",
        "any_eval_errors",
        "unknown",
        "any_unknowns",
    }
)
_RESULT_FIELDS: Final = (
    "value",
    "typed_result",
    "eval_error",
    "any_eval_errors",
    "unknown",
    "any_unknowns",
)


def load_file(path: Path) -> list[Case]:
    """All the cases of one SimpleTestFile, in file order."""
    try:
        root = textproto.parse_file(path)
    except TextprotoError as err:
        raise DataError(str(err)) from None
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for section_value in textproto.values(root, "section"):
        section = textproto.as_message(section_value)
        section_name = _text(section, "name")
        for test in textproto.values(section, "test"):
            try:
                case = _case(path.stem, section_name, textproto.as_message(test))
            except TextprotoError as err:
                raise DataError(f"{path.name}: {section_name}: {err}") from None
            # a few names repeat within a section: number the repeats to keep ids unique
            seen[case.id] = count = seen.get(case.id, 0) + 1
            if count > 1:
                case = dataclasses.replace(case, name=f"{case.name}~{count}")
            cases.append(case)
    return cases


def load_cases(directory: Path, files: Iterable[str] | None = None) -> list[Case]:
    """The cases of the named files (default: every file of the folder), sorted by file."""
    names = sorted(files) if files is not None else sorted(p.stem for p in _files(directory))
    cases: list[Case] = []
    for name in names:
        cases.extend(load_file(directory / f"{name}.textproto"))
    return cases


def _files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.textproto"))


def _case(file: str, section: str, test: Message) -> Case:
    name = _text(test, "name")
    unknown = set(test) - _TEST_FIELDS
    if unknown:
        raise DataError(f"{file}/{section}/{name}: unknown SimpleTest fields {sorted(unknown)}")
    expr = _text(test, "expr")
    disable_check = _flag(test, "disable_check")
    try:
        _refuse_unsupported_options(test)
        reference = protobuf_reference(expr)
        if reference is not None:
            raise NotRunnable(f"the expression uses protobuf {reference}")
        variables = _declarations(test)
        bindings = _bindings(test)
        expect = _expectation(test)
    except NotRunnable as reason:
        return Case(file, section, name, expr, disable_check, skip=str(reason))
    return Case(file, section, name, expr, disable_check, variables, bindings, expect)


def _refuse_unsupported_options(test: Message) -> None:
    if _flag(test, "check_only"):
        raise NotRunnable("check_only: the test is about the checker's output")
    if _flag(test, "disable_macros"):
        raise NotRunnable("disable_macros: macros cannot be turned off")
    container = textproto.single(test, "container")
    if container is not None and textproto.as_text(container):
        raise NotRunnable(f"resolves names in the protobuf container {_text(test, 'container')}")
    locale = textproto.single(test, "locale")
    if locale is not None and textproto.as_text(locale):
        raise NotRunnable("evaluates under a locale")


def _text(msg: Message, name: str) -> str:
    value = textproto.single(msg, name)
    return "" if value is None else textproto.as_text(value)


def _flag(msg: Message, name: str) -> bool:
    value = textproto.single(msg, name)
    return False if value is None else textproto.as_bool(value)


# The message and enum types of cel-spec's test protos, named without a package when the
# test sets a container (those tests are skipped on the container already).
_CONFORMANCE_TYPES: Final = frozenset(
    {"TestAllTypes", "NestedTestAllTypes", "GlobalEnum", "NestedEnum", "NestedMessage"}
)
# The only protobuf types that are also plain CEL types here.
_PLAIN_PROTOBUF_TYPES: Final = frozenset({"google.protobuf.Timestamp", "google.protobuf.Duration"})
_CEL_TOKEN_RE: Final = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>(?:[rRbB]{1,2})?(?:'''|\"\"\"|'|"))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>[0-9][0-9A-Za-z_.]*)
  | (?P<punct>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def protobuf_reference(expr: str) -> str | None:
    """What in a CEL expression needs protobuf messages or enums, None if nothing does:
    a message literal (`Name{...}`), or a name in the test protos or in `google.protobuf`
    other than Timestamp and Duration (which are plain CEL types)."""
    tokens = _cel_tokens(expr)
    for i, (kind, text) in enumerate(tokens):
        if kind != "ident":
            continue
        if i >= 2 and tokens[i - 1] == ("punct", ".") and tokens[i - 2][0] == "ident":
            continue  # inside a dotted name already looked at
        parts = [text]
        j = i + 1
        while j + 1 < len(tokens) and tokens[j] == ("punct", ".") and tokens[j + 1][0] == "ident":
            parts.append(tokens[j + 1][1])
            j += 2
        dotted = ".".join(parts)
        if j < len(tokens) and tokens[j] == ("punct", "{") and dotted != "in":
            return f"message literal {dotted}{{...}}"
        if dotted.startswith("cel.expr.conformance.") or _CONFORMANCE_TYPES & set(parts):
            return f"test type {dotted}"
        if dotted.startswith("google.protobuf."):
            type_name = ".".join(parts[:3])
            if type_name not in _PLAIN_PROTOBUF_TYPES:
                return f"type {type_name}"
    return None


def _cel_tokens(expr: str) -> list[tuple[str, str]]:
    """A rough CEL tokenizer: enough to see names and braces outside string literals."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(expr):
        m = _CEL_TOKEN_RE.match(expr, pos)
        assert m is not None  # the last alternative matches any character
        kind = m.lastgroup or "punct"
        if kind == "string":
            pos = _skip_string(expr, m.start(), m.group())
            tokens.append(("string", ""))
            continue
        pos = m.end()
        if kind != "space":
            tokens.append((kind, m.group()))
    return tokens


def _skip_string(expr: str, start: int, opener: str) -> int:
    prefix = opener.rstrip("'\"")
    quote = opener[len(prefix) :]
    raw = "r" in prefix.lower()
    pos = start + len(opener)
    while pos < len(expr):
        if expr.startswith(quote, pos):
            return pos + len(quote)
        pos += 2 if expr[pos] == "\\" and not raw else 1
    return pos  # unterminated: the engine will report it


_PRIMITIVES: Final = {
    "BOOL": "bool",
    "INT64": "int",
    "UINT64": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BYTES": "bytes",
}
_WELL_KNOWN: Final = {"TIMESTAMP": "timestamp", "DURATION": "duration", "ANY": "dyn"}
_MESSAGE_TYPES: Final = {
    "google.protobuf.Timestamp": "timestamp",
    "google.protobuf.Duration": "duration",
}


def _declarations(test: Message) -> dict[str, str]:
    declared: dict[str, str] = {}
    for decl_value in textproto.values(test, "type_env"):
        decl = textproto.as_message(decl_value)
        name = _text(decl, "name")
        if textproto.single(decl, "function") is not None:
            raise NotRunnable(f"declares a function {name}")
        ident = textproto.single(decl, "ident")
        if ident is None:
            raise DataError(f"declaration of {name} is neither an ident nor a function")
        type_ = textproto.single(textproto.as_message(ident), "type")
        declared[name] = "dyn" if type_ is None else declared_type(textproto.as_message(type_))
    return declared


def declared_type(type_: Message) -> str:
    """Our type name for a `cel.expr.Type`: primitives by name, anything else `dyn`."""
    primitive = textproto.single(type_, "primitive")
    if primitive is not None:
        enum = textproto.as_enum(primitive)
        if enum not in _PRIMITIVES:
            raise DataError(f"unknown primitive type {enum}")
        return _PRIMITIVES[str(enum)]
    if textproto.single(type_, "null") is not None:
        return "null_type"
    well_known = textproto.single(type_, "well_known")
    if well_known is not None:
        return _WELL_KNOWN.get(str(textproto.as_enum(well_known)), "dyn")
    message = textproto.single(type_, "message_type")
    if message is not None:
        name = textproto.as_text(message)
        if name not in _MESSAGE_TYPES:
            raise NotRunnable(f"declares a variable of protobuf message type {name}")
        return _MESSAGE_TYPES[name]
    return "dyn"


def _bindings(test: Message) -> dict[str, object]:
    bound: dict[str, object] = {}
    for entry_value in textproto.values(test, "bindings"):
        entry = textproto.as_message(entry_value)
        name = _text(entry, "key")
        expr_value = textproto.single(entry, "value")
        if expr_value is None:
            raise DataError(f"binding {name} has no value")
        inner = textproto.as_message(expr_value)
        if "error" in inner or "unknown" in inner:
            raise NotRunnable(f"binds {name} to an error or unknown")
        value = textproto.single(inner, "value")
        if value is None:
            raise DataError(f"binding {name} has no value")
        bound[name] = convert_value(textproto.as_message(value))
    return bound


def _expectation(test: Message) -> Expectation:
    given = [name for name in _RESULT_FIELDS if name in test]
    if len(given) > 1:
        raise DataError(f"several result matchers: {given}")
    if not given:
        return ExpectValue(True)  # simple.proto: an unspecified result means `true`
    kind = given[0]
    matcher = textproto.single(test, kind)
    assert matcher is not None
    body = textproto.as_message(matcher)
    if kind == "value":
        return ExpectValue(convert_value(body))
    if kind == "eval_error":
        return ExpectError(_error_messages(body))
    if kind == "any_eval_errors":
        messages: list[str] = []
        for error_set in textproto.values(body, "errors"):
            messages.extend(_error_messages(textproto.as_message(error_set)))
        return ExpectError(tuple(messages))
    if kind == "typed_result":
        raise NotRunnable("typed_result: needs the type deduced by the checker")
    raise NotRunnable(f"{kind}: expects unknowns")


def _error_messages(error_set: Message) -> tuple[str, ...]:
    return tuple(
        _text(textproto.as_message(status), "message")
        for status in textproto.values(error_set, "errors")
    )


# --- cel.expr.Value to runtime values ---------------------------------------------------


def convert_value(value: Message) -> object:
    """A `cel.expr.Value` as our runtime value."""
    if len(value) != 1 or len(next(iter(value.values()))) != 1:
        raise DataError(f"a cel.expr.Value must set exactly one kind: {value!r}")
    kind, (item,) = next(iter(value.items()))
    if kind == "null_value":
        return None
    if kind == "bool_value":
        return textproto.as_bool(item)
    if kind == "int64_value":
        return _int64(textproto.as_int(item))
    if kind == "uint64_value":
        return _uint64(textproto.as_int(item))
    if kind == "double_value":
        return textproto.as_float(item)
    if kind == "string_value":
        return textproto.as_text(item)
    if kind == "bytes_value":
        return textproto.as_bytes(item)
    if kind == "list_value":
        items = textproto.values(textproto.as_message(item), "values")
        return [convert_value(textproto.as_message(v)) for v in items]
    if kind == "map_value":
        return _map(textproto.as_message(item))
    if kind == "type_value":
        return CELType(textproto.as_text(item))
    if kind == "object_value":
        return _any(textproto.as_message(item))
    if kind == "enum_value":
        raise NotRunnable("involves a protobuf enum value")
    raise DataError(f"unknown cel.expr.Value kind {kind}")


def _int64(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise DataError(f"int64 out of range: {value}")
    return value


def _uint64(value: int) -> UInt:
    if not 0 <= value <= UINT64_MAX:
        raise DataError(f"uint64 out of range: {value}")
    return UInt(value)


def _map(map_value: Message) -> dict[object, object]:
    out: dict[object, object] = {}
    for entry_value in textproto.values(map_value, "entries"):
        entry = textproto.as_message(entry_value)
        key_msg, value_msg = textproto.single(entry, "key"), textproto.single(entry, "value")
        if key_msg is None or value_msg is None:
            raise DataError("a map entry needs a key and a value")
        key = convert_value(textproto.as_message(key_msg))
        if key in out:
            # `1`, `1u` and `true` are distinct CEL keys but one Python dict key
            raise NotRunnable(f"a map with keys that a Python dict cannot tell apart ({key!r})")
        out[key] = convert_value(textproto.as_message(value_msg))
    return out


def _any(any_value: Message) -> object:
    """An object_value (google.protobuf.Any): only the well-known types that are plain
    values here convert."""
    if len(any_value) != 1:
        raise NotRunnable("involves a serialized google.protobuf.Any")
    (key,) = any_value
    if not key.startswith("[") or "/" not in key:
        raise NotRunnable("involves a serialized google.protobuf.Any")
    type_name = key[1:-1].split("/", 1)[1]
    body = textproto.single(any_value, key)
    assert body is not None
    return well_known_value(type_name, textproto.as_message(body))


_WRAPPERS: Final = {
    "google.protobuf.BoolValue": textproto.as_bool,
    "google.protobuf.Int32Value": lambda v: _int64(textproto.as_int(v)),
    "google.protobuf.Int64Value": lambda v: _int64(textproto.as_int(v)),
    "google.protobuf.UInt32Value": lambda v: _uint64(textproto.as_int(v)),
    "google.protobuf.UInt64Value": lambda v: _uint64(textproto.as_int(v)),
    "google.protobuf.DoubleValue": textproto.as_float,
    "google.protobuf.FloatValue": lambda v: _float32(textproto.as_float(v)),
    "google.protobuf.StringValue": textproto.as_text,
    "google.protobuf.BytesValue": textproto.as_bytes,
}
_WRAPPER_DEFAULTS: Final[dict[str, object]] = {
    "google.protobuf.BoolValue": False,
    "google.protobuf.Int32Value": 0,
    "google.protobuf.Int64Value": 0,
    "google.protobuf.UInt32Value": UInt(0),
    "google.protobuf.UInt64Value": UInt(0),
    "google.protobuf.DoubleValue": 0.0,
    "google.protobuf.FloatValue": 0.0,
    "google.protobuf.StringValue": "",
    "google.protobuf.BytesValue": b"",
}


def _float32(value: float) -> float:
    # a FloatValue holds a 32-bit float: what the test means is that value, widened
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def well_known_value(type_name: str, body: Message) -> object:
    """A google.protobuf message that CEL treats as a plain value, as our runtime value."""
    if type_name in ("google.protobuf.Duration", "google.protobuf.Timestamp"):
        seconds = _optional_int(body, "seconds")
        nanos = _optional_int(body, "nanos")
        total = seconds * NANOS_PER_SECOND + nanos
        return Duration(total) if type_name.endswith("Duration") else Timestamp(total)
    if type_name in _WRAPPERS:
        value = textproto.single(body, "value")
        return _WRAPPER_DEFAULTS[type_name] if value is None else _WRAPPERS[type_name](value)
    if type_name == "google.protobuf.Value":
        return _json_value(body)
    if type_name == "google.protobuf.Struct":
        return _json_struct(body)
    if type_name == "google.protobuf.ListValue":
        return [_json_value(textproto.as_message(v)) for v in textproto.values(body, "values")]
    raise NotRunnable(f"involves the protobuf message {type_name}")


def _optional_int(msg: Message, name: str) -> int:
    value = textproto.single(msg, name)
    return 0 if value is None else textproto.as_int(value)


def _json_value(body: Message) -> object:
    if not body:
        return None  # an unset google.protobuf.Value reads as null
    if len(body) != 1:
        raise DataError(f"a google.protobuf.Value sets one kind: {body!r}")
    kind = next(iter(body))
    item = textproto.single(body, kind)
    assert item is not None
    if kind == "null_value":
        return None
    if kind == "number_value":
        return textproto.as_float(item)
    if kind == "string_value":
        return textproto.as_text(item)
    if kind == "bool_value":
        return textproto.as_bool(item)
    if kind == "struct_value":
        return _json_struct(textproto.as_message(item))
    if kind == "list_value":
        items = textproto.values(textproto.as_message(item), "values")
        return [_json_value(textproto.as_message(v)) for v in items]
    raise DataError(f"unknown google.protobuf.Value kind {kind}")


def _json_struct(body: Message) -> dict[object, object]:
    out: dict[object, object] = {}
    for entry_value in textproto.values(body, "fields"):
        entry = textproto.as_message(entry_value)
        value = textproto.single(entry, "value")
        out[_text(entry, "key")] = (
            None if value is None else _json_value(textproto.as_message(value))
        )
    return out


# --- Comparing and showing results ---------------------------------------------------


def values_match(expected: object, actual: object) -> bool:
    """Equality by exact CEL type: 1, 1u and 1.0 differ; NaN matches NaN; lists, maps and
    optionals compare element by element under the same rule."""
    te, ta = type(expected), type(actual)
    if te is list or te is tuple:
        if ta is not list and ta is not tuple:
            return False
        exp_items: Sequence[object] = expected  # type: ignore[assignment]
        act_items: Sequence[object] = actual  # type: ignore[assignment]
        return len(exp_items) == len(act_items) and all(
            values_match(e, a) for e, a in zip(exp_items, act_items, strict=True)
        )
    if te is dict:
        return ta is dict and _maps_match(expected, actual)  # type: ignore[arg-type]
    if te is float:
        if ta is not float:
            return False
        if math.isnan(expected):  # type: ignore[arg-type]
            return math.isnan(actual)  # type: ignore[arg-type]
        return expected == actual
    if te is Optional:
        if ta is not Optional:
            return False
        exp_opt: Optional = expected  # type: ignore[assignment]
        act_opt: Optional = actual  # type: ignore[assignment]
        if exp_opt.has_value() != act_opt.has_value():
            return False
        return not exp_opt.has_value() or values_match(exp_opt.value, act_opt.value)
    return te is ta and expected == actual


def _maps_match(expected: dict[object, object], actual: dict[object, object]) -> bool:
    if len(expected) != len(actual):
        return False
    for key, value in expected.items():
        found = [k for k in actual if type(k) is type(key) and k == key]
        if len(found) != 1 or not values_match(value, actual[found[0]]):
            return False
    return True


def show(value: object) -> str:
    """A value written as CEL would, with its type visible (`1u`, `1.0`, `b"x"`)."""
    if value is None:
        return "null"
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is UInt:
        return f"{int(value)}u"
    if type(value) is float:
        if math.isnan(value):
            return "double('NaN')"
        if math.isinf(value):
            return "double('-Infinity')" if value < 0 else "double('Infinity')"
        return repr(value)
    if type(value) is str:
        return '"' + value.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'
    if type(value) is bytes:
        return "b" + repr(value)[1:]
    if type(value) is list or type(value) is tuple:
        return "[" + ", ".join(show(v) for v in value) + "]"
    if type(value) is dict:
        return "{" + ", ".join(f"{show(k)}: {show(v)}" for k, v in value.items()) + "}"
    if type(value) is Duration:
        return f"duration({format_duration(value)!r})"
    if type(value) is Timestamp:
        return f"timestamp({format_timestamp(value)!r})"
    if type(value) is CELType:
        return f"type({value.name})"
    if type(value) is Optional:
        return f"optional.of({show(value.value)})" if value.has_value() else "optional.none()"
    return f"{type(value).__name__}({value!r})"


# --- Running ---------------------------------------------------------------------------

Status = Literal["passed", "failed", "skipped"]


@dataclass(frozen=True)
class Outcome:
    status: Status
    detail: str = ""  # why it failed or was skipped


def limits() -> Limits:
    """Limits generous enough for the spec's deepest parse trees and comprehensions."""
    from policyext.cel import Limits

    return Limits(
        max_source_length=1_000_000,
        max_nesting_depth=250,
        max_comprehension_nesting=16,
        cost_budget=1_000_000_000,
    )


def run_case(case: Case) -> Outcome:
    """Compile (checked unless the case disables it) and evaluate one case."""
    if case.skip is not None:
        return Outcome("skipped", case.skip)
    from policyext.cel import CELCheckError, CELError, compile

    try:
        # cel-go's environment: literals may mix types (Kubernetes' may not), and it has
        # the math, encoders and bindings libraries (Kubernetes' does not)
        program = compile(
            case.expr,
            dict(case.variables),
            limits=limits(),
            check=not case.disable_check,
            homogeneous=False,
            extensions=True,
        )
    except CELError as err:
        if isinstance(case.expect, ExpectError) and isinstance(err, CELCheckError):
            return Outcome("passed")  # the checker refuses what cel-go's checker refuses
        return Outcome("failed", f"compile error ({type(err).__name__}): {err}")
    except RecursionError:
        return Outcome("failed", "crash while compiling: RecursionError")
    except Exception as err:
        return Outcome("failed", f"crash while compiling: {type(err).__name__}: {err}")
    try:
        actual = program.evaluate(dict(case.bindings))
    except CELError as err:
        if isinstance(case.expect, ExpectError):
            return Outcome("passed")
        return Outcome("failed", f"evaluation error ({type(err).__name__}): {err}")
    except RecursionError:
        return Outcome("failed", "crash while evaluating: RecursionError")
    except Exception as err:
        return Outcome("failed", f"crash while evaluating: {type(err).__name__}: {err}")
    if isinstance(case.expect, ExpectError):
        return Outcome("failed", f"expected an error, got {show(actual)}")
    if values_match(case.expect.value, actual):
        return Outcome("passed")
    return Outcome("failed", f"expected {show(case.expect.value)}, got {show(actual)}")


_OUTCOMES: dict[str, Outcome] = {}


def outcome_of(case: Case) -> Outcome:
    """`run_case`, remembered: the per-case tests and the bar test share one run."""
    found = _OUTCOMES.get(case.id)
    if found is None:
        found = _OUTCOMES[case.id] = run_case(case)
    return found


@dataclass
class Tally:
    passed: int = 0
    failed: int = 0
    skipped: int = 0

    def add(self, status: Status) -> None:
        setattr(self, status, getattr(self, status) + 1)

    @property
    def runnable(self) -> int:
        return self.passed + self.failed

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped


def tally(results: Iterable[tuple[Case, Outcome]]) -> dict[str, Tally]:
    by_file: dict[str, Tally] = {}
    for case, outcome in results:
        by_file.setdefault(case.file, Tally()).add(outcome.status)
    return by_file


def bar_rate(by_file: Mapping[str, Tally]) -> tuple[int, int]:
    """Passed and runnable cases over the files of the bar."""
    passed = sum(by_file[f].passed for f in BAR_FILES if f in by_file)
    runnable = sum(by_file[f].runnable for f in BAR_FILES if f in by_file)
    return passed, runnable


def format_table(by_file: Mapping[str, Tally]) -> str:
    lines = [f"{'file':<14} {'passed':>7} {'failed':>7} {'skipped':>8} {'rate':>7}"]

    def row(name: str, t: Tally) -> str:
        rate = f"{100 * t.passed / t.runnable:6.1f}%" if t.runnable else "      -"
        return f"{name:<14} {t.passed:>7} {t.failed:>7} {t.skipped:>8} {rate}"

    total = Tally()
    for name in sorted(by_file):
        t = by_file[name]
        note = "  (not in the bar)" if name not in BAR_FILES else ""
        lines.append(row(name, t) + note)
        total.passed += t.passed
        total.failed += t.failed
        total.skipped += t.skipped
    lines.append(row("total", total))
    passed, runnable = bar_rate(by_file)
    if runnable:
        verdict = "met" if passed >= BAR * runnable else "NOT met"
        run = sum(1 for f in BAR_FILES if f in by_file)
        files = (
            f"{run} bar files" if run == len(BAR_FILES) else f"{run} of {len(BAR_FILES)} bar files"
        )
        lines.append(
            f"bar: {passed}/{runnable} = {100 * passed / runnable:.1f}% of the runnable cases "
            f"of the {files} pass (needs {100 * BAR:.0f}%): {verdict}"
        )
    return "\n".join(lines)


def load_known_failures(path: Path = KNOWN_FAILURES_FILE) -> dict[str, str]:
    """`file/section/name  # reason` per line; `#` lines and blank lines are comments."""
    known: dict[str, str] = {}
    if not path.exists():
        return known
    for line in path.read_text(encoding="utf-8").splitlines():
        case_id, _, reason = line.partition("#")
        case_id = case_id.strip()
        if case_id:
            known[case_id] = reason.strip()
    return known


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.cel.conformance", description="Run cel-spec's conformance tests."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show the failing cases")
    parser.add_argument("--file", action="append", help="only this file (repeatable)")
    parser.add_argument("--show-skipped", action="store_true", help="list skipped cases")
    args = parser.parse_args(argv)
    directory = testdata_dir()
    if not directory.is_dir():
        print(f"no cel-spec test data at {directory} (set {SPEC_ENV})", file=sys.stderr)
        return 2
    cases = load_cases(directory, args.file)
    results = [(case, outcome_of(case)) for case in cases]
    if args.verbose:
        for case, outcome in results:
            if outcome.status == "failed":
                print(f"FAIL {case.id}\n  expr: {case.expr}\n  {outcome.detail}")
    if args.show_skipped:
        for case, outcome in results:
            if outcome.status == "skipped":
                print(f"SKIP {case.id}: {outcome.detail}")
    by_file = tally(results)
    print(format_table(by_file))
    passed, runnable = bar_rate(by_file)
    return 0 if runnable == 0 or passed >= BAR * runnable else 1


if __name__ == "__main__":
    sys.exit(main())
