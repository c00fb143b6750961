"""Resource arithmetic as kube-scheduler does it: a pod's effective requests, and the
node information the policies read as `nodeInfo` (allocatable, requested, free, pods).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Final, Protocol, cast

from policyext.cel import CELEvalError
from policyext.cel.lib.quantity import Quantity

Resources = dict[str, Quantity]
ZERO: Final = Quantity.from_int(0)
# always present in podRequests, nodeInfo.requested and nodeInfo.free
CORE_RESOURCES: Final = ("cpu", "memory")
TERMINATED_PHASES: Final = frozenset(("Succeeded", "Failed"))
HUGEPAGES_PREFIX: Final = "hugepages-"


def parse_resources(raw: object) -> Resources:
    """A `{name: "quantity"}` map of a Kubernetes object; values that do not parse are left
    out (the apiserver never stores them; a hand-written snapshot might)."""
    out: Resources = {}
    if not isinstance(raw, Mapping):
        return out
    for name, value in raw.items():
        try:
            out[str(name)] = Quantity.parse(str(value))
        except ValueError:
            continue
    return out


def add_into(total: Resources, extra: Mapping[str, Quantity]) -> None:
    for name, q in extra.items():
        current = total.get(name)
        total[name] = q if current is None else current + q


def subtract_from(total: Resources, extra: Mapping[str, Quantity]) -> None:
    for name, q in extra.items():
        current = total.get(name)
        total[name] = (ZERO if current is None else current) - q


def _max_into(total: Resources, other: Mapping[str, Quantity]) -> None:
    for name, q in other.items():
        current = total.get(name)
        if current is None or q > current:
            total[name] = q


def _container_requests(container: object) -> Resources:
    if not isinstance(container, Mapping):
        return {}
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return {}
    return parse_resources(resources.get("requests"))


def pod_requests(pod: Mapping[str, Any]) -> Resources:
    """The pod's effective requests, as kube-scheduler computes them: the larger of the sum
    over the containers and what each init container needs while it runs (restartable init
    containers, i.e. sidecars, keep running and count with the containers), plus the pod
    overhead. Pod-level requests (`spec.resources`), when given, win. `cpu` and `memory` are
    always present."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        spec = {}
    total: Resources = {}
    for container in _list(spec.get("containers")):
        add_into(total, _container_requests(container))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for container in _list(spec.get("initContainers")):
        needed = _container_requests(container)
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            add_into(total, needed)
            add_into(sidecars, needed)
            running = dict(sidecars)
        else:
            running = dict(needed)
            add_into(running, sidecars)
        _max_into(init_peak, running)
    _max_into(total, init_peak)
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping):
        total.update(
            (name, q)
            for name, q in parse_resources(pod_level.get("requests")).items()
            if _pod_level_resource(name)
        )
    add_into(total, parse_resources(spec.get("overhead")))
    for name in CORE_RESOURCES:
        total.setdefault(name, ZERO)
    return total


def _pod_level_resource(name: str) -> bool:
    """The resources that pod-level requests may set (kube-scheduler ignores the others
    there, and counts them from the containers)."""
    return name in CORE_RESOURCES or name.startswith(HUGEPAGES_PREFIX)


def _list(value: object) -> list[Any]:
    """A list field of a Kubernetes object; anything else (a hand-made request) is empty."""
    return value if isinstance(value, list) else []


def pod_is_active(pod: Mapping[str, Any]) -> bool:
    """Counted on its node: bound and not terminated."""
    status = pod.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return phase not in TERMINATED_PHASES


class NodeInfo(dict[str, object]):
    """What a policy reads as `nodeInfo`. Without a pod source, reading `requested`, `free`,
    `podCount` or `pods` is an evaluation error that says so (never a silent zero)."""

    # changes whenever the pods counted on the node change (live caches); cached rule
    # results that read nodeInfo are keyed by it
    __slots__ = ("generation",)
    generation: int
    cel_type_name: ClassVar[str] = "map"
    POD_FIELDS: ClassVar[frozenset[str]] = frozenset(("requested", "free", "podCount", "pods"))

    def __missing__(self, key: str) -> object:
        if key in self.POD_FIELDS:
            raise CELEvalError(
                f"nodeInfo.{key} needs the pods of the cluster: run with a live cluster or a "
                "snapshot that includes Pods"
            )
        raise KeyError(key)


def node_allocatable(node: Mapping[str, Any]) -> Resources:
    status = node.get("status")
    return parse_resources(status.get("allocatable") if isinstance(status, Mapping) else None)


def build_node_info(
    allocatable: Resources,
    requested: Resources | None,
    pods: list[dict[str, object]] | None,
    generation: int = 0,
) -> NodeInfo:
    """`requested` and `pods` are None when no pod source is known. `requested` and `free`
    hold cpu, memory, every resource the node has allocatable (0 requested when no pod
    asks for it, as kube-scheduler counts it) and every resource a pod requests."""
    info = NodeInfo(allocatable=allocatable)
    info.generation = generation
    if requested is None or pods is None:
        return info
    requested = dict(requested)
    for name in (*CORE_RESOURCES, *allocatable):
        requested.setdefault(name, ZERO)
    free = dict(allocatable)
    for name in CORE_RESOURCES:
        free.setdefault(name, ZERO)
    subtract_from(free, requested)
    info["requested"] = requested
    info["free"] = free
    info["podCount"] = len(pods)
    info["pods"] = pods
    return info


def without_pods(info: NodeInfo, pods: Iterable[Mapping[str, Any]]) -> NodeInfo:
    """The node information as it would be once `pods` are gone (preemption victims)."""
    pods = list(pods)
    if not pods or "requested" not in info:
        return info
    requested = dict(info["requested"])  # type: ignore[call-overload]
    for pod in pods:
        subtract_from(requested, pod_requests(pod))
    gone = {(s["namespace"], s["name"]) for s in (pod_summary(p) for p in pods)}
    summaries = cast(list[dict[str, object]], info["pods"])
    remaining = [p for p in summaries if (p["namespace"], p["name"]) not in gone]
    return build_node_info(info["allocatable"], requested, remaining)  # type: ignore[arg-type]


def pod_summary(pod: Mapping[str, Any]) -> dict[str, object]:
    """What `nodeInfo.pods` shows of a pod: enough for spread and anti-affinity rules."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    labels = meta.get("labels")
    return {
        "namespace": str(meta.get("namespace") or "default"),
        "name": str(meta.get("name") or ""),
        "labels": {str(k): str(v) for k, v in labels.items()}
        if isinstance(labels, Mapping)
        else {},
    }


class NodeSource(Protocol):
    """Where the engine learns about nodes beyond the request: a snapshot file or the live
    cluster's caches. `has_pods` says whether `requested`/`free`/`pods` can be known.

    A source may also have an integer `generation` that changes whenever any node or any
    node's information changes: replies can then be reused while it stays the same; and a
    `node_stamps(names)` method giving per name an object replaced whenever that node or its
    information changes (None for a name it does not hold): each node's part of a reply can
    then be reused while its stamp is the same object."""

    @property
    def has_pods(self) -> bool: ...

    @property
    def static_node_info(self) -> bool:
        """True when node information never changes (a snapshot): then results that read
        it need not be keyed by its generation."""
        ...

    def get_node(self, name: str) -> Mapping[str, Any] | None: ...

    def node_keys(self, nodes: Sequence[Mapping[str, Any]]) -> list[str | None]:
        """The cache key (`name@resourceVersion`) of each node, None for a node this source
        does not hold; a source keeps them ready so that a request does not rebuild them."""
        ...

    def node_info(self, node: Mapping[str, Any]) -> NodeInfo: ...
