"""The static types of the checker: `int`, `list(string)`, `map(string, dyn)`, `Pod`...

A `Type` is a kind (`int`, `list`, `map`, `optional_type`, `object`...) with its
parameters (a list's element, a map's key and value, an optional's value). Object types
(`Pod`, `ObjectMeta`...) carry their fields, from the Kubernetes schemas (see `k8s`).
`dyn` is the type of what is not known statically: it is accepted wherever a type is
expected, and its checks wait for the run time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final


@dataclass(frozen=True, slots=True)
class Type:
    kind: str
    params: tuple[Type, ...] = ()
    # object types: the name (`ObjectMeta`) and the fields, resolved on first use so that
    # a schema's types can refer to each other
    name: str = ""
    resolve_fields: Callable[[], Mapping[str, Type]] | None = field(
        default=None, compare=False, hash=False, repr=False
    )

    def __str__(self) -> str:
        if self.kind == "object":
            return self.name
        if self.params:
            return f"{self.kind}({', '.join(str(p) for p in self.params)})"
        return self.kind

    @property
    def fields(self) -> Mapping[str, Type]:
        return self.resolve_fields() if self.resolve_fields is not None else {}

    @property
    def element(self) -> Type:
        """A list's element, a map's key, an optional's value (dyn when unknown)."""
        return self.params[0] if self.params else DYN

    @property
    def value(self) -> Type:
        """A map's value (dyn when unknown)."""
        return self.params[1] if len(self.params) > 1 else DYN


DYN: Final = Type("dyn")
# `dyn` that Kubernetes' checker also types dyn (a `dyn()` call, an int-or-string field), as
# opposed to DYN, which also stands for what this checker does not type: both are dyn to every
# check, but only this one is a different element type from `int` in a list literal
EXACT_DYN: Final = Type("dyn", name="dyn")
BOOL: Final = Type("bool")
INT: Final = Type("int")
UINT: Final = Type("uint")
DOUBLE: Final = Type("double")
STRING: Final = Type("string")
BYTES: Final = Type("bytes")
NULL: Final = Type("null_type")
TYPE: Final = Type("type")
DURATION: Final = Type("google.protobuf.Duration")
TIMESTAMP: Final = Type("google.protobuf.Timestamp")
QUANTITY: Final = Type("kubernetes.Quantity")
LIST: Final = Type("list", (DYN,))
MAP: Final = Type("map", (DYN, DYN))
OPTIONAL: Final = Type("optional_type", (DYN,))


def list_of(element: Type) -> Type:
    return Type("list", (element,))


def map_of(key: Type, value: Type) -> Type:
    return Type("map", (key, value))


def optional_of(value: Type) -> Type:
    return Type("optional_type", (value,))


def object_type(name: str, resolve_fields: Callable[[], Mapping[str, Type]]) -> Type:
    return Type("object", name=name, resolve_fields=resolve_fields)


_BY_NAME: Final = {
    t.kind: t
    for t in (DYN, BOOL, INT, UINT, DOUBLE, STRING, BYTES, NULL, TYPE, DURATION, TIMESTAMP)
}
_BY_NAME.update({"list": LIST, "map": MAP, "optional_type": OPTIONAL})


def named(name: str) -> Type:
    """The type of a name as functions declare results: `int`, `list`, `net.IP`."""
    return _BY_NAME.get(name) or Type(name)


def type_type(of: Type) -> Type:
    """The type of a type: `int` as a value is of type `type(int)`."""
    return Type("type", (of,))


def is_dyn(t: Type) -> bool:
    return t.kind == "dyn"


def join(a: Type, b: Type) -> Type:
    """The common type of two branches or elements: the type itself when they agree."""
    if a == b:
        return a
    if a.kind == b.kind and a.kind in ("list", "map", "optional_type"):
        return Type(a.kind, tuple(join(x, y) for x, y in zip(a.params, b.params, strict=True)))
    return DYN


def assignable(expected: Type, actual: Type) -> bool:
    """Whether a value of `actual` may stand where `expected` is wanted (dyn fits anything)."""
    if expected.kind == "dyn" or actual.kind == "dyn":
        return True
    if expected.kind != actual.kind:
        return False
    if expected.kind == "object":
        return expected.name == actual.name
    return all(assignable(e, a) for e, a in zip(expected.params, actual.params, strict=False))


def suggestion(name: str, candidates: list[str]) -> str | None:
    """The candidate closest to a misspelt name, if one is close enough to be meant."""
    best: tuple[int, str] | None = None
    for candidate in candidates:
        d = _distance(name.lower(), candidate.lower())
        if d <= max(1, min(len(name), len(candidate)) // 3) and (best is None or d < best[0]):
            best = (d, candidate)
    return best[1] if best is not None else None


def _distance(a: str, b: str) -> int:
    """Edit distance with transpositions (`lables` is one step from `labels`)."""
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            best = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                best = min(best, rows[-2][j - 2] + 1)
            row.append(best)
        rows.append(row)
    return rows[-1][-1]
