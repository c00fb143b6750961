"""Typed overloads, resolved as cel-go's checker resolves them.

Kubernetes' checker gives each operator and each generic function its overloads with type
parameters (`_+_` is `(list(A), list(A)) -> list(A)` among others, `@in` is
`(A, list(A)) -> bool`), and accepts a call only if one overload takes the arguments'
types, binding each parameter once: `1 in [1.0]` binds A to int and then finds a
list(double), so it is refused when written. This module holds those overloads and the
resolution (the assignability rules of cel-go's checker/types.go, written anew), so that the
checker refuses what Kubernetes refuses and types the result as Kubernetes does.

`dyn` fits anything; the checker's `dyn` also stands for what it does not type (a result
this module does not declare), so such a call is never refused here for that argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Final

from policyext.cel import celtypes as t
from policyext.cel.celtypes import DYN, Type

PARAM: Final = "type_param"
# the kinds `null` may stand for (cel-go's legacy nullability: messages, opaque types such as
# optionals and the library types, durations and timestamps)
NULLABLE: Final = frozenset(
    (
        "object",
        "optional_type",
        "google.protobuf.Duration",
        "google.protobuf.Timestamp",
        "kubernetes.Quantity",
        "kubernetes.Semver",
        "kubernetes.URL",
        "kubernetes.NamedFormat",
        "net.IP",
        "net.CIDR",
        "null_type",
    )
)
# the kinds compared by their parameters (the rest by kind, objects by name)
_PARAMETERISED: Final = frozenset(("list", "map", "optional_type"))


@dataclass(frozen=True, slots=True)
class Signature:
    params: tuple[Type, ...]
    result: Type


def _parse(text: str) -> Type:
    """A type expression: `int`, `A` (a type parameter), `list(A)`, `map(string, B)`."""
    text = text.strip()
    if len(text) == 1 and text.isupper():
        return Type(PARAM, name=text)
    if "(" not in text:
        return t.named(text) if text != "dyn" else DYN
    kind, _, inner = text[:-1].partition("(")
    return Type(kind, tuple(_parse(p) for p in _split(inner)))


def _split(text: str) -> list[str]:
    """Comma-separated type expressions, commas inside parentheses kept."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, c in enumerate(text):
        depth += c == "("
        depth -= c == ")"
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


@cache
def signature(text: str) -> Signature:
    """`int, int -> int`."""
    args, _, result = text.partition("->")
    return Signature(tuple(_parse(a) for a in _split(args)), _parse(result))


_NUMBERS: Final = ("int", "uint", "double")
_ORDERED: Final = (
    "bool",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "google.protobuf.Timestamp",
    "google.protobuf.Duration",
)
_TS: Final = "google.protobuf.Timestamp"
_DUR: Final = "google.protobuf.Duration"


def _ordering() -> list[str]:
    # Kubernetes compares numbers across int, uint and double (cross-type comparisons)
    same = [f"{k}, {k} -> bool" for k in _ORDERED]
    cross = [f"{a}, {b} -> bool" for a in _NUMBERS for b in _NUMBERS if a != b]
    return same + cross


_SUMMABLE: Final = ("int", "uint", "double", _DUR)
_COMPARABLE: Final = ("bool", "int", "uint", "double", "string", "bytes", _TS, _DUR)

# by function and number of arguments (a member's target counted first)
OVERLOADS: Final[Mapping[tuple[str, int], tuple[str, ...]]] = {
    ("_==_", 2): ("A, A -> bool",),
    ("_!=_", 2): ("A, A -> bool",),
    **{(op, 2): tuple(_ordering()) for op in ("_<_", "_<=_", "_>_", "_>=_")},
    ("_+_", 2): (
        "int, int -> int",
        "uint, uint -> uint",
        "double, double -> double",
        "string, string -> string",
        "bytes, bytes -> bytes",
        "list(A), list(A) -> list(A)",
        f"{_TS}, {_DUR} -> {_TS}",
        f"{_DUR}, {_TS} -> {_TS}",
        f"{_DUR}, {_DUR} -> {_DUR}",
    ),
    ("_-_", 2): (
        "int, int -> int",
        "uint, uint -> uint",
        "double, double -> double",
        f"{_TS}, {_TS} -> {_DUR}",
        f"{_TS}, {_DUR} -> {_TS}",
        f"{_DUR}, {_DUR} -> {_DUR}",
    ),
    ("_*_", 2): ("int, int -> int", "uint, uint -> uint", "double, double -> double"),
    ("_/_", 2): ("int, int -> int", "uint, uint -> uint", "double, double -> double"),
    ("_%_", 2): ("int, int -> int", "uint, uint -> uint"),
    ("-_", 1): ("int -> int", "double -> double"),
    ("!_", 1): ("bool -> bool",),
    ("@in", 2): ("A, list(A) -> bool", "A, map(A, B) -> bool"),
    ("_?_:_", 3): ("bool, A, A -> A",),
    ("_[_]", 2): ("list(A), int -> A", "map(A, B), A -> B"),
    ("_[?_]", 2): (
        "list(A), int -> optional_type(A)",
        "map(A, B), A -> optional_type(B)",
        "optional_type(list(A)), int -> optional_type(A)",
        "optional_type(map(A, B)), A -> optional_type(B)",
    ),
    # the optionals
    ("optional.of", 1): ("A -> optional_type(A)",),
    ("optional.ofNonZeroValue", 1): ("A -> optional_type(A)",),
    ("value", 1): ("optional_type(A) -> A",),
    ("hasValue", 1): ("optional_type(A) -> bool",),
    ("orValue", 2): ("optional_type(A), A -> A",),
    ("or", 2): ("optional_type(A), optional_type(A) -> optional_type(A)",),
    # Kubernetes' lists library and cel-go's lists extension (version 1 in Kubernetes)
    ("isSorted", 1): tuple(f"list({k}) -> bool" for k in _COMPARABLE),
    ("sum", 1): tuple(f"list({k}) -> {k}" for k in _SUMMABLE),
    ("min", 1): tuple(f"list({k}) -> {k}" for k in _COMPARABLE),
    ("max", 1): tuple(f"list({k}) -> {k}" for k in _COMPARABLE),
    ("sort", 1): tuple(f"list({k}) -> list({k})" for k in _COMPARABLE),
    ("indexOf", 2): ("list(A), A -> int", "string, string -> int"),
    ("lastIndexOf", 2): ("list(A), A -> int", "string, string -> int"),
    ("slice", 3): ("list(A), int, int -> list(A)",),
    ("flatten", 1): ("list(list(A)) -> list(A)",),
    ("flatten", 2): ("list(dyn), int -> list(dyn)",),
    ("reverse", 1): ("list(A) -> list(A)",),
    ("distinct", 1): ("list(A) -> list(A)",),
    ("first", 1): ("list(A) -> optional_type(A)",),
    ("last", 1): ("list(A) -> optional_type(A)",),
    ("lists.range", 1): ("int -> list(int)",),
    ("join", 1): ("list(string) -> string",),
    ("join", 2): ("list(string), string -> string",),
    ("split", 2): ("string, string -> list(string)",),
    ("split", 3): ("string, string, int -> list(string)",),
    ("type", 1): ("A -> type(A)",),
    # the sets library
    ("sets.contains", 2): ("list(A), list(A) -> bool",),
    ("sets.equivalent", 2): ("list(A), list(A) -> bool",),
    ("sets.intersects", 2): ("list(A), list(A) -> bool",),
    # optionals: a list of them unwrapped (the values present)
    ("optional.unwrap", 1): ("list(optional_type(A)) -> list(A)",),
    ("unwrapOpt", 1): ("list(optional_type(A)) -> list(A)",),
    # Kubernetes' format library
    ("format.named", 1): ("string -> optional_type(kubernetes.NamedFormat)",),
    ("validate", 2): ("kubernetes.NamedFormat, string -> optional_type(list(string))",),
}


def overloads(function: str, arity: int) -> tuple[Signature, ...] | None:
    """The typed overloads of a function (None: not declared here, typed elsewhere)."""
    texts = OVERLOADS.get((function, arity))
    return None if texts is None else tuple(signature(s) for s in texts)


def resolve(candidates: tuple[Signature, ...], args: list[Type]) -> Type | None:
    """The result type of the call, or None when no overload takes these arguments.

    Several matching overloads (a `dyn` argument) give their common result, or dyn."""
    results: list[Type] = []
    for candidate in candidates:
        binding: dict[str, Type] = {}
        if all(_assignable(binding, a, p) for a, p in zip(args, candidate.params, strict=True)):
            results.append(_substitute(binding, candidate.result))
    if not results:
        return None
    first = results[0]
    return first if all(r == first for r in results[1:]) else DYN


def _assignable(binding: dict[str, Type], actual: Type, expected: Type) -> bool:
    """Whether an argument of type `actual` may stand for a parameter of type `expected`,
    type parameters bound on the way (cel-go's internalIsAssignable)."""
    if expected.kind == PARAM:
        bound = binding.get(expected.name)
        if bound is None:
            binding[expected.name] = actual
            return True
        if actual == bound:
            return True
        if _assignable(binding, actual, bound):
            binding[expected.name] = _most_general(actual, bound)
            return True
        return False
    if actual.kind == "dyn" or expected.kind == "dyn":
        return True
    if actual.kind == "null_type":
        return expected.kind in NULLABLE
    if expected.kind == "null_type":
        return actual.kind in NULLABLE
    if actual.kind != expected.kind:
        return False
    if actual.kind == "object":
        return actual.name == expected.name
    if actual.kind in _PARAMETERISED:
        return all(
            _assignable(binding, a, e)
            for a, e in zip(_params(actual), _params(expected), strict=True)
        )
    return True


def _params(x: Type) -> tuple[Type, ...]:
    """A list's, map's or optional's parameters, dyn where the checker left them out."""
    if x.kind == "map":
        return (x.element, x.value)
    return (x.element,)


def _most_general(a: Type, b: Type) -> Type:
    """The less specific of two assignable types (dyn over int, list(dyn) over list(int)).

    Inside a list, map or optional, a part this checker does not type (DYN: the element of
    `[]`, the key and value of `{}`) gives way to the other's known type, as cel-go binds
    a fresh type variable: so `node.spec.?taints.orValue([])` stays a list of Taints. A
    real dyn (`dyn(x)`) and an untyped value as a whole keep the binding general."""
    if a.kind == b.kind and a.kind in _PARAMETERISED and a.params and b.params:
        return Type(
            a.kind, tuple(_known(x, y) for x, y in zip(_params(a), _params(b), strict=True))
        )
    return a if _less_specific(a, b) else b


def _known(a: Type, b: Type) -> Type:
    """A parameter of two assignable types: the known one where the other is not typed."""
    if a == DYN:
        return b
    if b == DYN:
        return a
    return _most_general(a, b)


def _less_specific(a: Type, b: Type) -> bool:
    if a.kind == "dyn":
        return True
    if b.kind == "dyn" or a.kind != b.kind:
        return False
    if a.kind in _PARAMETERISED:
        return all(_less_specific(x, y) for x, y in zip(_params(a), _params(b), strict=True))
    return a == b


def _substitute(binding: Mapping[str, Type], x: Type) -> Type:
    if x.kind == PARAM:
        return binding.get(x.name, DYN)
    if x.params:
        return Type(x.kind, tuple(_substitute(binding, p) for p in x.params))
    return x
