"""The benchmark policy: ten rules (6 filters, 4 scores), as CEL and as a plain-Python
reference.

The same policy is hard-coded in the Go baseline (`go-extender/policy.go`). Each rule has:
- `expression`: the CEL a SchedulingPolicy author writes (optional fields, `quantity`);
- `portable`: the same check in the CEL subset celpy 0.5 parses (no `.?`/`orValue`, no
  Kubernetes libraries), or None when the rule needs Kubernetes quantities.

The reference (`Reference`) computes the verdicts directly, with each node's free CPU worked
out from the pods bound to it; the harness checks every server's replies against it, so a
fast but wrong extender cannot post a figure.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import TYPE_CHECKING, Any, Final, Literal

from bench.workload import (
    GPU_LABEL,
    GPU_RESOURCE,
    PREFERRED_ZONE_ANNOTATION,
    UNSCHEDULABLE_TAINT,
)

if TYPE_CHECKING:
    from policyext.policy import PolicySet

Json = dict[str, Any]
POLICY_NAME: Final = "benchmark"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"


@dataclass(frozen=True)
class Rule:
    name: str
    kind: Literal["filter", "score"]
    expression: str
    portable: str | None
    message: str = ""
    weight: int = 1


_LABELS = "node.metadata.labels"
_PREF = f"pod.metadata.annotations['{PREFERRED_ZONE_ANNOTATION}']"
# read optionally on both sides of `&&`: a plain read on the right would be guarded by the
# left's test only at run time (`validate` would warn of it; the value is the same)
_OPTIONAL_PREF = f"pod.metadata.?annotations[?'{PREFERRED_ZONE_ANNOTATION}'].orValue('')"

RULES: Final = (
    Rule(
        "node-ready",
        "filter",
        "node.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
        "node.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
        "node is not Ready",
    ),
    Rule(
        "no-spot-for-critical",
        "filter",
        "pod.metadata.?labels.?critical.orValue('') != 'true'"
        " || node.metadata.?labels.?lifecycle.orValue('') != 'spot'",
        "!(has(pod.metadata.labels) && 'critical' in pod.metadata.labels"
        " && pod.metadata.labels.critical == 'true')"
        f" || !(has({_LABELS}) && 'lifecycle' in {_LABELS} && {_LABELS}.lifecycle == 'spot')",
        "critical pods avoid spot nodes",
    ),
    Rule(
        "gpu-nodes-for-gpu-pods",
        "filter",
        f"!node.metadata.?labels[?'{GPU_LABEL}'].hasValue() || '{GPU_RESOURCE}' in podRequests",
        f"!(has({_LABELS}) && '{GPU_LABEL}' in {_LABELS})"
        " || pod.spec.containers.exists(c, has(c.resources.requests)"
        f" && '{GPU_RESOURCE}' in c.resources.requests)",
        "GPU nodes are reserved for GPU pods",
    ),
    Rule(
        "cpu-fits",
        "filter",
        "nodeInfo.allocatable.cpu.compareTo(podRequests.cpu) >= 0",
        None,
        "not enough allocatable CPU",
    ),
    Rule(
        "not-cordoned",
        "filter",
        f"!node.spec.?taints.orValue([]).exists(t, t.key == '{UNSCHEDULABLE_TAINT}')",
        f"!has(node.spec.taints) || !node.spec.taints.exists(t, t.key == '{UNSCHEDULABLE_TAINT}')",
        "node is cordoned",
    ),
    Rule(
        "free-cpu-fits",
        "filter",
        "nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0",
        None,
        "not enough free CPU",
    ),
    Rule(
        "more-cpu",
        "score",
        "nodeInfo.allocatable.cpu.asApproximateFloat() / 16.0 * 10.0",
        None,
        weight=3,
    ),
    Rule(
        "preferred-zone",
        "score",
        f"{_OPTIONAL_PREF} != ''"
        f" && node.metadata.?labels[?'{ZONE_LABEL}'].orValue('') == {_OPTIONAL_PREF} ? 10 : 0",
        "has(pod.metadata.annotations)"
        f" && '{PREFERRED_ZONE_ANNOTATION}' in pod.metadata.annotations"
        f" && {_PREF} != '' && has({_LABELS}) && '{ZONE_LABEL}' in {_LABELS}"
        f" && {_LABELS}['{ZONE_LABEL}'] == {_PREF} ? 10 : 0",
        weight=2,
    ),
    Rule(
        "on-demand",
        "score",
        "node.metadata.?labels.?lifecycle.orValue('') == 'on-demand' ? 10 : 0",
        f"has({_LABELS}) && 'lifecycle' in {_LABELS} && {_LABELS}.lifecycle == 'on-demand'"
        " ? 10 : 0",
        weight=1,
    ),
    Rule(
        "most-free-cpu",
        "score",
        "nodeInfo.free.cpu.asApproximateFloat() / 16.0 * 10.0",
        None,
        weight=2,
    ),
)


def scheduling_policy() -> Json:
    """The rules as a SchedulingPolicy document, for a policyext extender to load."""
    return {
        "apiVersion": "policyext.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": POLICY_NAME},
        "spec": {
            "failurePolicy": "Fail",
            "filters": [
                {"name": r.name, "expression": r.expression, "message": r.message}
                for r in RULES
                if r.kind == "filter"
            ],
            "scores": [
                {
                    "name": r.name,
                    "expression": r.expression,
                    "weight": r.weight,
                    "normalize": "Clamp",
                }
                for r in RULES
                if r.kind == "score"
            ],
        },
    }


def compiled() -> PolicySet:
    """The rules compiled by policyext, as its server loads them (the in-process
    measurements; the servers read `scheduling_policy()` from a file)."""
    from policyext.policy import load_policy_texts  # (the reference needs none of it)

    return load_policy_texts({"benchmark.json": json.dumps(scheduling_policy())})


# --- the reference semantics -----------------------------------------------------------

_DECIMAL_SUFFIXES: Final = {"m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
# "1E" is one exa, "1E3" a thousand: an exponent needs digits
_QUANTITY: Final = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE])?)"
)
TERMINATED_PHASES: Final = frozenset(("Succeeded", "Failed"))


def quantity_millis(text: str) -> int:
    """A Kubernetes quantity in thousandths, rounded up as `Quantity.MilliValue()` does."""
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(f"not a quantity: {text!r}")
    number, exponent, suffix = match.groups()
    value = Decimal(number)
    if exponent is not None:
        value = value.scaleb(int(exponent))
    elif suffix in _BINARY_SUFFIXES:
        value *= 2 ** _BINARY_SUFFIXES[suffix]
    else:
        value = value.scaleb(_DECIMAL_SUFFIXES[suffix or ""])
    return int((value * 1000).to_integral_value(rounding=ROUND_CEILING))


def pod_requests_millis(pod: Json, resource: str) -> int:
    """The pod's effective request of a resource (max(sum of containers, largest init
    container) plus overhead), in thousandths."""
    spec = pod.get("spec") or {}

    def request(container: Json) -> int:
        value = ((container.get("resources") or {}).get("requests") or {}).get(resource)
        return quantity_millis(value) if value else 0

    total = sum(request(c) for c in spec.get("containers") or [])
    total = max([total, *(request(c) for c in spec.get("initContainers") or [])])
    overhead = (spec.get("overhead") or {}).get(resource)
    return total + (quantity_millis(overhead) if overhead else 0)


def requested_cpu(bound_pods: Iterable[Json]) -> dict[str, int]:
    """Millicores requested on each node by the pods bound to it, terminated ones (Succeeded,
    Failed) left out, as kube-scheduler counts them."""
    out: dict[str, int] = {}
    for pod in bound_pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and (pod.get("status") or {}).get("phase") not in TERMINATED_PHASES:
            out[node] = out.get(node, 0) + pod_requests_millis(pod, "cpu")
    return out


def _requests_resource(pod: Json, resource: str) -> bool:
    spec = pod.get("spec") or {}
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    return any(
        resource in ((c.get("resources") or {}).get("requests") or {}) for c in containers
    ) or resource in (spec.get("overhead") or {})


@dataclass(frozen=True)
class PodFacts:
    """What the rules read of a pod, worked out once."""

    critical: bool
    wants_gpu: bool
    cpu: int  # effective request, millicores
    preferred_zone: str

    @classmethod
    def of(cls, pod: Json) -> PodFacts:
        meta = pod.get("metadata") or {}
        return cls(
            critical=(meta.get("labels") or {}).get("critical") == "true",
            wants_gpu=_requests_resource(pod, GPU_RESOURCE),
            cpu=pod_requests_millis(pod, "cpu"),
            preferred_zone=(meta.get("annotations") or {}).get(PREFERRED_ZONE_ANNOTATION, ""),
        )


@dataclass(frozen=True)
class NodeFacts:
    """What the rules read of a node and its pods, worked out once."""

    name: str
    ready: bool
    lifecycle: str
    gpu: bool
    cordoned: bool
    zone: str | None
    allocatable_cpu: int  # millicores
    free_cpu: int  # allocatable minus what the active bound pods request

    @classmethod
    def of(cls, node: Json, requested_cpu: int = 0) -> NodeFacts:
        labels = node["metadata"].get("labels") or {}
        conditions = node.get("status", {}).get("conditions") or []
        taints = node.get("spec", {}).get("taints") or []
        allocatable = quantity_millis(node["status"]["allocatable"]["cpu"])
        return cls(
            name=node["metadata"]["name"],
            ready=any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
            lifecycle=labels.get("lifecycle", ""),
            gpu=GPU_LABEL in labels,
            cordoned=any(t.get("key") == UNSCHEDULABLE_TAINT for t in taints),
            zone=labels.get(ZONE_LABEL),
            allocatable_cpu=allocatable,
            free_cpu=allocatable - requested_cpu,
        )


def rejections(pod: PodFacts, node: NodeFacts) -> list[str]:
    """The names of the filter rules the node fails, in rule order."""
    failed = []
    if not node.ready:
        failed.append("node-ready")
    if pod.critical and node.lifecycle == "spot":
        failed.append("no-spot-for-critical")
    if node.gpu and not pod.wants_gpu:
        failed.append("gpu-nodes-for-gpu-pods")
    if node.allocatable_cpu < pod.cpu:
        failed.append("cpu-fits")
    if node.cordoned:
        failed.append("not-cordoned")
    if node.free_cpu < pod.cpu:
        failed.append("free-cpu-fits")
    return failed


def raw_scores(pod: PodFacts, node: NodeFacts) -> dict[str, float]:
    """Each score rule's value for the node, before clamping."""
    zone = pod.preferred_zone
    return {
        "more-cpu": node.allocatable_cpu / 1000 / 16.0 * 10.0,
        "preferred-zone": 10.0 if zone != "" and node.zone == zone else 0.0,
        "on-demand": 10.0 if node.lifecycle == "on-demand" else 0.0,
        "most-free-cpu": node.free_cpu / 1000 / 16.0 * 10.0,
    }


_WEIGHTS: Final = {r.name: r.weight for r in RULES if r.kind == "score"}


def final_score(pod: PodFacts, node: NodeFacts) -> int:
    """floor(Σ w·s / Σ w + 0.5), each s clamped into [0, 10]: the integer the extender replies."""
    values = raw_scores(pod, node)
    total = sum(w * min(max(values[name], 0.0), 10.0) for name, w in _WEIGHTS.items())
    return math.floor(total / sum(_WEIGHTS.values()) + 0.5)


def expected_value(rule: Rule, pod: PodFacts, node: NodeFacts) -> bool | float:
    """What the rule's expression evaluates to: pass/fail for a filter, the unclamped
    number for a score."""
    if rule.kind == "filter":
        return rule.name not in rejections(pod, node)
    return raw_scores(pod, node)[rule.name]


@dataclass(frozen=True)
class Verdicts:
    feasible: list[str]
    rejected: dict[str, list[str]]  # node name -> failed rule names
    scores: dict[str, int]


@dataclass
class Reference:
    """What a correct extender answers, for a cluster of nodes and the pods bound to them."""

    nodes: Sequence[Json]
    bound_pods: Sequence[Json] = ()
    facts: dict[str, NodeFacts] = field(init=False)

    def __post_init__(self) -> None:
        requested = requested_cpu(self.bound_pods)
        self.facts = {
            n["metadata"]["name"]: NodeFacts.of(n, requested.get(n["metadata"]["name"], 0))
            for n in self.nodes
        }

    def node(self, node: Json | str) -> NodeFacts:
        return self.facts[node if isinstance(node, str) else node["metadata"]["name"]]

    def verdicts(self, pod: Json | PodFacts, names: Sequence[str] | None = None) -> Verdicts:
        """The filter verdicts over `names` (default: every node) and the score of each."""
        facts = pod if isinstance(pod, PodFacts) else PodFacts.of(pod)
        chosen = [self.facts[n] for n in names] if names is not None else self.facts.values()
        feasible: list[str] = []
        rejected: dict[str, list[str]] = {}
        scores: dict[str, int] = {}
        for node in chosen:
            failed = rejections(facts, node)
            if failed:
                rejected[node.name] = failed
            else:
                feasible.append(node.name)
            scores[node.name] = final_score(facts, node)
        return Verdicts(feasible, rejected, scores)

    def restricted(self, verdicts: Verdicts, names: Iterable[str]) -> Verdicts:
        """The scores of `verdicts` for `names` only (prioritize is sent the feasible nodes)."""
        chosen = set(names)
        scores = {n: s for n, s in verdicts.scores.items() if n in chosen}
        return Verdicts([n for n in verdicts.feasible if n in chosen], {}, scores)


def evaluate(pod: Json, nodes: list[Json], bound_pods: Sequence[Json] = ()) -> Verdicts:
    """What a correct extender answers for the pod over these nodes."""
    return Reference(nodes, bound_pods).verdicts(pod)
