"""The fast path for ExtenderArgs: decode only what the policies read.

A full NodeList request is ~2.7 MB for 500 nodes, most of it images, addresses and
annotations no policy reads. This decoder takes the request as kube-scheduler sends it
(exact key names), keeps each node's original bytes (a feasible node goes back verbatim),
and decodes of each node only the fields the policy set reads (`PolicySet.node_fields`).
Anything unusual (keys in another case, a shape error) returns None: the caller then
uses the general decoder of wire.py, which accepts every form Go accepts and explains
every error.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Final

import msgspec

from policyext.server.wire import ExtenderArgs, unique

# below this size decoding everything is cheap, and not worth a second decoder
LARGE_BODY: Final = 256 * 1024


class _NodeList(msgspec.Struct, forbid_unknown_fields=True):
    items: list[msgspec.Raw] = []
    metadata: Any = None
    apiVersion: Any = None  # noqa: N815 - the wire name
    kind: Any = None


class _Args(msgspec.Struct, forbid_unknown_fields=True):
    Pod: dict[str, Any]
    Nodes: _NodeList | None = None
    NodeNames: list[str] | None = None


_ARGS: Final = msgspec.json.Decoder(_Args)
_WHOLE_NODE: Final = msgspec.json.Decoder(dict[str, Any])


@lru_cache(maxsize=16)
def _node_decoder(fields: frozenset[tuple[str, ...]] | None) -> Any:
    """A decoder of Node that keeps only `fields` ((field,) or (field, subfield))."""
    if fields is None:
        return None
    top: dict[str, set[str] | None] = {}
    for path in fields:
        if len(path) == 1:
            top[path[0]] = None  # the whole field
        elif top.get(path[0], set()) is not None:
            top.setdefault(path[0], set()).add(path[1])  # type: ignore[union-attr]
    struct_fields: list[tuple[str, Any, Any]] = []
    rename: dict[str, str] = {}
    for i, (name, subfields) in enumerate(sorted(top.items())):
        python_name = f"f{i}"
        rename[python_name] = name
        if subfields is None:
            kind: Any = Any
        else:
            kind = _struct(f"Node_{i}", subfields)
        struct_fields.append((python_name, kind, msgspec.UNSET))
    node_type = msgspec.defstruct("PartialNode", struct_fields, rename=rename)
    return msgspec.json.Decoder(node_type)


def _struct(name: str, subfields: Iterable[str]) -> Any:
    fields = []
    rename = {}
    for i, sub in enumerate(sorted(subfields)):
        fields.append((f"f{i}", Any, msgspec.UNSET))
        rename[f"f{i}"] = sub
    return msgspec.defstruct(name, fields, rename=rename)


def _to_dict(struct: msgspec.Struct) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for python_name in struct.__struct_fields__:
        value = getattr(struct, python_name)
        if value is msgspec.UNSET:
            continue
        if isinstance(value, msgspec.Struct):
            value = _to_dict(value)
        out[struct.__struct_encode_fields__[struct.__struct_fields__.index(python_name)]] = value
    return out


def decode_fast(
    body: bytes, fields: frozenset[tuple[str, ...]] | None, *, check_repeats: bool = True
) -> ExtenderArgs | None:
    """The request, or None when it needs the general decoder. `check_repeats`: as for
    wire.parse_extender_args."""
    if len(body) < LARGE_BODY:
        return None
    enabled = gc.isenabled()
    gc.disable()  # millions of short-lived objects: collecting during the decode is waste
    try:
        return _decode(body, fields, check_repeats)
    # RecursionError: JSON nested deeper than msgspec recurses; orjson's depth limit then
    # turns it into a 400
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError, TypeError, RecursionError):
        return None
    finally:
        if enabled:
            gc.enable()


def _decode(
    body: bytes, fields: frozenset[tuple[str, ...]] | None, check_repeats: bool
) -> ExtenderArgs | None:
    args = _ARGS.decode(body)
    if args.Nodes is None:
        if check_repeats and args.NodeNames is not None and not unique(args.NodeNames):
            return None  # the general decoder says which name
        return ExtenderArgs(args.Pod, None, args.NodeNames)
    decoder = _node_decoder(fields)
    nodes: list[dict[str, Any]] = []
    raws: list[bytes] = []
    for raw in args.Nodes.items:
        data = bytes(raw)
        node = _WHOLE_NODE.decode(data) if decoder is None else _to_dict(decoder.decode(data))
        name = node["metadata"]["name"]
        if not isinstance(name, str) or not name:
            return None
        nodes.append(node)
        raws.append(data)
    return ExtenderArgs(args.Pod, nodes, args.NodeNames, raws)
