"""A node source backed by a snapshot file of Nodes and Pods (and Namespaces, whose labels
the scheduler emulation matches namespaceSelectors against).

The file is a v1 List (`kubectl get nodes,pods,namespaces -A -o yaml`) or a multi-document
YAML/JSON of Node, Pod and Namespace objects. Node information is computed once, when the
file is loaded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from policyext.policy import (
    InvalidQuantity,
    NodeInfo,
    NodeRecord,
    NodeRows,
    NodeTable,
    RefusedYAML,
    Resources,
    add_into,
    load_yaml_all,
    node_allocatable,
    node_info_of,
    pod_is_active,
    pod_requests,
    pod_summary,
    yaml_error_line,
)

Json = dict[str, Any]


class SnapshotError(Exception):
    """The snapshot file cannot be read."""


def read_objects(path: Path) -> list[Json]:
    """Every Kubernetes object in a file, with `List` documents flattened."""
    try:
        documents = load_yaml_all(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise SnapshotError(f"{path}: cannot read: {e}") from None
    except RefusedYAML as e:
        mark = e.problem_mark
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise SnapshotError(f"{path}{where}: {e.problem}") from None
    except RecursionError:
        raise SnapshotError(f"{path}: nested too deeply to read") from None
    except yaml.YAMLError as e:
        raise SnapshotError(yaml_error_line(e, str(path))) from None
    return list(_flatten(documents, path))


def _flatten(documents: Iterable[object], path: Path) -> Iterable[Json]:
    for doc in documents:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise SnapshotError(f"{path}: a document is not an object")
        if doc.get("kind", "").endswith("List") and isinstance(doc.get("items"), list):
            yield from _flatten(doc["items"], path)
        else:
            yield doc


def require_nodes(source: SnapshotSource) -> SnapshotSource:
    """The source, if it holds a Node: a snapshot without one (a Service saved by mistake,
    an empty file) is an error, not a cluster of no nodes where every pod fits nowhere and
    every node name is unknown."""
    if not source.nodes:
        raise SnapshotError(
            f"{source.description}: no Node in the file, so no node to schedule on; save the "
            "nodes with their pods: kubectl get nodes,pods,namespaces -A -o yaml"
        )
    return source


class SnapshotSource:
    """Nodes, Pods and Namespaces from a file, answering "node by name" and "node information" (a
    LiveNodeSource whose nodes never change)."""

    def __init__(self, objects: Iterable[Json], description: str = "snapshot") -> None:
        self.description = description
        self.nodes: dict[str, Json] = {}
        pods: list[Json] = []
        self.namespaces: list[Json] = []
        for obj in objects:
            kind = obj.get("kind")
            if kind == "Node" or (
                kind is None and "status" in obj and "spec" in obj and _is_node(obj)
            ):
                self.nodes[_name(obj)] = obj
            elif kind == "Pod":
                pods.append(obj)
            elif kind == "Namespace":
                self.namespaces.append(obj)
        self.pods = pods
        self._check_quantities()
        self._by_uid = {
            str(p["metadata"]["uid"]): p
            for p in pods
            if isinstance(p.get("metadata"), dict) and p["metadata"].get("uid")
        }
        self._requested: dict[str, Resources] = {name: {} for name in self.nodes}
        self._pods: dict[str, list[dict[str, object]]] = {name: [] for name in self.nodes}
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName")
            if not node_name or not pod_is_active(pod):
                continue
            add_into(self._requested.setdefault(node_name, {}), pod_requests(pod))
            self._pods.setdefault(node_name, []).append(pod_summary(pod))
        self._info: dict[str, NodeInfo] = {}
        # a file's nodes never change: each is its own one version
        self._table = NodeTable()
        for version, (name, node) in enumerate(self.nodes.items()):
            self._table.put(name, NodeRecord(node, None, version, version))
        self._table.settle()

    def _check_quantities(self) -> None:
        """Every Pod's requests and every Node's allocatable are quantities kube-scheduler
        can count: SnapshotError naming the first invalid one (never a silent zero)."""
        try:
            for node in self.nodes.values():
                node_allocatable(node)
            for pod in self.pods:
                pod_requests(pod)
        except InvalidQuantity as e:
            raise SnapshotError(f"{self.description}: {e}") from None

    @classmethod
    def from_file(cls, path: str | Path) -> SnapshotSource:
        p = Path(path)
        return cls(read_objects(p), str(p))

    @classmethod
    def with_nodes(cls, path: str | Path) -> SnapshotSource:
        """`from_file` for a file that stands for a cluster to schedule on (see
        `require_nodes`)."""
        return require_nodes(cls.from_file(path))

    @property
    def generation(self) -> int:
        """Changes whenever a node or its information does: never, for a file."""
        return 0

    def ready(self) -> bool:
        return True

    def sync_problem(self) -> str:
        return ""  # a file is read whole before the server starts

    def get_node(self, name: str) -> Json | None:
        return self.nodes.get(name)

    def node_count(self) -> int:
        return len(self.nodes)

    def node_names(self) -> list[str]:
        """Every node's name, sorted (/explain without NodeNames)."""
        return sorted(self.nodes)

    def node_rows(self, names: Sequence[str]) -> NodeRows:
        return self._table.rows(names)

    def pod_by_uid(self, uid: str) -> Json | None:
        """A pod of the snapshot (preemption victims arrive as UIDs)."""
        return self._by_uid.get(uid)

    def node_info(self, node: Mapping[str, Any]) -> NodeInfo:
        name = _name(node)
        known = self.nodes.get(name)
        if known is node or (known is not None and _version(known) == _version(node) != ""):
            info = self._info.get(name)
            if info is None:
                info = self._info[name] = self._build(node, name)
            return info
        return self._build(node, name)  # a node sent in the request, not the file's copy

    def _build(self, node: Mapping[str, Any], name: str) -> NodeInfo:
        return node_info_of(node, self._requested.get(name, {}), self._pods.get(name, []))


def _name(obj: Mapping[str, Any]) -> str:
    try:
        return str(obj["metadata"]["name"])
    except (KeyError, TypeError):
        return ""


def _version(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion", "")) if isinstance(meta, Mapping) else ""


def _is_node(obj: Mapping[str, Any]) -> bool:
    status = obj.get("status")
    return isinstance(status, Mapping) and "allocatable" in status
