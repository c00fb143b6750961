"""kube-scheduler's decision with policyext as its extender: the plugins filter, the
policies filter the nodes the plugins accept (the extender's filter verb), the plugins and
the policies score the nodes both accept (the prioritize verb, for the same nodes), and the
node with the highest total wins, as kube-scheduler adds them up:

    total = Σ plugin score (0..100) × plugin weight
            + policy score (0..10) × extender weight × (MaxNodeScore 100 / MaxExtenderPriority 10)

Without the emulation (`cluster` None) only the policies decide, as the extender alone sees it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from policyext.cel import Timestamp
from policyext.offline.scheduler import KUBE_SCHEDULER_VERSION
from policyext.offline.scheduler.affinity_terms import has_namespace_selector
from policyext.offline.scheduler.cluster import Cluster
from policyext.offline.scheduler.framework import (
    FILTERS,
    WEIGHTS,
    PluginScore,
    run_filters,
    run_scores,
)
from policyext.offline.scheduler.status import MAX_NODE_SCORE, Rejected
from policyext.policy import Evaluation, NodeSource, NodeVerdict, PolicySet, RuleScore, evaluate

Json = Mapping[str, Any]
MAX_EXTENDER_PRIORITY: Final = 10
EMULATED: Final = f"kube-scheduler {KUBE_SCHEDULER_VERSION} default plugins"
NO_NODES_MESSAGE: Final = "0/{} nodes are available:"
NAMESPACES_ASSUMED: Final = (
    "namespaces: none known, so a namespaceSelector matches a namespace by its name label "
    "(kubernetes.io/metadata.name) alone; save them too: "
    "kubectl get nodes,pods,namespaces -A -o yaml"
)


@dataclass
class NodeDecision:
    """One node: what the plugins and the policies said of it, and its total score when
    both accept it."""

    name: str
    policy: NodeVerdict  # the policies' rejections, audits and ignored errors
    scheduler: Rejected | None = None  # the plugin that rejected the node
    plugin_scores: Sequence[PluginScore] = ()
    policy_scores: Sequence[RuleScore] = ()  # each score rule, when scored
    policy_score: int | None = None  # the policies' final 0..10 score, when scored
    total: int | None = None

    @property
    def feasible(self) -> bool:
        return self.scheduler is None and self.policy.feasible

    @property
    def unresolvable(self) -> bool:
        if self.scheduler is not None:
            return self.scheduler.unresolvable
        return self.policy.unresolvable

    @property
    def rejected_by(self) -> str | None:
        """`scheduler`, `policies` or None: the side that rejected the node (the plugins
        run first, so a node they reject never reaches the extender)."""
        if self.scheduler is not None:
            return "scheduler"
        return None if self.policy.feasible else "policies"

    def reasons(self) -> list[str]:
        """What kube-scheduler's FailedScheduling counts for this node: the plugin's
        reasons, else the message the extender's filter sends for it."""
        if self.scheduler is not None:
            return list(self.scheduler.reasons)
        if not self.policy.feasible:
            return [self.policy.message()]  # what the extender's filter sends for the node
        return []


@dataclass
class Decision:
    evaluation: Evaluation  # the policies' filters over every node (matches, counts)
    nodes: list[NodeDecision]
    emulated: bool
    extender_weight: int = 1
    has_pods: bool = True
    namespaces_known: bool = True
    # the namespaces' labels are unknown and a namespaceSelector of the pod or of a bound
    # pod was matched against the assumed ones (NAMESPACES_ASSUMED)
    namespaces_assumed: bool = False
    plugins: Sequence[str] = field(default_factory=lambda: list(FILTERS))

    def feasible(self) -> list[NodeDecision]:
        return [n for n in self.nodes if n.feasible]

    def best(self) -> NodeDecision | None:
        """The feasible node with the highest total (the first of equals)."""
        best: NodeDecision | None = None
        for n in self.feasible():
            if best is None or (n.total or 0) > (best.total or 0):
                best = n
        return best

    def tied(self) -> list[str]:
        """Every node the scheduler might pick: it chooses among equal totals at random."""
        best = self.best()
        if best is None:
            return []
        return [n.name for n in self.feasible() if (n.total or 0) == (best.total or 0)]

    def unschedulable_message(self) -> str | None:
        """kube-scheduler's FailedScheduling message up to its preemption part, when no
        node is feasible: `0/N nodes are available: <count> <reason>, ....`"""
        if self.feasible():
            return None
        counts: Counter[str] = Counter()
        for n in self.nodes:
            counts.update(n.reasons())
        histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
        message = NO_NODES_MESSAGE.format(len(self.nodes))
        if histogram:
            message += " " + ", ".join(histogram) + "."
        return message


def decide(
    policy_set: PolicySet,
    pod: Json,
    nodes: Sequence[Json],
    source: NodeSource | None,
    now: Timestamp | None,
    cluster: Cluster | None,
    *,
    extender_weight: int = 1,
    cache_nodes: bool = False,
) -> Decision:
    """The decision for `pod` over `nodes` (the objects `cluster` was built from, in the
    same order). `cluster` None turns the emulation off: the policies alone decide."""
    filtered = evaluate(policy_set, pod, nodes, source, now, scores=False, cache_nodes=cache_nodes)
    verdicts = filtered.nodes
    rejected = run_filters(pod, cluster) if cluster is not None else {}
    decisions = [NodeDecision(v.name, v, rejected.get(v.name)) for v in verdicts]
    candidates = [i for i, d in enumerate(decisions) if d.feasible]
    scored = evaluate(
        policy_set,
        pod,
        [nodes[i] for i in candidates],
        source,
        now,
        filters=False,
        cache_nodes=cache_nodes,
    )
    for i, verdict in zip(candidates, scored.nodes, strict=True):
        decisions[i].policy_scores = verdict.scores
        decisions[i].policy_score = verdict.score
    if cluster is not None:
        states = [cluster.nodes[i] for i in candidates]
        for i, plugin_scores in zip(candidates, run_scores(pod, cluster, states), strict=True):
            d = decisions[i]
            d.plugin_scores = plugin_scores
            extender = (
                (d.policy_score or 0) * extender_weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
            )
            d.total = sum(s.weighted for s in plugin_scores) + extender
    else:
        for i in candidates:
            decisions[i].total = decisions[i].policy_score
    filtered.evaluations += scored.evaluations
    filtered.errors += scored.errors
    return Decision(
        filtered,
        decisions,
        emulated=cluster is not None,
        extender_weight=extender_weight,
        has_pods=cluster.has_pods if cluster is not None else True,
        namespaces_known=cluster.namespaces.known if cluster is not None else True,
        namespaces_assumed=cluster is not None
        and not cluster.namespaces.known
        and (cluster.namespace_selectors or has_namespace_selector(pod)),
    )


def describe(decision: Decision) -> list[str]:
    """What decided, in a few lines: the emulated scheduler, its plugins and weights, and
    the extender's weight; or that the policies decided alone."""
    if not decision.emulated:
        return ["scheduler: not emulated (--policies-only): the policies alone decide"]
    factor = decision.extender_weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
    first = f"scheduler: {EMULATED}, policies as an extender of weight {decision.extender_weight}"
    first += f" (policy score x{factor})"
    if not decision.has_pods:
        first += "; no pods known: every node looks empty"
    lines = [
        first,
        f"  filters: {', '.join(decision.plugins)}",
        "  scores: " + ", ".join(f"{p} x{w}" for p, w in WEIGHTS.items()),
    ]
    if decision.namespaces_assumed:
        lines.append(f"  {NAMESPACES_ASSUMED}")
    return lines


def scheduler_to_dict(decision: Decision) -> dict[str, Any] | None:
    """The emulated scheduler as data (None when not emulated)."""
    if not decision.emulated:
        return None
    return {
        "emulated": EMULATED,
        "filters": list(decision.plugins),
        "scores": dict(WEIGHTS),
        "extenderWeight": decision.extender_weight,
        "podsKnown": decision.has_pods,
        "namespacesKnown": decision.namespaces_known,
        "namespaceLabelsAssumed": decision.namespaces_assumed,
    }
