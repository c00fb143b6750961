"""The cluster as kube-scheduler's cache holds it: per node, the pods bound to it and not
finished, what they request (as requested and with the non-zero defaults scoring uses),
the host ports they hold and the images the node has."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from policyext.cel import Quantity
from policyext.offline.scheduler.affinity_terms import has_namespace_selector
from policyext.offline.scheduler.namespaces import Namespaces
from policyext.offline.scheduler.selectors import as_list, as_map, labels_of, maps, name_of
from policyext.policy import Resources, node_allocatable, pod_is_active, pod_requests

Json = Mapping[str, Any]
Amounts = dict[str, int]

# what a container that requests no cpu or memory counts as when scoring (schedutil's
# DefaultMilliCPURequest and DefaultMemoryRequest)
NON_ZERO_DEFAULTS: Final = {
    "cpu": Quantity.from_milli(100),
    "memory": Quantity.from_int(200 * 1024 * 1024),
}


def amounts(resources: Resources) -> Amounts:
    """Quantities in the scheduler's integer units: millicores for cpu, whole units (bytes,
    devices) for everything else."""
    return {
        name: (q.milli_value() if name == "cpu" else q.value()) for name, q in resources.items()
    }


def requests_of(pod: Json) -> Amounts:
    return amounts(pod_requests(pod, strict=False))


def non_zero_requests_of(pod: Json) -> Amounts:
    return amounts(pod_requests(pod, strict=False, missing=NON_ZERO_DEFAULTS))


def _add(total: Amounts, extra: Mapping[str, int]) -> None:
    for name, value in extra.items():
        total[name] = total.get(name, 0) + value


HostPort = tuple[str, str, int]  # (host IP, protocol, port)


def host_ports(pod: Json) -> list[HostPort]:
    """The host ports a pod's containers ask for (those with hostPort > 0)."""
    out: list[HostPort] = []
    for container in as_list(as_map(pod.get("spec")).get("containers")):
        for port in maps(as_map(container).get("ports")):
            number = port.get("hostPort")
            if isinstance(number, int) and number > 0:
                host_ip = str(port.get("hostIP") or "0.0.0.0")
                out.append((host_ip, str(port.get("protocol") or "TCP"), number))
    return out


def normalized_image(name: str) -> str:
    """An image name as ImageLocality compares them: with `:latest` when it has no tag or
    digest."""
    last = name.rsplit("/", 1)[-1]
    if ":" not in last and "@" not in last:
        return name + ":latest"
    return name


@dataclass
class NodeState:
    node: Json
    name: str
    labels: dict[str, str]
    allocatable: Amounts
    pods: list[Json] = field(default_factory=list)
    requested: Amounts = field(default_factory=dict)
    non_zero_requested: Amounts = field(default_factory=dict)
    used_ports: list[HostPort] = field(default_factory=list)
    images: dict[str, int] = field(default_factory=dict)  # normalized name -> size in bytes

    @property
    def taints(self) -> list[Json]:
        return [as_map(t) for t in as_list(as_map(self.node.get("spec")).get("taints"))]

    def add_pod(self, pod: Json) -> None:
        self.pods.append(pod)
        _add(self.requested, requests_of(pod))
        _add(self.non_zero_requested, non_zero_requests_of(pod))
        self.used_ports.extend(host_ports(pod))


def _images(node: Json) -> dict[str, int]:
    out: dict[str, int] = {}
    for image in maps(as_map(node.get("status")).get("images")):
        size = image.get("sizeBytes")
        for name in as_list(image.get("names")):
            out[normalized_image(str(name))] = size if isinstance(size, int) else 0
    return out


class Cluster:
    """The nodes (in the order given), the pods bound to them and the namespaces' labels.
    `has_pods` is False when only nodes are known: the nodes then look empty.
    `namespace_selectors` says whether a bound pod's (anti-)affinity selects namespaces by
    label (what the namespaces' labels, when unknown, would change)."""

    def __init__(
        self,
        nodes: Sequence[Json],
        pods: Iterable[Json] | None,
        namespaces: Iterable[Json] | None = None,
    ) -> None:
        self.has_pods = pods is not None
        self.namespaces = Namespaces(namespaces)
        self.namespace_selectors = False
        self.nodes: list[NodeState] = []
        self.by_name: dict[str, NodeState] = {}
        for node in nodes:
            state = NodeState(
                node,
                name_of(node),
                labels_of(node),
                amounts(node_allocatable(node)),
                images=_images(node),
            )
            self.nodes.append(state)
            self.by_name[state.name] = state
        for pod in pods or ():
            node_name = as_map(pod.get("spec")).get("nodeName")
            if node_name and pod_is_active(pod) and node_name in self.by_name:
                self.by_name[node_name].add_pod(pod)
                if not self.namespace_selectors and has_namespace_selector(pod):
                    self.namespace_selectors = True
        # how many nodes have each image (ImageLocality spreads its score by it)
        self.image_nodes: Counter[str] = Counter()
        for state in self.nodes:
            self.image_nodes.update(state.images.keys())
