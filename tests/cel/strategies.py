"""Hypothesis strategies: CEL source text with an activation, for differential and fuzz tests.

`cel_cases()` draws an activation shaped like a Kubernetes object (JSON values bound to a few
variables) and then an expression over it. The expression generator is typed: asked for an
`int` it usually builds something that evaluates to an int, so most cases produce values
rather than errors. A small share of operands is deliberately of the wrong kind, and error
producers (division by zero, missing keys, bad conversions) are mixed into `&&`, `||`, `?:`
and the macros, so that errors and their absorption are compared too. The generator knows
nothing about the expected result: the oracle provides it.

Expressions stay inside what both runtimes agree on. Where Google's C++ runtime (the oracle)
differs from cel-go, which Kubernetes uses, the narrow shape is left out, with the reason:

- numeric strings for `int()`, `uint()`, `double()` never carry spaces, and those for `uint()`
  never a `+` sign: C++ trims and accepts them, cel-go's strconv rejects them;
- `bool()` of a string only sees the spellings both accept (C++ takes `t` but not `F`);
- double literals and `double()` strings stay finite: C++ turns `1e400` into infinity where
  cel-go reports an out-of-range literal or conversion;
- `string()` of a double only sees finite doubles (C++ prints `-nan`/`inf`, Go `NaN`/`+Inf`),
  and is never applied to durations or timestamps (C++ pads the fraction to 3, 6 or 9
  digits, cel-go prints the shortest form);
- no `int(bool)`, `int(duration)`: conversions that only one of the runtimes has;
- map literals never repeat a key: the spec asks for an error, which C++ raises past `&&`
  and `||` (it aborts the evaluation) and cel-go does not raise (the last entry wins); for
  equal numbers of different types (`1` and `1u`) C++ silently keeps the first;
- nor a bool key beside the number it equals in Python (`true` and `1`): CEL keeps both
  entries, but the oracle hands its maps back as Python dicts, which cannot, so its answer
  is unreliable (the differential test checks such maps through `size()` and lookups);
- `dyn` is never used as a value: C++ has no such identifier;
- unary minus only sees ints and doubles: cel-go (without the checker) also negates a
  duration, C++ has no such overload;
- `x in m` for a map `m` only tests keys of the kinds a map key can have: for a list, null
  or bytes C++ reports an error where cel-go answers false;
- durations are whole microseconds and timestamps carry no nanoseconds, because the oracle
  hands them back as Python `timedelta`/`datetime`, which would truncate them;
- comprehensions nest at most twice, the default limit of our engine;
- `map()` and `filter()` only iterate over lists: the order of a map's keys is unspecified,
  so a list built from them may legitimately come out in another order;
- the extension functions (strings, math, base64) skip a few more shapes, each noted where
  it is generated, as are the limits of the oracle's Python bindings.
"""

from __future__ import annotations

import os
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from hypothesis import strategies as st

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
UINT64_MAX: Final = 2**64 - 1

# Kinds of values the generator can aim at.
INT, UINT, DOUBLE, STRING, BYTES, BOOL, NULL, LIST, MAP, TYPE, DURATION, TIMESTAMP = (
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "null",
    "list",
    "map",
    "type",
    "duration",
    "timestamp",
)
KINDS: Final = (
    BOOL,
    INT,
    STRING,
    DOUBLE,
    UINT,
    LIST,
    MAP,
    NULL,
    BYTES,
    TYPE,
    DURATION,
    TIMESTAMP,
)
NUMERIC: Final = (INT, UINT, DOUBLE)
ORDERED: Final = (INT, UINT, DOUBLE, STRING, BYTES, BOOL, DURATION, TIMESTAMP)
MAP_KEY_KINDS: Final = (STRING, INT, UINT, BOOL)

VARIABLE_NAMES: Final = ("obj", "node", "pod", "x", "y")

# Field names that read like a Kubernetes object; all are valid CEL identifiers.
IDENT_KEYS: Final = (
    "name",
    "metadata",
    "labels",
    "spec",
    "status",
    "replicas",
    "ready",
    "items",
    "zone",
    "weight",
    "count",
    "_private",
    "a1",
)
# Keys only reachable with `m["..."]`: dots, slashes, spaces, Unicode, reserved words.
ODD_KEYS: Final = ("app.kubernetes.io/name", "", "é", "with space", "in", "null", "as")

_RESERVED_WORDS: Final = """as break const continue else false for function if import in let loop
null package namespace return true var void while"""
CEL_RESERVED: Final = frozenset(_RESERVED_WORDS.split())

# Regular expressions that Go's regexp and RE2 read the same way.
SAFE_PATTERNS: Final = (
    "a",
    "^a",
    "b$",
    "a.c",
    "[a-z]+",
    "^[0-9]*$",
    "(foo|bar)",
    "é",
    "\\d+",
    "^$",
    ".*",
    "a{2}",
    "[^a]",
    "^.$",
    "(?i)ABC",
)

_SIMPLE_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    "'": "\\'",
    '"': '\\"',
}


def max_examples(default: int) -> int:
    """Examples per property test, scaled by the `HYPOTHESIS_PROFILE` environment variable:
    `quick` (a sixth), `default`, `long` (twenty times), `soak` (two hundred times)."""
    scale = {"quick": 1 / 6, "default": 1, "ci": 1, "dev": 1, "long": 20, "soak": 200}
    factor = scale.get(os.environ.get("HYPOTHESIS_PROFILE", "default"), 1)
    return max(1, int(default * factor))


@dataclass(frozen=True)
class Case:
    """A CEL expression and the variables to evaluate it with."""

    source: str
    activation: dict[str, object] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Case(source={self.source!r}, activation={self.activation!r})"


# ---------------------------------------------------------------------------------------
# Literal encoders: any value, written in one of CEL's literal spellings.


def _escape_char(draw: st.DrawFn, ch: str) -> str:
    """A random escape sequence that denotes the code point `ch` in a string literal."""
    cp = ord(ch)
    forms: list[str] = [f"\\U{cp:08x}"]
    if cp < 0x10000:
        forms.append(f"\\u{cp:04X}" if draw(st.booleans()) else f"\\u{cp:04x}")
    if cp < 0x100:
        forms.append(f"\\x{cp:02x}")
        forms.append(f"\\X{cp:02X}")
        forms.append(f"\\{cp:03o}")
    if ch in _SIMPLE_ESCAPES:
        forms.append(_SIMPLE_ESCAPES[ch])
    return draw(st.sampled_from(forms))


def string_literal(draw: st.DrawFn, value: str) -> str:
    """`value` as a CEL string literal, in a randomly chosen quoting and escaping."""
    style = draw(st.sampled_from(("'", '"', "'''", '"""', "r'", 'R"')))
    raw = style[0] in "rR"
    quote = style.lstrip("rR")
    triple = len(quote) == 3
    if raw and any(c in value for c in ("\\", "\n", "\r", quote[0])):
        raw, style = False, quote  # a raw literal cannot spell these
    out: list[str] = []
    for ch in value:
        must = ch in ("\\", quote[0]) or (ch in "\r\n" and not triple) or ch == "\r"
        if raw:
            out.append(ch)
        elif must or draw(st.integers(0, 9)) >= 8:
            out.append(_escape_char(draw, ch))
        else:
            out.append(ch)
    body = "".join(out)
    # a triple-quoted literal must not end in (an unescaped) quote of its own kind
    if triple and body.endswith(quote[0]) and not body.endswith("\\" + quote[0]):
        body = body[:-1] + _escape_char(draw, quote[0])
    return f"{style}{body}{quote}"


def bytes_literal(draw: st.DrawFn, pieces: Sequence[str | int]) -> str:
    """A CEL bytes literal from pieces: text (written as itself, so encoded as UTF-8) and
    single byte values (written as hex or octal escapes)."""
    quote = draw(st.sampled_from(("'", '"', "'''")))
    prefix = draw(st.sampled_from(("b", "B")))
    out: list[str] = []
    for piece in pieces:
        if isinstance(piece, int):
            out.append(draw(st.sampled_from((f"\\x{piece:02x}", f"\\{piece:03o}"))))
            continue
        for ch in piece:
            if ch in ("\\", quote[0], "\n", "\r"):
                out.append(_SIMPLE_ESCAPES[ch])
            else:
                out.append(ch)
    body = "".join(out)
    if len(quote) == 3 and body.endswith(quote[0]):
        body = body[:-1] + "\\" + quote[0]
    return f"{prefix}{quote}{body}{quote}"


def int_literal(draw: st.DrawFn, value: int) -> str:
    if draw(st.integers(0, 9)) >= 8:
        return f"-0x{-value:x}" if value < 0 else f"0x{value:x}"
    return str(value)


def uint_literal(draw: st.DrawFn, value: int) -> str:
    suffix = draw(st.sampled_from(("u", "U")))
    if draw(st.integers(0, 9)) >= 8:
        return f"0x{value:X}{suffix}"
    return f"{value}{suffix}"


def double_literal(value: float) -> str:
    """A finite double as a CEL literal (Python's repr is a valid CEL float literal, and
    always has a dot or an exponent so it does not read as an int)."""
    text = repr(value)
    if "." not in text and "e" not in text:
        text += ".0"
    return text


# ---------------------------------------------------------------------------------------
# Values of the activation: JSON-like, as the API server hands Kubernetes objects over.

_int64s: Final = st.one_of(
    st.integers(-1000, 1000),
    st.sampled_from((0, 1, -1, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, 2**32)),
    st.integers(INT64_MIN, INT64_MAX),
)
_uint64s: Final = st.one_of(
    st.integers(0, 1000),
    st.sampled_from((0, 1, INT64_MAX, INT64_MAX + 1, UINT64_MAX, UINT64_MAX - 1, 2**32)),
    st.integers(0, UINT64_MAX),
)
_finite_doubles: Final = st.one_of(
    st.sampled_from(
        (0.0, -0.0, 1.0, -1.5, 0.5, 1e300, -1e-300, 5e-324, 2.0**63, 1.7976931348623157e308)
    ),
    st.floats(allow_nan=False, allow_infinity=False),
)
_texts: Final = st.one_of(
    st.sampled_from(("", "a", "abc", "foo", "bar", "é", "日本", "😀", "a.c", "ABC", "123", "b")),
    st.text(max_size=8),
)

# The oracle's bindings cut strings of the activation at the first NUL (`'a\x00b'` reads as
# `'a'`), so the activation has none; literals in the source keep them.
_json_texts: Final = _texts.map(lambda text: text.replace("\x00", ""))

json_keys: Final = st.sampled_from(IDENT_KEYS + ODD_KEYS)
json_scalars: Final = st.one_of(st.none(), st.booleans(), _int64s, _finite_doubles, _json_texts)
json_values: Final = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(json_keys, children, max_size=4),
    ),
    max_leaves=12,
)


@st.composite
def kubernetes_objects(draw: st.DrawFn) -> dict[str, object]:
    """A small object with the shape of a Kubernetes resource."""
    labels = draw(
        st.dictionaries(
            st.sampled_from(("app", "zone", "app.kubernetes.io/name", "tier")),
            _json_texts,
            max_size=3,
        )
    )
    containers = draw(
        st.lists(
            st.fixed_dictionaries(
                {"name": _json_texts, "image": _json_texts},
                optional={"ready": st.booleans(), "restarts": st.integers(0, 10)},
            ),
            max_size=3,
        )
    )
    spec = draw(
        st.fixed_dictionaries(
            {"replicas": st.integers(0, 10), "containers": st.just(containers)},
            optional={
                "weight": _finite_doubles,
                "zone": st.none() | _json_texts,
                "items": json_values,
            },
        )
    )
    return {"metadata": {"name": draw(_json_texts), "labels": labels}, "spec": spec}


activations: Final = st.dictionaries(
    st.sampled_from(VARIABLE_NAMES),
    st.one_of(kubernetes_objects(), json_values),
    min_size=1,
    max_size=3,
)


def kind_of(value: object) -> str | None:
    """The generator kind of a JSON value (None for anything else)."""
    if value is None:
        return NULL
    kinds: dict[type, str] = {
        bool: BOOL,
        int: INT,
        float: DOUBLE,
        str: STRING,
        list: LIST,
        dict: MAP,
    }
    return kinds.get(type(value))


def is_identifier(key: object) -> bool:
    return (
        isinstance(key, str)
        and key not in CEL_RESERVED
        and key[:1] in ("_", *string.ascii_letters)
        and all(c in "_" + string.ascii_letters + string.digits for c in key)
    )


@dataclass(frozen=True)
class Path:
    """A place inside the activation: a variable and the keys or indices below it."""

    steps: tuple[object, ...]
    value: object


def paths_of(activation: dict[str, object], max_depth: int = 4) -> list[Path]:
    out: list[Path] = []

    def walk(steps: tuple[object, ...], value: object, depth: int) -> None:
        out.append(Path(steps, value))
        if depth >= max_depth:
            return
        if isinstance(value, dict):
            for key, child in value.items():
                walk((*steps, key), child, depth + 1)
        elif isinstance(value, list):
            for index, child in enumerate(value[:3]):
                walk((*steps, index), child, depth + 1)

    for name, value in activation.items():
        walk((name,), value, 0)
    return out


# ---------------------------------------------------------------------------------------
# The expression generator.


@dataclass(frozen=True)
class Scope:
    """What an expression may refer to: paths into the activation and the variables of the
    comprehensions around it (name and kind, None when the kind is unknown)."""

    paths: tuple[Path, ...]
    bound: tuple[tuple[str, str | None], ...] = ()

    @property
    def comprehension_depth(self) -> int:
        return len(self.bound)

    def bind(self, name: str, kind: str | None) -> Scope:
        return Scope(self.paths, (*self.bound, (name, kind)))


MAX_COMPREHENSION_NESTING: Final = 2


class ExprGen:
    """Draws typed CEL expressions. `expr(kind, depth)` returns source text that usually
    evaluates to a value of that kind; every composite is parenthesised."""

    def __init__(self, draw: st.DrawFn, scope: Scope, *, loose: bool = True) -> None:
        self.draw = draw
        self.scope = scope
        self.loose = loose  # whether some operands may be of the wrong kind on purpose

    # -- helpers ----------------------------------------------------------------------

    def chance(self, percent: int) -> bool:
        """True with about `percent` % probability; shrinks towards False."""
        return self.draw(st.integers(0, 99)) >= 100 - percent

    def pick(self, options: Sequence[Callable[[], str]]) -> str:
        """Call one of the options; shrinking prefers the first."""
        index = self.draw(st.integers(0, len(options) - 1))
        return options[index]()

    def with_scope(self, scope: Scope) -> ExprGen:
        return ExprGen(self.draw, scope, loose=self.loose)

    def strict(self) -> ExprGen:
        """A generator that never aims at the wrong kind on purpose."""
        return ExprGen(self.draw, self.scope, loose=False)

    # -- entry point ------------------------------------------------------------------

    def expr(self, kind: str, depth: int) -> str:
        # a few operands of the wrong kind, so that type errors are compared too
        if self.loose and self.chance(4):
            kind = self.draw(st.sampled_from(KINDS))
        if depth <= 0 or self.draw(st.integers(0, 9)) < 2:
            return self.leaf(kind)
        builder: Callable[[int], str] = getattr(self, f"build_{kind}")
        return builder(depth - 1)

    def leaf(self, kind: str) -> str:
        options: list[Callable[[], str]] = [lambda: self.literal(kind)]
        paths = [p for p in self.scope.paths if kind_of(p.value) == kind]
        if paths:
            options.append(lambda: self.render_path(self.draw(st.sampled_from(paths))))
        bound = [name for name, k in self.scope.bound if k == kind]
        if bound:
            options.append(lambda: self.draw(st.sampled_from(bound)))
        unknown = [name for name, k in self.scope.bound if k is None]
        if unknown and self.loose and self.chance(30):
            return self.draw(st.sampled_from(unknown))
        return self.pick(options)

    def render_path(self, path: Path) -> str:
        text = str(path.steps[0])
        for step in path.steps[1:]:
            if isinstance(step, int):
                index = self.draw(st.sampled_from((str(step), f"{step}u", f"{step}.0")))
                text += f"[{index}]"
            elif is_identifier(step) and self.draw(st.booleans()):
                text += f".{step}"
            else:
                text += f"[{string_literal(self.draw, str(step))}]"
        return text

    # -- literals ---------------------------------------------------------------------

    def literal(self, kind: str) -> str:
        draw = self.draw
        if kind == INT:
            return int_literal(draw, draw(_int64s))
        if kind == UINT:
            return uint_literal(draw, draw(_uint64s))
        if kind == DOUBLE:
            special = ("(1.0 / 0.0)", "(-1.0 / 0.0)", "(0.0 / 0.0)", "double('NaN')", "-0.0")
            if self.chance(10):
                return draw(st.sampled_from(special))
            return double_literal(draw(_finite_doubles))
        if kind == STRING:
            return string_literal(draw, draw(_texts))
        if kind == BYTES:
            pieces = draw(st.lists(st.one_of(_texts, st.integers(0, 255)), max_size=4))
            return bytes_literal(draw, pieces)
        if kind == BOOL:
            return draw(st.sampled_from(("true", "false")))
        if kind == NULL:
            return "null"
        if kind == LIST:
            return self.list_literal(0)
        if kind == MAP:
            return self.map_literal(0)
        if kind == TYPE:
            names = ("int", "uint", "double", "bool", "string", "bytes", "list", "map")
            return draw(st.sampled_from((*names, "null_type", "type")))
        if kind == DURATION:
            return f"duration({string_literal(draw, draw(_durations))})"
        if kind == TIMESTAMP:
            return self.timestamp_literal()
        raise AssertionError(kind)

    def list_literal(self, depth: int) -> str:
        kind = self.draw(st.sampled_from(KINDS[:5]))
        size = self.draw(st.integers(0, 3))
        mixed = self.chance(20)
        items = [
            self.expr(self.draw(st.sampled_from(KINDS)) if mixed else kind, depth)
            for _ in range(size)
        ]
        return "[" + ", ".join(items) + "]"

    def map_literal(self, depth: int) -> str:
        key_kind = self.draw(st.sampled_from(MAP_KEY_KINDS))
        value_kind = self.draw(st.sampled_from(KINDS[:5]))
        size = self.draw(st.integers(0, 3))
        entries: list[str] = []
        seen: dict[object, str] = {}
        for _ in range(size):
            key_value, key_text = self.map_key(key_kind if not self.chance(15) else None)
            # Python equality merges `1`, `1u` and `true`: see the top for why none repeats
            if key_value in seen:
                continue
            seen[key_value] = key_text
            entries.append(f"{key_text}: {self.expr(value_kind, depth)}")
        return "{" + ", ".join(entries) + "}"

    def map_key(self, kind: str | None) -> tuple[object, str]:
        """A literal map key, as (its value, its source text)."""
        draw = self.draw
        kind = kind or draw(st.sampled_from(MAP_KEY_KINDS))
        if kind == STRING:
            key: str = draw(st.sampled_from(IDENT_KEYS + ODD_KEYS[:3]))
            return key, string_literal(draw, key)
        if kind == INT:
            number = draw(st.integers(-2, 3))
            return number, str(number)
        if kind == UINT:
            number = draw(st.integers(0, 3))
            return number, f"{number}u"
        flag = draw(st.booleans())
        return flag, "true" if flag else "false"

    def timestamp_literal(self) -> str:
        draw = self.draw
        if self.chance(30):
            seconds = draw(st.integers(-62_135_596_800, 253_402_300_799))
            return f"timestamp({seconds})"
        year = draw(st.integers(1, 9999))
        month = draw(st.integers(1, 12))
        day = draw(st.integers(1, 28))
        hour, minute, second = draw(
            st.tuples(st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
        )
        frac = draw(st.sampled_from(("", ".5", ".123", ".000001", ".999999")))
        text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{frac}Z"
        return f"timestamp({string_literal(draw, text)})"

    # -- errors -----------------------------------------------------------------------

    def error_expr(self, kind: str) -> str:
        """An expression meant as a `kind` that fails when evaluated."""
        draw = self.draw
        maps = [p for p in self.scope.paths if isinstance(p.value, dict)]
        options: list[Callable[[], str]] = [
            lambda: f"({self.literal(INT)} / 0)" if kind != BOOL else "((1 / 0) == 1)",
            lambda: f"{{'k': {self.literal(kind)}}}['missing']",
            lambda: f"[{self.literal(kind)}][{draw(st.sampled_from(('1', '-1', '3u')))}]",
            lambda: "int('not a number')" if kind != BOOL else "(int('x') > 0)",
            lambda: "(9223372036854775807 + 1)" if kind != BOOL else "((0u - 1u) > 0u)",
        ]
        if maps:
            options.append(lambda: self.render_path(draw(st.sampled_from(maps))) + ".absent")
        return self.pick(options)

    def maybe_error(self, kind: str, depth: int) -> str:
        """An operand of `&&`, `||`, `?:` or a macro predicate: sometimes one that fails."""
        if self.chance(20):
            return self.error_expr(kind)
        return self.expr(kind, depth)

    # -- builders per kind --------------------------------------------------------------

    def ternary(self, kind: str, depth: int) -> str:
        cond = self.maybe_error(BOOL, depth)
        return f"({cond} ? {self.maybe_error(kind, depth)} : {self.maybe_error(kind, depth)})"

    def dyn(self, kind: str, depth: int) -> str:
        return f"dyn({self.expr(kind, depth)})"

    def list_index(self, kind: str, depth: int) -> str:
        items = [self.expr(kind, depth) for _ in range(self.draw(st.integers(1, 3)))]
        index = self.draw(st.integers(0, len(items)))  # one past the end: an error
        suffix = self.draw(st.sampled_from(("", "u", ".0")))
        return f"[{', '.join(items)}][{index}{suffix}]"

    def map_lookup(self, kind: str, depth: int) -> str:
        key = self.draw(st.sampled_from(IDENT_KEYS[:4]))
        other = self.draw(st.sampled_from(IDENT_KEYS[:4])) if self.chance(25) else key
        value = self.expr(kind, depth)
        if self.draw(st.booleans()):
            return f"{{'{key}': {value}}}.{other}"
        return f"{{'{key}': {value}}}['{other}']"

    def binary(self, left: str, ops: Sequence[str], right: str, depth: int) -> str:
        op = self.draw(st.sampled_from(ops))
        return f"({self.expr(left, depth)} {op} {self.expr(right, depth)})"

    def negation(self, kind: str, depth: int) -> str:
        # strict: cel-go negates a duration that reaches `-` untyped, C++ has no overload
        return f"-{self.strict().expr(kind, depth)}"

    def call(self, function: str, kinds: Sequence[str], depth: int) -> str:
        return f"{function}({self.expr(self.draw(st.sampled_from(kinds)), depth)})"

    def common(self, kind: str, depth: int) -> list[Callable[[], str]]:
        return [
            lambda: self.ternary(kind, depth),
            lambda: self.dyn(kind, depth),
            lambda: self.list_index(kind, depth),
            lambda: self.map_lookup(kind, depth),
        ]

    def build_int(self, depth: int) -> str:
        return self.pick(
            [
                lambda: self.binary(INT, "+-*/%", INT, depth),
                lambda: self.negation(INT, depth),
                lambda: self.call("size", (STRING, BYTES, LIST, MAP), depth),
                lambda: (
                    f"{self.expr(self.draw(st.sampled_from((STRING, LIST, MAP))), depth)}.size()"
                ),
                lambda: self.call("int", (UINT, DOUBLE, INT, TIMESTAMP), depth),
                lambda: f"int({string_literal(self.draw, self.draw(_int_strings))})",
                lambda: self.extension(INT, depth),
                *self.common(INT, depth),
            ]
        )

    def build_uint(self, depth: int) -> str:
        return self.pick(
            [
                lambda: self.binary(UINT, "+-*/%", UINT, depth),
                lambda: self.call("uint", (INT, DOUBLE, UINT), depth),
                lambda: f"uint({string_literal(self.draw, self.draw(_uint_strings))})",
                *self.common(UINT, depth),
            ]
        )

    def build_double(self, depth: int) -> str:
        return self.pick(
            [
                lambda: self.binary(DOUBLE, "+-*/", DOUBLE, depth),
                lambda: self.negation(DOUBLE, depth),
                lambda: self.call("double", (INT, UINT, DOUBLE), depth),
                lambda: f"double({string_literal(self.draw, self.draw(_double_strings))})",
                lambda: self.extension(DOUBLE, depth),
                *self.common(DOUBLE, depth),
            ]
        )

    def finite_double(self, depth: int) -> str:
        """A double expression that cannot be NaN or infinite (for `string()`)."""
        return self.pick(
            [
                lambda: double_literal(self.draw(_finite_doubles)),
                lambda: f"double({self.expr(INT, depth)})",
            ]
        )

    def build_string(self, depth: int) -> str:
        return self.pick(
            [
                lambda: self.binary(STRING, "+", STRING, depth),
                lambda: self.call("string", (INT, UINT, BOOL, STRING, BYTES), depth),
                lambda: f"string({self.finite_double(depth)})",
                lambda: self.extension(STRING, depth),
                *self.common(STRING, depth),
            ]
        )

    def build_bytes(self, depth: int) -> str:
        return self.pick(
            [
                lambda: self.binary(BYTES, "+", BYTES, depth),
                lambda: self.call("bytes", (STRING,), depth),
                lambda: self.extension(BYTES, depth),
                *self.common(BYTES, depth),
            ]
        )

    def build_null(self, depth: int) -> str:
        return self.pick(self.common(NULL, depth))

    def build_type(self, depth: int) -> str:
        return self.call("type", KINDS, depth)

    def build_duration(self, depth: int) -> str:
        return self.pick(
            [
                lambda: self.binary(DURATION, "+-", DURATION, depth),
                lambda: self.binary(TIMESTAMP, "-", TIMESTAMP, depth),
                *self.common(DURATION, depth),
            ]
        )

    def build_timestamp(self, depth: int) -> str:
        return self.pick(
            [
                lambda: self.binary(TIMESTAMP, "+-", DURATION, depth),
                lambda: self.binary(DURATION, "+", TIMESTAMP, depth),
                *self.common(TIMESTAMP, depth),
            ]
        )

    def build_list(self, depth: int) -> str:
        return self.pick(
            [
                lambda: self.list_literal(depth),
                lambda: self.binary(LIST, "+", LIST, depth),
                lambda: self.macro("map", depth),
                lambda: self.macro("filter", depth),
                lambda: self.macro("map3", depth),
                lambda: self.extension(LIST, depth),
                *self.common(LIST, depth),
            ]
        )

    def build_map(self, depth: int) -> str:
        return self.pick([lambda: self.map_literal(depth), *self.common(MAP, depth)])

    def build_bool(self, depth: int) -> str:
        d = depth
        return self.pick(
            [
                lambda: self.comparison(d),
                lambda: self.logical(d),
                lambda: f"!{self.expr(BOOL, d)}",
                lambda: self.membership(d),
                self.has,
                lambda: self.macro(self.draw(st.sampled_from(("all", "exists", "exists_one"))), d),
                lambda: self.string_test(d),
                lambda: f"bool({string_literal(self.draw, self.draw(_bool_strings))})",
                lambda: f"({self.call('type', KINDS, d)} == {self.literal(TYPE)})",
                lambda: self.extension(BOOL, d),
                *self.common(BOOL, d),
            ]
        )

    # -- extension libraries: cel-go's strings, math and encoders (the last two are not --
    # -- Kubernetes'; the differential test compiles with `extensions=True`) --

    def extension(self, kind: str, depth: int) -> str:
        draw = self.draw

        def s() -> str:
            return self.expr(STRING, depth)

        def small() -> str:
            return str(draw(st.integers(-1, 5)))

        options: dict[str, list[Callable[[], str]]] = {
            STRING: [
                lambda: f"{s()}.{draw(st.sampled_from(('lowerAscii', 'upperAscii', 'trim')))}()",
                lambda: f"{s()}.replace({s()}, {s()})",
                lambda: f"{s()}.replace({s()}, {s()}, {small()})",
                lambda: f"{s()}.charAt({small()})",
                lambda: f"{s()}.substring({small()})",
                lambda: f"{s()}.substring({small()}, {small()})",
                lambda: f"{self.expr(LIST, depth)}.join()",
                lambda: f"[{s()}, {s()}].join({s()})",
                lambda: f"strings.quote({s()})",
                lambda: f"base64.encode({self.expr(BYTES, depth)})",
            ],
            INT: [
                # no offsets: at offset == size() C++ answers -1 where cel-go reports an error
                lambda: f"{s()}.{draw(st.sampled_from(('indexOf', 'lastIndexOf')))}({s()})",
                # ints only: cel-go refuses to order NaN, C++ returns an arbitrary operand
                lambda: self.math_call(("greatest", "least"), INT, draw(st.integers(1, 3)), depth),
                lambda: f"math.greatest([{self.expr(INT, depth)}, {self.expr(INT, depth)}])",
                lambda: self.math_call(("abs", "sign", "bitNot"), INT, 1, depth),
                lambda: self.math_call(("bitAnd", "bitOr", "bitXor"), INT, 2, depth),
                lambda: f"math.bitShiftLeft({self.expr(INT, depth)}, {small()})",
                lambda: f"math.bitShiftRight({self.expr(INT, depth)}, {small()})",
            ],
            DOUBLE: [
                lambda: self.math_call(
                    ("ceil", "floor", "round", "trunc", "abs"), DOUBLE, 1, depth
                ),
            ],
            BOOL: [
                lambda: self.math_call(("isNaN", "isInf", "isFinite"), DOUBLE, 1, depth),
            ],
            LIST: [
                # a non-empty separator: `''.split('')` is [] in cel-go, [''] in C++
                lambda: f"{s()}.split({self.separator()})",
                lambda: f"{s()}.split({self.separator()}, {small()})",
            ],
            BYTES: [
                lambda: f"base64.decode(base64.encode({self.expr(BYTES, depth)}))",
                lambda: f"base64.decode({draw(st.sampled_from(_base64_samples))})",
            ],
        }
        return self.pick(options[kind])

    def separator(self) -> str:
        return string_literal(self.draw, self.draw(st.sampled_from((",", "a", ".", "é", "ab"))))

    def math_call(self, names: Sequence[str], kind: str, arity: int, depth: int) -> str:
        name = self.draw(st.sampled_from(names))
        args = ", ".join(self.expr(kind, depth) for _ in range(arity))
        return f"math.{name}({args})"

    # -- pieces of bool -----------------------------------------------------------------

    def logical(self, depth: int) -> str:
        op = self.draw(st.sampled_from(("&&", "||")))
        return f"({self.maybe_error(BOOL, depth)} {op} {self.maybe_error(BOOL, depth)})"

    def comparison(self, depth: int) -> str:
        draw = self.draw
        op = draw(st.sampled_from(("==", "!=", "<", "<=", ">", ">=")))
        if op in ("==", "!="):
            left = draw(st.sampled_from(KINDS))
            right = left if not self.chance(30) else draw(st.sampled_from(KINDS))
        else:
            left = draw(st.sampled_from(ORDERED))
            right = left
            if left in NUMERIC and self.chance(40):
                right = draw(st.sampled_from(NUMERIC))
        return f"({self.expr(left, depth)} {op} {self.expr(right, depth)})"

    def membership(self, depth: int) -> str:
        container = self.draw(st.sampled_from((LIST, MAP)))
        if container == LIST:
            element = self.expr(self.draw(st.sampled_from(KINDS[:5])), depth)
        else:
            # only the kinds a map key may have: for others C++ reports an error, cel-go false
            kind = self.draw(st.sampled_from((*MAP_KEY_KINDS, DOUBLE)))
            element = self.strict().expr(kind, depth)
        return f"({element} in {self.expr(container, depth)})"

    def has(self) -> str:
        draw = self.draw
        maps = [p for p in self.scope.paths if isinstance(p.value, dict)]
        if maps and self.chance(50):
            path = draw(st.sampled_from(maps))
            assert isinstance(path.value, dict)
            present = [k for k in path.value if is_identifier(k)]
            field_name = draw(st.sampled_from([*present, "absent"]))
            return f"has({self.render_path(path)}.{field_name})"
        others = [p for p in self.scope.paths if not isinstance(p.value, dict)]
        if others and self.chance(20):
            # has() on something that is not a map: an error on both sides
            return f"has({self.render_path(draw(st.sampled_from(others)))}.name)"
        field_name = draw(st.sampled_from(IDENT_KEYS[:3]))
        return f"has({self.map_literal(0)}.{field_name})"

    def string_test(self, depth: int) -> str:
        draw = self.draw
        fn = draw(st.sampled_from(("contains", "startsWith", "endsWith", "matches")))
        target = self.expr(STRING, depth)
        if fn == "matches":
            pattern = string_literal(draw, draw(st.sampled_from(SAFE_PATTERNS)))
            if draw(st.booleans()):
                return f"matches({target}, {pattern})"
            return f"{target}.matches({pattern})"
        return f"{target}.{fn}({self.expr(STRING, depth)})"

    # -- macros -----------------------------------------------------------------------

    def range_and_var_kind(self, depth: int, lists_only: bool) -> tuple[str, str | None]:
        """A collection to iterate over, and the kind of its iteration variable."""
        draw = self.draw
        ranges = list | dict if not lists_only else list
        lists = [p for p in self.scope.paths if isinstance(p.value, ranges)]
        if lists and self.chance(50):
            path = draw(st.sampled_from(lists))
            items = list(path.value) if isinstance(path.value, dict) else path.value
            assert isinstance(items, list)
            kinds = {kind_of(v) for v in items}
            return self.render_path(path), kinds.pop() if len(kinds) == 1 else None
        if lists_only or draw(st.booleans()):
            kind = draw(st.sampled_from(KINDS[:5]))
            items = [self.expr(kind, depth) for _ in range(draw(st.integers(0, 4)))]
            return "[" + ", ".join(items) + "]", kind
        key_kind = draw(st.sampled_from(MAP_KEY_KINDS))
        entries: dict[object, str] = {}
        for _ in range(draw(st.integers(0, 3))):
            key_value, key_text = self.map_key(key_kind)
            entries.setdefault(key_value, f"{key_text}: {self.literal(INT)}")
        return "{" + ", ".join(entries.values()) + "}", key_kind

    def macro(self, name: str, depth: int) -> str:
        if self.scope.comprehension_depth >= MAX_COMPREHENSION_NESTING:
            return self.literal(BOOL if name in ("all", "exists", "exists_one") else LIST)
        # The order in which a map is iterated is unspecified (C++ hashes, Go randomises):
        # a list built from a map may come in any order, so only lists feed map and filter.
        target, var_kind = self.range_and_var_kind(depth, name in ("map", "map3", "filter"))
        var = f"v{self.scope.comprehension_depth}"
        inner = self.with_scope(self.scope.bind(var, var_kind))
        if name in ("all", "exists", "exists_one", "filter"):
            return f"{target}.{name}({var}, {inner.maybe_error(BOOL, depth)})"
        result_kind = self.draw(st.sampled_from(KINDS[:5]))
        if name == "map3":
            pred = inner.maybe_error(BOOL, depth)
            return f"{target}.map({var}, {pred}, {inner.expr(result_kind, depth)})"
        return f"{target}.map({var}, {inner.maybe_error(result_kind, depth)})"


# Strings for the conversion functions, in the spellings both runtimes read alike.
_int_strings: Final = st.one_of(
    _int64s.map(str),
    st.sampled_from(
        (
            "-0",
            "007",
            "+1",
            "9223372036854775808",
            "-9223372036854775809",
            "1.5",
            "0x10",
            "",
            "abc",
            "١٢",
        )
    ),
)
_uint_strings: Final = st.one_of(
    _uint64s.map(str),
    st.sampled_from(("007", "18446744073709551616", "-1", "1.5", "", "abc", "١")),
)
_double_strings: Final = st.one_of(
    _finite_doubles.map(repr),
    st.sampled_from(
        ("1e3", ".5", "-0", "nan", "NaN", "inf", "-inf", "Infinity", "abc", "", "1e", "١.5")
    ),
)
_base64_samples: Final = ("'YWI='", "'YWI'", "''", "'!!'", "'YQ=='", "'YQ'")
_bool_strings: Final = st.sampled_from(
    ("true", "false", "True", "False", "TRUE", "FALSE", "1", "0", "yes", "", "tRuE")
)
_durations: Final = st.one_of(
    st.sampled_from(
        ("0", "1s", "-1s", "1.5s", "90m", "1h30m", "100ms", "250us", "-2h", "0.000001s", "1x", "")
    ),
    st.integers(-(10**12), 10**12).map(lambda us: f"{us}us"),
    st.integers(-(10**6), 10**6).map(lambda s: f"{s}s"),
)


@st.composite
def cel_cases(draw: st.DrawFn, max_depth: int = 4) -> Case:
    """An expression over a random activation, aimed at a random kind of result."""
    activation = draw(activations)
    scope = Scope(tuple(paths_of(activation)))
    gen = ExprGen(draw, scope)
    kind = draw(st.sampled_from(KINDS))
    depth = draw(st.integers(1, max_depth))
    return Case(gen.expr(kind, depth), activation)


# ---------------------------------------------------------------------------------------
# Fuzzing material: text that is mostly not CEL.

CEL_TOKENS: Final = (
    *"()[]{}.,:?!-+*/%<>",
    "==",
    "!=",
    "<=",
    ">=",
    "&&",
    "||",
    "in",
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "type",
    "dyn",
    "matches",
    "true",
    "false",
    "null",
    "x",
    "y",
    "obj",
    "as",
    "while",
    "0",
    "1",
    "1u",
    "0x1F",
    "1.5",
    "1e9",
    ".5",
    "9223372036854775808",
    "18446744073709551616u",
    "'a'",
    '"b"',
    "b'c'",
    "r'\\d'",
    "'''t'''",
    "'\\x41'",
    "'\\u00e9'",
    "'\\z'",
    "'",
    '"',
    "\\",
    "?.",
    ".?",
    "#",
    "$",
    "é",
    "//",
    "\n",
    " ",
)

token_soup: Final = st.lists(st.sampled_from(CEL_TOKENS), max_size=30).flatmap(
    lambda tokens: st.sampled_from(("", " ")).map(lambda sep: sep.join(tokens))
)


@st.composite
def nested(draw: st.DrawFn, max_depth: int = 300) -> str:
    """Deeply nested brackets, operators or calls, balanced or not."""
    depth = draw(st.integers(1, max_depth))
    opener, closer = draw(
        st.sampled_from(
            (
                ("(", ")"),
                ("[", "]"),
                ("{1: ", "}"),
                ("[[", "]]"),
                ("-", ""),
                ("!", ""),
                ("f(", ")"),
                ("x.map(v, ", ")"),
            )
        )
    )
    core = draw(st.sampled_from(("1", "x", "", "'a'", "[]")))
    closers = depth if draw(st.integers(0, 3)) else draw(st.integers(0, depth + 1))
    return opener * depth + core + closer * closers


@st.composite
def long_literals(draw: st.DrawFn) -> str:
    """Very long numbers, strings, identifiers and operator chains."""
    n = draw(st.integers(1, 5000))
    return draw(
        st.sampled_from(
            (
                "9" * n,
                "1" * n + "u",
                "0x" + "f" * n,
                "1." + "5" * n,
                "1e" + "9" * min(n, 50),
                "'" + "a" * n + "'",
                "'" + "\\u00e9" * (n // 4 + 1) + "'",
                "b'" + "\\xff" * (n // 4 + 1) + "'",
                "x" * n,
                " + ".join(["1"] * (n // 10 + 1)),
                " && ".join(["true"] * (n // 10 + 1)),
                ".".join(["a"] * (n // 5 + 1)),
                "[" + ",".join(["1"] * (n // 5 + 1)) + "]",
            )
        )
    )


arbitrary_values: Final = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),  # also outside int64: the engine must refuse them cleanly
        st.floats(),
        st.text(max_size=10),
        st.binary(max_size=10),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(
            st.one_of(st.text(max_size=5), st.integers(-3, 3), st.booleans()), children, max_size=4
        ),
    ),
    max_leaves=15,
)


@st.composite
def near_cel(draw: st.DrawFn) -> str:
    """A well-formed expression after one or two small edits: the inputs where parsers most
    often disagree are a token away from valid ones."""
    source = draw(cel_cases(max_depth=2)).source
    for _ in range(draw(st.integers(1, 2))):
        start = draw(st.integers(0, len(source)))
        end = draw(st.integers(start, min(len(source), start + 3)))
        edit = draw(st.sampled_from(("delete", "insert", "repeat")))
        if edit == "delete":
            source = source[:start] + source[end:]
        elif edit == "insert":
            source = source[:start] + draw(st.sampled_from(CEL_TOKENS)) + source[start:]
        else:
            source = source[:end] + source[start:end] + source[end:]
    return source
