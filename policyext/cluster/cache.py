"""A node source backed by the live cluster: Nodes and Pods kept in step by watches.

Readers (request threads) never take a lock: every node's state is one immutable
`NodeEntry` (the node object, its cache key, its node information) that the writers (the
two watch threads, and `assume` after a bind) replace whole under their lock. The pod
accounting behind the node information is updated incrementally on every pod event, never
recomputed per request, and each change publishes a NodeInfo with a new generation, so a
result cached for the old one is never served again.
"""

from __future__ import annotations

import gc
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from policyext.cluster.client import ApiClients
from policyext.cluster.watch import Reflector
from policyext.policy import (
    CORE_RESOURCES,
    ZERO,
    NodeInfo,
    NodeRecord,
    NodeRows,
    NodeTable,
    Resources,
    add_into,
    build_node_info,
    node_info_of,
    pod_is_active,
    pod_requests,
    pod_summary,
    subtract_from,
)

Json = dict[str, Any]
log = logging.getLogger("policyext.cluster")
# how long an assumed pod outlives watch events that still show it unbound (events written
# before the binding, delivered after it)
ASSUME_TTL: Final = 30.0
# The pods the pod watch brings: bound to a node and not finished (kube-scheduler's informer
# leaves finished pods out the same way), so finished Jobs are never held and a pod that
# finishes arrives as DELETED. A pending pod arrives as ADDED once it is bound: its events
# while it waits (half of the events of a pod that is created, then bound) tell the node
# information nothing, and reading them cost a scheduler that binds its pods itself about
# a sixth of the extender's CPU per pod.
BOUND_PODS: Final = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
# What the pod watch brings from the first /bind on: the pending pods too. /bind must know
# the pod it binds to count it at once; reading every bound pod back cost more CPU per pod
# than the pending pods' events (bench.throughput --bind: 15.4 s against 12.3 s of
# extender CPU for 1,000 pods, 71 ms against 30 ms per bind). The first binds, until the
# pending pods are listed, read their pod back.
COUNTED_PODS: Final = "status.phase!=Succeeded,status.phase!=Failed"


@dataclass(frozen=True, slots=True)
class WatchStats:
    resource: str
    staleness_seconds: float  # since the server was last heard from about this resource
    relists: int
    synced: bool
    last_error: str


@dataclass(frozen=True, slots=True, eq=False)
class NodeEntry:
    """What readers see of one node name: replaced whole, never changed in place. `node`
    is None for a name that has pods bound to it but no Node object (yet). `version`:
    the number of this Node object (a new one for each object, kept while only the pods
    change); the node information's `generation` numbers the entry as a whole."""

    node: Json | None
    version: int
    info: NodeInfo


@dataclass(frozen=True, slots=True)
class _Counted:
    """A pod as it is counted on a node."""

    node_name: str
    requests: Resources
    summary: dict[str, object]


@dataclass(slots=True)
class _NodePods:
    """The writers' running totals for one node name."""

    requested: Resources = field(default_factory=dict)
    pods: dict[str, dict[str, object]] = field(default_factory=dict)  # uid -> summary


class ClusterSource:
    """Nodes and Pods of the cluster, answering "node by name" and "node information"."""

    def __init__(
        self,
        api: ApiClients,
        *,
        watch_timeout: int = 300,
        assume_ttl: float = ASSUME_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        core = api.core
        self.assume_ttl = assume_ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, NodeEntry] = {}
        self._with_node: dict[str, NodeEntry] = {}  # the entries that have a Node object
        self._table = NodeTable()  # the entries with a Node object, for requests
        self._pods: dict[str, Json] = {}  # uid -> every unfinished pod the pod watch brings
        self._uids: dict[tuple[str, str], str] = {}  # (namespace, name) -> uid
        self._counted: dict[str, _Counted] = {}  # uid -> where it is counted
        self._per_node: dict[str, _NodePods] = {}
        self._assumed: dict[str, float] = {}  # uid -> when
        self._generations = itertools.count(1)
        # the last change to any node or its information; advanced after the change is
        # in place, so a reader that saw a generation sees at least that state
        self.generation = 0
        self._heard = {"nodes": -math.inf, "pods": -math.inf}
        nodes = _Handler(self._replace_nodes, self._apply_node, lambda: self._touch("nodes"))
        pods = _Handler(self._replace_pods, self._apply_pod, lambda: self._touch("pods"))
        self._nodes = Reflector(
            "nodes", core.list_node, nodes, watch_timeout=watch_timeout, clock=clock
        )
        self._pod_watch = Reflector(
            "pods",
            core.list_pod_for_all_namespaces,
            pods,
            watch_timeout=watch_timeout,
            clock=clock,
            field_selector=BOUND_PODS,
            keep=listed_pod,
        )
        self._binds_seen = False  # whether /bind was asked: the pod watch brings pending pods

    # -- lifecycle

    def start(self) -> None:
        """Start both watches (daemon threads); a restarted source lists again."""
        self._nodes.start()
        self._pod_watch.start()

    def stop(self) -> None:
        self._nodes.stop()
        self._pod_watch.stop()

    def relist(self) -> None:
        """List both kinds again, as after a 410 Gone."""
        self._nodes.request_relist()
        self._pod_watch.request_relist()

    def ready(self) -> bool:
        """True once both initial lists are in."""
        return self._nodes.synced.is_set() and self._pod_watch.synced.is_set()

    def wait_ready(self, timeout: float) -> bool:
        deadline = self.clock() + timeout
        for reflector in (self._nodes, self._pod_watch):
            if not reflector.synced.wait(max(0.0, deadline - self.clock())):
                return False
        return True

    def staleness_seconds(self) -> float:
        """Seconds since the staler of the two watches last heard from the server (an event,
        a bookmark, a new stream or a list); infinite before the first list."""
        return self.clock() - min(self._heard.values())

    @property
    def relists(self) -> int:
        return self._nodes.relists + self._pod_watch.relists

    def watch_stats(self) -> list[WatchStats]:
        """Per watched resource, for the metrics (read at scrape time)."""
        now = self.clock()
        return [
            WatchStats(
                r.name, now - self._heard[r.name], r.relists, r.synced.is_set(), r.last_error
            )
            for r in (self._nodes, self._pod_watch)
        ]

    def sync_problem(self) -> str:
        """Why the source is not in sync, for /readyz ("" when it is)."""
        waiting = [s for s in self.watch_stats() if not s.synced]
        return "; ".join(
            f"{s.resource}: {s.last_error or 'the initial list is not in yet'}" for s in waiting
        )

    # -- the LiveNodeSource contract (readers: no lock, one dictionary read per answer)

    def node_count(self) -> int:
        return len(self._with_node)

    def node_names(self) -> list[str]:
        """Every node's name, sorted (/explain without NodeNames)."""
        with self._lock:
            return sorted(self._with_node)

    def get_node(self, name: str) -> Json | None:
        entry = self._entries.get(name)
        return entry.node if entry is not None else None

    def node_rows(self, names: Sequence[str]) -> NodeRows:
        return self._table.rows(names)

    def node_info(self, node: Mapping[str, Any]) -> NodeInfo:
        entry = self._entries.get(_name(node))
        if entry is None:
            return node_info_of(node, {}, [], 0)
        known = entry.node
        if known is node or (known is not None and _version(known) == _version(node) != ""):
            return entry.info
        # another version of the node (sent in a request): its allocatable, our pods
        info = entry.info
        return node_info_of(
            node,
            cast(Resources, info["requested"]),
            cast(list[dict[str, object]], info["pods"]),
            info.generation,
        )

    def pod_by_uid(self, uid: str) -> Json | None:
        return self._pods.get(uid)

    def pod(self, namespace: str, name: str) -> Json | None:
        uid = self._uids.get((namespace, name))
        return self._pods.get(uid) if uid is not None else None

    # -- feeding the source by hand: what the watches do, without an API server (tests,
    # replays); the watches call the same writers

    def replace(self, resource: str, items: list[Json]) -> None:
        """Every Node (`resource` "nodes") or every Pod ("pods") at once, as a list call
        returns them; the resource counts as synced from then on."""
        replace, _, reflector = self._writers(resource)
        replace(items, self.clock())
        reflector.synced.set()

    def apply(self, resource: str, event: str, obj: Json) -> None:
        """One watch event (ADDED, MODIFIED or DELETED) of a Node or a Pod."""
        _, apply, _ = self._writers(resource)
        apply(event, obj)

    def _writers(
        self, resource: str
    ) -> tuple[Callable[[list[Json], float], None], Callable[[str, Json], None], Reflector]:
        if resource == "nodes":
            return self._replace_nodes, self._apply_node, self._nodes
        if resource == "pods":
            return self._replace_pods, self._apply_pod, self._pod_watch
        raise ValueError(f"a ClusterSource holds nodes and pods, not {resource!r}")

    # -- assume

    def assume(
        self, pod_namespace: str, pod_name: str, node_name: str, pod: Json | None = None
    ) -> bool:
        """Count a pod on a node now, right after binding it, as kube-scheduler's assume
        cache does: the next pod of a burst must see it. The watch event of the binding
        later takes over without counting it twice. `pod` is used when the watch has not
        delivered the pod yet. False when the pod is unknown. The first call makes the
        pod watch bring the pending pods too (COUNTED_PODS), so that later binds know theirs."""
        if not self._binds_seen:
            self._watch_pending_pods()
        with self._lock:
            known = self.pod(pod_namespace, pod_name)
            if pod is not None and (known is None or _uid(known) != _uid(pod)):
                known = pod
            if known is None or not _uid(known):
                return False
            uid = _uid(known)
            if _bound_to(known) != node_name:
                # held as bound (kube-scheduler's assume cache does the same): a bind asked
                # again before the watch event sees the pod where it was bound
                spec = known.get("spec")
                spec = {**(spec if isinstance(spec, dict) else {}), "nodeName": node_name}
                known = {**known, "spec": spec}
            self._pods[uid] = known
            self._uids[(pod_namespace, pod_name)] = uid
            counted = self._counted.get(uid)
            if counted is not None and counted.node_name == node_name:
                return True  # the watch was first: nothing to assume
            self._assumed[uid] = self.clock()
            self._count(uid, node_name, known)
            return True

    def _watch_pending_pods(self) -> None:
        with self._lock:
            if self._binds_seen:
                return
            self._binds_seen = True
        log.info("pods: the extender binds: the pod watch lists pending pods from now on")
        self._pod_watch.reselect(COUNTED_PODS)

    # -- writers (watch threads), under the lock

    def _touch(self, kind: str) -> None:
        self._heard[kind] = self.clock()

    def _replace_nodes(self, items: list[Json], started: float) -> None:
        with self._lock:
            seen = set()
            for node in items:
                seen.add(_name(node))
                self._upsert_node(node)
            for name, entry in list(self._entries.items()):
                if entry.node is not None and name not in seen:
                    self._delete_node(name)
            self._table.settle()  # the names of a list, laid out side by side (rows.py)
            self._touch("nodes")
        _out_of_collections()

    def _apply_node(self, kind: str, node: Json) -> None:
        with self._lock:
            if kind == "DELETED":
                self._delete_node(_name(node))
            else:
                self._upsert_node(node)
            self._touch("nodes")

    def _upsert_node(self, node: Json) -> None:
        _strip(node)
        name = _name(node)
        entry = self._entries.get(name)
        old = entry.node if entry is not None else None
        if old is not None and _version(old) == _version(node) != "":
            return  # a relist repeating what the watch already delivered
        self._publish(name, node)

    def _delete_node(self, name: str) -> None:
        entry = self._entries.get(name)
        if entry is None or entry.node is None:
            return
        if self._per_node.get(name):
            self._publish(name, None)  # its pods are still counted until they go
        else:
            del self._entries[name]
            self._with_node.pop(name, None)
            self._table.remove(name)
            self.generation = next(self._generations)

    def _replace_pods(self, items: list[Json], started: float) -> None:
        with self._lock:
            seen = set()
            for pod in items:
                seen.add(_uid(pod))
                self._upsert_pod(pod)
            for uid in list(self._pods):
                if uid in seen:
                    continue
                assumed = self._assumed.get(uid)
                if assumed is not None and assumed >= started:
                    continue  # bound and assumed after the list was taken
                self._delete_pod(uid)
            self._touch("pods")
        _out_of_collections()

    def _apply_pod(self, kind: str, pod: Json) -> None:
        with self._lock:
            if kind == "DELETED":
                self._delete_pod(_uid(pod))
            else:
                self._upsert_pod(pod)
            self._touch("pods")

    def _upsert_pod(self, pod: Json) -> None:
        uid = _uid(pod)
        if not uid:
            return
        _strip(pod)
        node_name = _bound_to(pod)
        assumed = self._assumed.get(uid)
        if not node_name and assumed is not None and self.clock() - assumed < self.assume_ttl:
            return  # an event from before the binding: the assumed pod stands
        self._assumed.pop(uid, None)  # confirmed by the watch, or expired
        meta = pod.get("metadata") or {}
        self._uids[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = uid
        self._count(uid, node_name if node_name and pod_is_active(pod) else "", pod)
        # a bound pod is held by what is read of it (counted above from the whole object)
        self._pods[uid] = bound_part(pod) if node_name else pod

    def _delete_pod(self, uid: str) -> None:
        pod = self._pods.pop(uid, None)
        self._assumed.pop(uid, None)
        if pod is not None:
            meta = pod.get("metadata") or {}
            name = (str(meta.get("namespace", "")), str(meta.get("name", "")))
            if self._uids.get(name) == uid:
                del self._uids[name]
        self._count(uid, "", None)

    def _count(self, uid: str, node_name: str, pod: Json | None) -> None:
        """Count the pod on `node_name` ("" for nowhere), replacing where it was counted."""
        current = self._counted.get(uid)
        new: _Counted | None = None
        if node_name and pod is not None:
            # kube-apiserver validated the pod: no quantity can be invalid
            new = _Counted(node_name, pod_requests(pod, strict=False), pod_summary(pod))
            if new == current:
                return
        touched = set()
        if current is not None:
            totals = self._per_node[current.node_name]
            subtract_from(totals.requested, current.requests)
            _drop_zeros(totals.requested)
            totals.pods.pop(uid, None)
            if not totals.pods:
                del self._per_node[current.node_name]
            del self._counted[uid]
            touched.add(current.node_name)
        if new is not None:
            totals = self._per_node.setdefault(node_name, _NodePods())
            add_into(totals.requested, new.requests)
            totals.pods[uid] = new.summary
            self._counted[uid] = new
            touched.add(node_name)
        for name in touched:
            entry = self._entries.get(name)
            node = entry.node if entry is not None else None
            if node is None and name not in self._per_node:
                self._entries.pop(name, None)  # neither a node nor pods any more
                self.generation = next(self._generations)
            else:
                self._publish(name, node)

    def _publish(self, name: str, node: Json | None) -> None:
        totals = self._per_node.get(name) or _NodePods()
        generation = next(self._generations)
        previous = self._entries.get(name)
        pods = list(totals.pods.values())
        if node is not None and previous is not None and previous.node is node:
            # only its pods changed (the usual event): the node's parts stay as they were
            info = build_node_info(
                cast(Resources, previous.info.get("allocatable", {})),
                totals.requested,
                pods,
                generation,
                previous.info.invalid,
            )
            version = previous.version
        elif node is not None:
            info = node_info_of(node, totals.requested, pods, generation)
            version = generation  # a new Node object: a number of its own
        else:
            info = build_node_info({}, totals.requested, pods, generation)
            version = generation
        entry = self._entries[name] = NodeEntry(node, version, info)
        if node is not None:
            self._with_node[name] = entry
            self._table.put(name, NodeRecord(node, info, version, generation))
        else:
            self._with_node.pop(name, None)
            self._table.remove(name)
        self.generation = generation


@dataclass(frozen=True, slots=True)
class _Handler:
    """Binds one reflector to the source's writer methods for its kind."""

    replace: Callable[[list[Json], float], None]
    apply: Callable[[str, Json], None]
    touched: Callable[[], None]


def _out_of_collections() -> None:
    """Leave every object alive now, a list's among them, out of the garbage collector's
    traversals. A full collection walks every object it tracks with the interpreter held:
    3.7 s over 5,000 nodes and 25,000 pods, every few minutes under pod churn (a full
    collection comes once the objects that survived since the last grow by a quarter),
    while every request waited (docs/benchmarks-scale.md). The decoded objects hold no
    reference cycles: reference counting frees each when an event replaces it, frozen or
    not. What is frozen is never collected as a cycle, so a cycle that is garbage at the
    moment of a list stays: a list comes at start and after a watch is lost, rarely."""
    gc.freeze()


def listed_pod(pod: Json) -> Json:
    """What the pod watch keeps of each pod of a list, as its page arrives: a bound pod's
    bound part, a pending pod whole, neither with managed fields."""
    _strip(pod)
    return bound_part(pod) if _bound_to(pod) else pod


def bound_part(pod: Json) -> Json:
    """What is read of a pod once it is bound, the rest left out: its names, UID and labels
    (a bind asked again, a preemption victim's `nodeInfo.pods` entry, an audit finding), its
    scheduler and node (a bind asked again), what its requests are computed from (a
    preemption victim: `pod_requests`) and its phase. A pending pod is held whole: /bind
    evaluates the policies on it. At 30 pods a node this is most of the caches' memory
    (docs/benchmarks.md, "The caches at scale"): a bound pod's volumes, environment, probes
    and status, which nothing here reads, are about three quarters of it."""
    meta = pod.get("metadata")
    spec = pod.get("spec")
    status = pod.get("status")
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        return pod
    kept_meta = {k: meta[k] for k in _BOUND_METADATA if k in meta}
    kept_spec: Json = {k: spec[k] for k in _BOUND_SPEC if k in spec}
    for kind in ("containers", "initContainers"):
        containers = spec.get(kind)
        if isinstance(containers, list):
            kept_spec[kind] = [_container_part(c) for c in containers]
    kept: Json = {"metadata": kept_meta, "spec": kept_spec}
    if isinstance(status, dict) and "phase" in status:
        kept["status"] = {"phase": status["phase"]}
    return kept


_BOUND_METADATA: Final = ("name", "namespace", "uid", "resourceVersion", "labels")
_BOUND_SPEC: Final = ("nodeName", "schedulerName", "overhead", "resources", "priority")


def _container_part(container: object) -> object:
    if not isinstance(container, dict):
        return container
    return {k: container[k] for k in ("name", "resources", "restartPolicy") if k in container}


def _strip(obj: Json) -> None:
    """Drop what no policy reads and what costs the most memory (as kube-scheduler's
    informers do): the managed fields, often larger than the rest of the object."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)


def _drop_zeros(requested: Resources) -> None:
    """A resource no pod requests any more disappears, as if never requested (cpu and
    memory are always shown, by build_node_info)."""
    for name in [n for n, q in requested.items() if n not in CORE_RESOURCES and q == ZERO]:
        del requested[name]


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    if type(meta) is dict:  # decoded JSON, always: no abstract-class check per node
        name = meta.get("name", "")
        return name if type(name) is str else str(name)
    return str(meta.get("name", "")) if isinstance(meta, Mapping) else ""


def _uid(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("uid", "") or "") if isinstance(meta, Mapping) else ""


def _version(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion", "")) if isinstance(meta, Mapping) else ""


def _bound_to(pod: Mapping[str, Any]) -> str:
    spec = pod.get("spec")
    return str(spec.get("nodeName") or "") if isinstance(spec, Mapping) else ""
