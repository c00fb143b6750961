"""The types of Kubernetes objects: `pod` and `node` as Kubernetes types them for CEL.

schemas/kubernetes.json is generated from the OpenAPI description of the pinned Kubernetes
release (tests/cel/kubernetes_schema.py: `make cel-schema` refreshes it). Each object type
lists its fields with a type expression: `string`, `int`, `double`, `bool`, `bytes`,
`timestamp`, `dyn`, `[T]` (a list of T), `{T}` (a map from string to T), or the name of
another object type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, Final

from policyext.cel import celtypes as t
from policyext.cel.celtypes import Type

_PRIMITIVES: Final = {
    "string": t.STRING,
    "int": t.INT,
    "double": t.DOUBLE,
    "bool": t.BOOL,
    "bytes": t.BYTES,
    "timestamp": t.TIMESTAMP,
    "dyn": t.EXACT_DYN,
}


@cache
def _schema() -> dict[str, Any]:
    text = resources.files("policyext.cel.schemas").joinpath("kubernetes.json").read_text()
    return json.loads(text)  # type: ignore[no-any-return]


@cache
def object_named(name: str) -> Type:
    """The object type of a definition (`PodSpec`), its fields resolved on first use."""
    return t.object_type(name, lambda: _fields(name))


@cache
def _fields(name: str) -> Mapping[str, Type]:
    return {field: parse_type(expr) for field, expr in _schema()["types"][name].items()}


def parse_type(expr: str) -> Type:
    if expr.startswith("["):
        return t.list_of(parse_type(expr[1:-1]))
    if expr.startswith("{"):
        return t.map_of(t.STRING, parse_type(expr[1:-1]))
    return _PRIMITIVES.get(expr) or object_named(expr)


def root(variable: str) -> Type:
    """The type of `pod` or `node`."""
    return object_named(_schema()["roots"][variable])


def source() -> str:
    """Where the types come from: the module, release and file."""
    return str(_schema()["source"])


def optional_fields(name: str) -> frozenset[str] | None:
    """The fields of a Kubernetes object type that its schema does not list as required
    (None for a type that is not one of Kubernetes': policyext's own, `variables`)."""
    schema = _schema()
    fields = schema["types"].get(name)
    if fields is None:
        return None
    return frozenset(fields) - frozenset(schema.get("required", {}).get(name, ()))
