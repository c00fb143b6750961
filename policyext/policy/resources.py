"""Resource arithmetic as kube-scheduler does it: a pod's effective requests, and the
node information the policies read as `nodeInfo` (allocatable, requested, free, pods).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final, cast

from policyext.cel import INT64_MAX, CELEvalError, Quantity

Resources = dict[str, Quantity]
ZERO: Final = Quantity.from_int(0)
# always present in podRequests, nodeInfo.requested and nodeInfo.free
CORE_RESOURCES: Final = ("cpu", "memory")
TERMINATED_PHASES: Final = frozenset(("Succeeded", "Failed"))
HUGEPAGES_PREFIX: Final = "hugepages-"
# what `isinstance` tests a JSON object against: a dict first, since Mapping alone runs
# the ABC's check, a Python-level call, every time (a dozen times per filter call)
MAPS: Final = (dict, Mapping)


class InvalidQuantity(ValueError):
    """A resource quantity of a Pod or a Node that kube-scheduler could not count; the
    message names the object, the field and what is wrong."""

    def __init__(self, name: str, reason: str, field: str = "", owner: str = "") -> None:
        where = f"{field}[{name}]" if field else name
        super().__init__(f"{owner}: {where}: {reason}" if owner else f"{where}: {reason}")
        self.name = name
        self.reason = reason

    def at(self, field: str, owner: str) -> InvalidQuantity:
        """The same error, named by its field and object (built only when it is raised:
        the messages are not worth formatting for every valid pod)."""
        return InvalidQuantity(self.name, self.reason, field, owner)


def parse_resources(raw: object, field: str = "", owner: str = "") -> Resources:
    """A `{name: "quantity"}` map of a Kubernetes object (`field` is its path in the
    object, `owner` names the object, for the error). Raises InvalidQuantity for a value
    that is not a quantity, is negative, or is too large for kube-scheduler's int64
    accounting (millicores of cpu, units of anything else): never a silent 0."""
    out: Resources = {}
    if raw is None or not isinstance(raw, MAPS):  # (most containers set no overhead, say)
        return out
    try:
        for key, value in raw.items():
            name = str(key)
            text = str(value)
            q = _COUNTABLE.get((name, text))
            out[name] = q if q is not None else _countable(name, text)
    except InvalidQuantity as e:
        raise e.at(field, owner) from None
    return out


# (resource, text) -> its quantity, for the texts found countable: pods repeat a few
_COUNTABLE: dict[tuple[str, str], Quantity] = {}
_COUNTABLE_MAX: Final = 4096


def _countable(name: str, text: str) -> Quantity:
    try:
        q = Quantity.parse(text)
    except ValueError as e:
        raise InvalidQuantity(name, str(e)) from None
    if q.sign() < 0:
        raise InvalidQuantity(name, f"{text!r} must not be negative")
    if (q.milli_value() if name == "cpu" else q.value()) > INT64_MAX:
        unit = "millicores" if name == "cpu" else "units"
        raise InvalidQuantity(name, f"{text!r} is too large (over 2^63-1 {unit})")
    if len(_COUNTABLE) < _COUNTABLE_MAX:
        _COUNTABLE[name, text] = q
    return q


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


def _container_requests(
    container: object, strict: bool, defaults: Mapping[str, Quantity]
) -> Resources:
    requests: Resources = {}
    if isinstance(container, MAPS):
        resources = container.get("resources")
        if isinstance(resources, MAPS):
            requests = _resources(resources.get("requests"), strict)
    for name, q in defaults.items():
        requests.setdefault(name, q)
    return requests


def _resources(raw: object, strict: bool) -> Resources:
    """parse_resources; when not strict, without the quantities that are invalid."""
    try:
        return parse_resources(raw)
    except InvalidQuantity:
        if strict or not isinstance(raw, MAPS):
            raise
        out: Resources = {}
        for name, value in raw.items():
            try:
                out.update(parse_resources({name: value}))
            except InvalidQuantity:
                continue
        return out


def pod_requests(
    pod: Mapping[str, Any], strict: bool = True, missing: Mapping[str, Quantity] | None = None
) -> Resources:
    """The pod's effective requests, as kube-scheduler computes them: the larger of the sum
    over the containers and what each init container needs while it runs (restartable init
    containers, i.e. sidecars, keep running and count with the containers), plus the pod
    overhead. Pod-level requests (`spec.resources`), when given, win. `cpu` and `memory` are
    always present.

    An invalid quantity raises InvalidQuantity, naming the pod, the container and the
    resource; with `strict=False` it is left out instead (for pods kube-apiserver has
    validated, where it cannot happen). `missing`: what a container that requests nothing
    of a resource counts as (kube-scheduler's non-zero defaults for scoring)."""
    spec = pod.get("spec")
    if not isinstance(spec, MAPS):
        spec = {}
    field = "spec"
    defaults = missing or {}
    try:
        total: Resources = {}
        containers = _list(spec.get("containers"))
        for i, container in enumerate(containers):
            field = f"spec.containers[{i}]"
            add_into(total, _container_requests(container, strict, defaults))
        sidecars: Resources = {}
        init_peak: Resources = {}
        for i, container in enumerate(_list(spec.get("initContainers"))):
            field = f"spec.initContainers[{i}]"
            needed = _container_requests(container, strict, defaults)
            if isinstance(container, MAPS) and container.get("restartPolicy") == "Always":
                add_into(total, needed)
                add_into(sidecars, needed)
                running = dict(sidecars)
            else:
                running = dict(needed)
                add_into(running, sidecars)
            _max_into(init_peak, running)
        _max_into(total, init_peak)
        pod_level = spec.get("resources")
        if pod_level is not None and isinstance(pod_level, MAPS):
            field = "spec.resources.requests"
            requests = _resources(pod_level.get("requests"), strict)
            total.update((name, q) for name, q in requests.items() if _pod_level_resource(name))
        field = "spec.overhead"
        add_into(total, _resources(spec.get("overhead"), strict))
    except InvalidQuantity as e:
        raise e.at(*_where(pod, spec, field)) from None
    for name in CORE_RESOURCES:
        total.setdefault(name, ZERO)
    return total


def _where(pod: Mapping[str, Any], spec: Mapping[str, Any], field: str) -> tuple[str, str]:
    """The field and the object of an invalid request: `spec.containers[0].resources.
    requests`, `pod shop/web, container app`."""
    owner = f"pod {pod_name(pod)}"
    for kind in ("containers", "initContainers"):
        prefix = f"spec.{kind}["
        if field.startswith(prefix):
            container = _list(spec.get(kind))[int(field[len(prefix) : -1])]
            name = container.get("name") if isinstance(container, MAPS) else None
            if name:
                owner = f"{owner}, container {name}"
            return f"{field}.resources.requests", owner
    return field, owner


def pod_name(pod: Mapping[str, Any]) -> str:
    """`namespace/name`, for messages."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, MAPS) else {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


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
    phase = status.get("phase") if isinstance(status, MAPS) else None
    return phase not in TERMINATED_PHASES


class NodeInfo(dict[str, object]):
    """What a policy reads as `nodeInfo`. Without a pod source, reading `requested`, `free`,
    `podCount` or `pods` is an evaluation error that says so (never a silent zero); so is
    reading `allocatable` or `free` when the node's allocatable is invalid (`invalid`)."""

    # changes whenever the pods counted on the node change (live caches); cached rule
    # results that read nodeInfo are keyed by it
    __slots__ = ("generation", "invalid")
    generation: int
    invalid: str | None
    cel_type_name: ClassVar[str] = "map"
    POD_FIELDS: ClassVar[frozenset[str]] = frozenset(("requested", "free", "podCount", "pods"))
    ALLOCATABLE_FIELDS: ClassVar[frozenset[str]] = frozenset(("allocatable", "free"))

    def __missing__(self, key: str) -> object:
        if self.invalid is not None and key in self.ALLOCATABLE_FIELDS:
            raise CELEvalError(self.invalid)
        if key in self.POD_FIELDS:
            raise CELEvalError(
                f"nodeInfo.{key} needs the pods of the cluster: run with a live cluster or a "
                "snapshot that includes Pods"
            )
        raise KeyError(key)


def node_allocatable(node: Mapping[str, Any]) -> Resources:
    """`status.allocatable`, parsed; InvalidQuantity (naming the node) for an invalid
    quantity."""
    status = node.get("status")
    raw = status.get("allocatable") if isinstance(status, MAPS) else None
    meta = node.get("metadata")
    name = meta.get("name", "") if isinstance(meta, MAPS) else ""
    return parse_resources(raw, "status.allocatable", f"node {name}")


def node_info_of(
    node: Mapping[str, Any],
    requested: Resources | None,
    pods: list[dict[str, object]] | None,
    generation: int = 0,
) -> NodeInfo:
    """build_node_info for a node object. When its allocatable is invalid, reading
    `nodeInfo.allocatable` or `free` is an evaluation error naming the field."""
    try:
        allocatable = node_allocatable(node)
    except InvalidQuantity as e:
        unreadable = f"nodeInfo.allocatable cannot be read: {e}"
        return build_node_info({}, requested, pods, generation, unreadable)
    return build_node_info(allocatable, requested, pods, generation)


def build_node_info(
    allocatable: Resources,
    requested: Resources | None,
    pods: list[dict[str, object]] | None,
    generation: int = 0,
    invalid: str | None = None,
) -> NodeInfo:
    """`requested` and `pods` are None when no pod source is known. `requested` and `free`
    hold cpu, memory, every resource the node has allocatable (0 requested when no pod
    asks for it, as kube-scheduler counts it) and every resource a pod requests.
    `invalid`: why the node's allocatable cannot be read (then neither it nor `free` is
    there, and reading them is that error)."""
    info = NodeInfo() if invalid is not None else NodeInfo(allocatable=allocatable)
    info.generation = generation
    info.invalid = invalid
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
    if invalid is None:
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
        subtract_from(requested, pod_requests(pod, strict=False))
    gone = {(s["namespace"], s["name"]) for s in (pod_summary(p) for p in pods)}
    summaries = cast(list[dict[str, object]], info["pods"])
    remaining = [p for p in summaries if (p["namespace"], p["name"]) not in gone]
    allocatable = cast(Resources, info.get("allocatable", {}))
    return build_node_info(allocatable, requested, remaining, invalid=info.invalid)


def pod_summary(pod: Mapping[str, Any]) -> dict[str, object]:
    """What `nodeInfo.pods` shows of a pod: enough for spread and anti-affinity rules."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, MAPS) else {}
    labels = meta.get("labels")
    return {
        "namespace": str(meta.get("namespace") or "default"),
        "name": str(meta.get("name") or ""),
        "labels": {str(k): str(v) for k, v in labels.items()} if isinstance(labels, MAPS) else {},
    }
