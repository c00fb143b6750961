"""The fast path for ExtenderArgs: decode only what the policies read.

A full NodeList request is ~2.7 MB for 500 nodes, most of it images, addresses and
annotations no policy reads. This decoder takes the request as kube-scheduler sends it
(exact key names), keeps each node's original bytes (a feasible node goes back verbatim),
reads each node's name and resourceVersion, and decodes of a node only the fields the
policy set reads (`PolicySet.node_fields`), and only when it is read: a request whose Nodes
the node source holds in the versions sent decodes none (server/verbs.py).
Anything unusual (keys in another case, a shape error) returns None: the caller then
uses the general decoder of wire.py, which accepts every form Go accepts and explains
every error.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, Final, overload

import msgspec

from policyext.server.wire import ExtenderArgs

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


def decode_fast(body: bytes, fields: frozenset[tuple[str, ...]] | None) -> ExtenderArgs | None:
    """The request, or None when it needs the general decoder. A node named twice is left
    to the verbs to find (as `wire.parse_extender_args(..., check_repeats=False)` does)."""
    if len(body) < LARGE_BODY:
        return None
    enabled = gc.isenabled()
    gc.disable()  # millions of short-lived objects: collecting during the decode is waste
    try:
        return _decode(body, fields)
    # DecodeError: not JSON, or (its subclass ValidationError) not of the shape expected.
    # RecursionError: JSON nested deeper than msgspec recurses; orjson's depth limit then
    # turns it into a 400
    except (msgspec.DecodeError, RecursionError):
        return None
    finally:
        if enabled:
            gc.enable()


def _decode(body: bytes, fields: frozenset[tuple[str, ...]] | None) -> ExtenderArgs | None:
    args = _ARGS.decode(body)
    if args.Nodes is None:
        return ExtenderArgs(args.Pod, None, args.NodeNames)
    raws: list[bytes] = []
    names: list[str] = []
    versions: list[str] = []
    for raw in args.Nodes.items:
        data = bytes(raw)
        meta = _IDENTITY.decode(data).metadata
        name = meta.name
        if not isinstance(name, str) or not name:
            return None
        version = meta.resourceVersion
        raws.append(data)
        names.append(name)
        versions.append(version if isinstance(version, str) else "")
    nodes = LazyNodes(raws, _node_decoder(fields))
    return ExtenderArgs(args.Pod, nodes, args.NodeNames, raws, names, versions)


class _Metadata(msgspec.Struct, frozen=True):
    name: Any = None
    resourceVersion: Any = ""  # noqa: N815 - the wire name


class _Identity(msgspec.Struct):
    metadata: _Metadata


_IDENTITY: Final = msgspec.json.Decoder(_Identity)


class LazyNodes(Sequence[dict[str, Any]]):
    """The Nodes of a large NodeList request, each decoded (the fields the policies read)
    when first read: a request whose Nodes the node source holds in the versions sent is
    answered from the source's (server/verbs.py) and decodes none of them."""

    def __init__(self, raws: list[bytes], decoder: Any) -> None:
        self._raws = raws
        self._decoder = decoder
        self._decoded: list[dict[str, Any] | None] = [None] * len(raws)

    def __len__(self) -> int:
        return len(self._raws)

    def decoded(self) -> int:
        """How many of the Nodes have been decoded so far."""
        return len(self._decoded) - self._decoded.count(None)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        node = self._decoded[i]
        if node is None:
            node = self._decoded[i] = self._decode(self._raws[i])
        return node

    def _decode(self, data: bytes) -> dict[str, Any]:
        enabled = gc.isenabled()
        gc.disable()
        try:
            if self._decoder is not None:
                try:
                    return _to_dict(self._decoder.decode(data))
                except msgspec.ValidationError:
                    pass  # a field of another shape than a Node's: the node as it is
            node: dict[str, Any] = _WHOLE_NODE.decode(data)
            return node
        finally:
            if enabled:
                gc.enable()
