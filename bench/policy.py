"""The benchmark policy: eight rules, as CEL and as a plain-Python reference.

The same policy is hard-coded in the Go baseline (`go-extender/policy.go`). Each rule has:
- `expression`: the CEL a SchedulingPolicy author writes (optional fields, `quantity`);
- `portable`: the same check in the CEL subset celpy 0.5 parses (no `.?`/`orValue`, no
  Kubernetes libraries), or None when the rule needs Kubernetes quantities.

The reference functions compute the verdicts directly; the harness checks every server's
replies against them, so a fast but wrong extender cannot post a figure.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any, Final, Literal

from bench.workload import (
    GPU_LABEL,
    GPU_RESOURCE,
    PREFERRED_ZONE_ANNOTATION,
    UNSCHEDULABLE_TAINT,
)

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
        "more-cpu",
        "score",
        "nodeInfo.allocatable.cpu.asApproximateFloat() / 16.0 * 10.0",
        None,
        weight=3,
    ),
    Rule(
        "preferred-zone",
        "score",
        f"pod.metadata.?annotations[?'{PREFERRED_ZONE_ANNOTATION}'].orValue('') != ''"
        f" && node.metadata.?labels[?'{ZONE_LABEL}'].orValue('') == {_PREF} ? 10 : 0",
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


# --- the reference semantics -----------------------------------------------------------

_DECIMAL_SUFFIXES: Final = {"m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
# "1E" is one exa, "1E3" a thousand: an exponent needs digits
_QUANTITY: Final = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE])?)"
)


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


def _requests_resource(pod: Json, resource: str) -> bool:
    spec = pod.get("spec") or {}
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    return any(
        resource in ((c.get("resources") or {}).get("requests") or {}) for c in containers
    ) or resource in (spec.get("overhead") or {})


def rejections(pod: Json, node: Json) -> list[str]:
    """The names of the filter rules the node fails, in rule order."""
    labels = node["metadata"].get("labels") or {}
    pod_labels = pod["metadata"].get("labels") or {}
    failed = []
    conditions = node.get("status", {}).get("conditions") or []
    if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
        failed.append("node-ready")
    if pod_labels.get("critical") == "true" and labels.get("lifecycle") == "spot":
        failed.append("no-spot-for-critical")
    if GPU_LABEL in labels and not _requests_resource(pod, GPU_RESOURCE):
        failed.append("gpu-nodes-for-gpu-pods")
    if quantity_millis(node["status"]["allocatable"]["cpu"]) < pod_requests_millis(pod, "cpu"):
        failed.append("cpu-fits")
    if any(t.get("key") == UNSCHEDULABLE_TAINT for t in node.get("spec", {}).get("taints") or []):
        failed.append("not-cordoned")
    return failed


def raw_scores(pod: Json, node: Json) -> dict[str, float]:
    """Each score rule's value for the node, before clamping."""
    labels = node["metadata"].get("labels") or {}
    preferred = (pod["metadata"].get("annotations") or {}).get(PREFERRED_ZONE_ANNOTATION, "")
    cores = quantity_millis(node["status"]["allocatable"]["cpu"]) / 1000
    return {
        "more-cpu": cores / 16.0 * 10.0,
        "preferred-zone": 10.0 if preferred != "" and labels.get(ZONE_LABEL) == preferred else 0.0,
        "on-demand": 10.0 if labels.get("lifecycle") == "on-demand" else 0.0,
    }


def final_score(pod: Json, node: Json) -> int:
    """floor(Σ w·s / Σ w + 0.5), each s clamped into [0, 10]: the integer the extender replies."""
    weights = {r.name: r.weight for r in RULES if r.kind == "score"}
    values = raw_scores(pod, node)
    total = sum(weights[name] * min(max(values[name], 0.0), 10.0) for name in weights)
    return math.floor(total / sum(weights.values()) + 0.5)


def expected_value(rule: Rule, pod: Json, node: Json) -> bool | float:
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


def evaluate(pod: Json, nodes: list[Json]) -> Verdicts:
    """What a correct extender answers for the pod over these nodes."""
    feasible: list[str] = []
    rejected: dict[str, list[str]] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        failed = rejections(pod, node)
        if failed:
            rejected[name] = failed
        else:
            feasible.append(name)
    scores = {n["metadata"]["name"]: final_score(pod, n) for n in nodes}
    return Verdicts(feasible, rejected, scores)
