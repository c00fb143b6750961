"""The extender protocol's messages, as kube-scheduler really sends and reads them.

The extender/v1 Go types have no JSON tags: the keys are Go field names (`Pod`, `NodeNames`,
`FailedNodes`...), and Go's decoder matches keys case-insensitively, so requests are read
the same way (the last of two keys differing only in case wins, as in Go). Replies use the
PascalCase names. Scores are integers. See docs/extender-api.md and schemas/openapi.yaml.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import orjson

Json = dict[str, Any]
# rejected nodes in order, each message as an index into a few distinct messages
Refusals = tuple[list[str], npt.NDArray[np.intp], list[str]]


class WireError(ValueError):
    """A request that does not have the protocol's shape: answered with 400."""


def decode(body: bytes) -> Json:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise WireError(f"the body is not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise WireError("the body must be a JSON object")
    return value


def _fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Keys folded to lower case, as Go's encoding/json matches struct fields."""
    return {str(k).lower(): v for k, v in obj.items()}


def _object(value: object, where: str, *, optional: bool = False) -> Json | None:
    if value is None and optional:
        return None
    if not isinstance(value, dict):
        raise WireError(f"{where}: expected an object")
    return value


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise WireError(f"{where}: expected a string")
    return value


def _name(obj: Json, where: str) -> str:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise WireError(f"{where}.metadata: expected an object")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise WireError(f"{where}.metadata.name: expected a non-empty string")
    return name


@dataclass(frozen=True, slots=True)
class ExtenderArgs:
    """filter and prioritize: the pod and the candidate nodes, as full objects (Nodes) or
    as names (NodeNames, when the extender is nodeCacheCapable)."""

    pod: Json
    nodes: Sequence[Json] | None
    node_names: list[str] | None
    # the nodes' original bytes, when the fast decoder kept them: feasible nodes are
    # answered with exactly what the scheduler sent
    raw_nodes: list[bytes] | None = None
    # the nodes' names and resourceVersions ("" for none), when the fast decoder read them
    # apart (its Nodes are then decoded only when read)
    item_names: list[str] | None = None
    item_versions: list[str] | None = None

    @property
    def names(self) -> list[str]:
        if self.node_names is not None:
            return self.node_names
        if self.item_names is not None:
            return self.item_names
        return [_name(n, "Nodes.items[]") for n in self.nodes or ()]


def parse_extender_args(
    body: Json, *, nodes_required: bool = True, check_repeats: bool = True
) -> ExtenderArgs:
    """The arguments of filter, prioritize and /explain. Without `nodes_required` (/explain)
    a request may name no nodes at all: `nodes` and `node_names` are then both None.
    Without `check_repeats` the caller finds a name given twice itself (`repeated`): the
    verbs do, from where the node source keeps each name, without a set of 5,000 names."""
    fields = _fields(body)
    pod = _object(fields.get("pod"), "Pod")
    assert pod is not None
    nodes: list[Json] | None = None
    raw_nodes = _object(fields.get("nodes"), "Nodes", optional=True)
    if raw_nodes is not None:
        items = _fields(raw_nodes).get("items")
        if items is None:
            items = []
        if not isinstance(items, list):
            raise WireError("Nodes.items: expected a list")
        nodes = []
        for i, item in enumerate(items):
            node = _object(item, f"Nodes.items[{i}]")
            assert node is not None
            _name(node, f"Nodes.items[{i}]")
            nodes.append(node)
    names: list[str] | None = None
    raw_names = fields.get("nodenames")
    if raw_names is not None:
        if not isinstance(raw_names, list):
            raise WireError("NodeNames: expected a list of strings")
        if all_strings(raw_names):
            names = raw_names
        else:
            names = [_string(n, f"NodeNames[{i}]") for i, n in enumerate(raw_names)]
        if check_repeats and not unique(names):
            raise repeated(names)
    if nodes is None and names is None and nodes_required:
        raise WireError("one of Nodes or NodeNames is required")
    return ExtenderArgs(pod, nodes, names)


def names_args(rest: Json, names: list[str]) -> ExtenderArgs:
    """`parse_extender_args` of a body taken apart (server/names.py): its other top-level
    fields, and its NodeNames, already found to be strings under no other spelling of the
    key. kube-scheduler's own `{"Pod":...,"Nodes":null,"NodeNames":[...]}` is read as it
    is; anything else goes through the general parser."""
    pod = rest.get("Pod")
    if type(pod) is dict and (len(rest) == 1 or (len(rest) == 2 and rest.get("Nodes", 0) is None)):
        return ExtenderArgs(pod, None, names)
    rest["NodeNames"] = names
    return parse_extender_args(rest, check_repeats=False)


def all_strings(values: list[Any]) -> bool:
    """Every value a str, checked in C: joining them fails on anything else."""
    try:
        "".join(values)
    except TypeError:
        return False
    return True


def unique(names: list[str]) -> bool:
    """No name twice. kube-scheduler never repeats a node; a request that does would
    evaluate every copy with the node cache off (100,000 copies of one name take seconds)."""
    return len(set(names)) == len(names)


def repeated(names: list[str]) -> WireError:
    """The error of NodeNames that name a node more than once."""
    return WireError(f"NodeNames: {_first_repeated(names)!r} appears more than once")


def _first_repeated(names: list[str]) -> str:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return ""


@dataclass(frozen=True, slots=True)
class BindingArgs:
    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


def parse_binding_args(body: Json) -> BindingArgs:
    fields = _fields(body)
    values = []
    for key, label in (
        ("podname", "PodName"),
        ("podnamespace", "PodNamespace"),
        ("poduid", "PodUID"),
        ("node", "Node"),
    ):
        value = _string(fields.get(key), label)
        if not value and key != "poduid":
            raise WireError(f"{label}: must not be empty")
        values.append(value)
    return BindingArgs(*values)


@dataclass(frozen=True, slots=True)
class Victims:
    pods: list[Json]  # full pods, or {"UID": ...} stubs (meta victims)
    uids: list[str]
    num_pdb_violations: int


@dataclass(frozen=True, slots=True)
class PreemptionArgs:
    pod: Json
    victims: dict[str, Victims]  # by node name
    meta: bool  # the scheduler sent only UIDs (nodeCacheCapable)


def _victims(raw: object, where: str, meta: bool) -> Victims:
    obj = _object(raw, where)
    assert obj is not None
    fields = _fields(obj)
    pods_raw = fields.get("pods")
    if pods_raw is None:
        pods_raw = []
    if not isinstance(pods_raw, list):
        raise WireError(f"{where}.Pods: expected a list")
    pods: list[Json] = []
    uids: list[str] = []
    for i, p in enumerate(pods_raw):
        pod = _object(p, f"{where}.Pods[{i}]")
        assert pod is not None
        if meta:
            uids.append(_string(_fields(pod).get("uid"), f"{where}.Pods[{i}].UID"))
        else:
            meta_obj = pod.get("metadata")
            uid = meta_obj.get("uid", "") if isinstance(meta_obj, dict) else ""
            uids.append(str(uid))
        pods.append(pod)
    violations = fields.get("numpdbviolations", 0)
    if not isinstance(violations, int) or isinstance(violations, bool):
        raise WireError(f"{where}.NumPDBViolations: expected an integer")
    return Victims(pods, uids, violations)


def parse_preemption_args(body: Json) -> PreemptionArgs:
    fields = _fields(body)
    pod = _object(fields.get("pod"), "Pod")
    assert pod is not None
    full = _object(fields.get("nodenametovictims"), "NodeNameToVictims", optional=True)
    meta = _object(fields.get("nodenametometavictims"), "NodeNameToMetaVictims", optional=True)
    if meta:
        victims = {n: _victims(v, f"NodeNameToMetaVictims.{n}", True) for n, v in meta.items()}
        return PreemptionArgs(pod, victims, True)
    victims = {n: _victims(v, f"NodeNameToVictims.{n}", False) for n, v in (full or {}).items()}
    return PreemptionArgs(pod, victims, False)


# -- replies --------------------------------------------------------------------------------
def filter_result(
    feasible_nodes: list[Json] | list[bytes] | None,
    feasible_names: list[str] | None,
    failed: Mapping[str, str],
    unresolvable: Mapping[str, str],
    error: str = "",
) -> bytes:
    """ExtenderFilterResult. In NodeNames mode `Nodes` is null; in Nodes mode `NodeNames`.
    Nodes given as bytes are copied into the reply as they are."""
    if feasible_nodes and isinstance(feasible_nodes[0], bytes):
        rest = orjson.dumps(
            {
                "NodeNames": feasible_names,
                "FailedNodes": dict(failed),
                "FailedAndUnresolvableNodes": dict(unresolvable),
                "Error": error,
            }
        )
        # one allocation for the megabytes of Nodes: the opening and the rest joined onto
        # the first and last Node (each large copy costs its pages again, a page at a time)
        items = list(feasible_nodes)
        items[0] = b'{"Nodes":{"metadata":{},"items":[' + items[0]
        items[-1] = items[-1] + b"]}," + rest[1:]
        return b",".join(items)
    nodes: Json | None = None
    if feasible_nodes is not None:
        nodes = {"metadata": {}, "items": feasible_nodes}
    return orjson.dumps(
        {
            "Nodes": nodes,
            "NodeNames": feasible_names,
            "FailedNodes": dict(failed),
            "FailedAndUnresolvableNodes": dict(unresolvable),
            "Error": error,
        }
    )


def names_filter_result(
    feasible: list[str], failed: Refusals, unresolvable: Refusals, encoded: bytes | None = None
) -> bytes:
    """`filter_result(None, feasible, failed, unresolvable)` with the failed nodes given as
    `Refusals` of distinct names: the same bytes, each message encoded once. `encoded`:
    `orjson.dumps(feasible)`, when the caller has it."""
    return _names_filter_bytes(
        orjson.dumps(feasible) if encoded is None else encoded,
        _messages_by_name(*failed),
        _messages_by_name(*unresolvable),
    )


def names_filter_dicts(
    encoded: bytes, failed: dict[str, str], unresolvable: dict[str, str]
) -> bytes:
    """`names_filter_result` of the feasible names as encoded, and the refused nodes'
    messages by name: the same bytes."""
    return _names_filter_bytes(encoded, orjson.dumps(failed), orjson.dumps(unresolvable))


def _names_filter_bytes(feasible: bytes, failed: bytes, unresolvable: bytes) -> bytes:
    """A NodeNames ExtenderFilterResult from its three values, each already encoded."""
    return b"".join(
        (
            b'{"Nodes":null,"NodeNames":',
            feasible,
            b',"FailedNodes":',
            failed,
            b',"FailedAndUnresolvableNodes":',
            unresolvable,
            b',"Error":""}',
        )
    )


def _messages_by_name(
    names: list[str], message: npt.NDArray[np.intp], messages: list[str]
) -> bytes:
    """`{name: messages[message[k]]}` as orjson writes it: the names joined with each one's
    encoded message between them; where a name needs an escape (orjson writes a
    backslash for every one), the plain encoding."""
    if not names:
        return b"{}"
    if b"\\" in orjson.dumps(names):
        return orjson.dumps(
            dict(zip(names, np.array(messages, object)[message].tolist(), strict=True))
        )
    between = np.array([f'":{orjson.dumps(m).decode()},"' for m in messages], object)
    parts: list[str] = ['{"'] * (2 * len(names) + 1)
    parts[1::2] = names
    parts[2::2] = between[message].tolist()
    parts[-1] = parts[-1][:-2] + "}"
    return "".join(parts).encode()


def priority_list(scores: list[tuple[str, int]]) -> bytes:
    """HostPriorityList: a bare array; scores are integers (a float would be dropped)."""
    return orjson.dumps([{"Host": host, "Score": int(score)} for host, score in scores])


# what follows a host's name up to the next host's name, by score: the final scores are
# 0..10, so each entry of a priority list is its name between two of these
_AFTER_HOST: Final = {s: f'","Score":{s}}},{{"Host":"' for s in range(11)}
_AFTER_LAST: Final = {s: f'","Score":{s}}}]' for s in range(11)}


def host_priorities(hosts: Sequence[str], scores: Sequence[int]) -> bytes:
    """`priority_list(list(zip(hosts, scores)))`, byte for byte, without a dict per host: the
    names joined with a text per score between them. Where a name needs an escape (orjson
    writes a backslash for every one), or a score is not 0..10, the plain encoding."""
    if not hosts:
        return b"[]"
    try:
        between = list(map(_AFTER_HOST.__getitem__, scores))
        last = _AFTER_LAST[scores[-1]]
    except (KeyError, TypeError):  # a score outside 0..10 (or not a number)
        return priority_list(list(zip(hosts, scores, strict=True)))
    if len(between) != len(hosts) or b"\\" in orjson.dumps(hosts):
        return priority_list(list(zip(hosts, scores, strict=True)))
    parts: list[str] = ['[{"Host":"'] * (2 * len(hosts) + 1)
    parts[1::2] = hosts
    parts[2::2] = between
    parts[-1] = last
    return "".join(parts).encode()


def binding_result(error: str = "") -> bytes:
    return orjson.dumps({"Error": error})


def preemption_result(accepted: Mapping[str, Victims]) -> bytes:
    return orjson.dumps(
        {
            "NodeNameToMetaVictims": {
                node: {
                    "Pods": [{"UID": uid} for uid in v.uids],
                    "NumPDBViolations": v.num_pdb_violations,
                }
                for node, v in accepted.items()
            }
        }
    )
