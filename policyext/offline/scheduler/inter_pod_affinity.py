"""InterPodAffinity: the pod's required pod affinity and anti-affinity, and the required
anti-affinity of the pods already running, per topology domain; the preferred terms of
both sides (and the running pods' required affinity, at weight 1) score."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Final

from policyext.offline.scheduler.affinity_terms import Term, has_affinity, own_terms, terms
from policyext.offline.scheduler.cluster import Cluster, NodeState
from policyext.offline.scheduler.status import MAX_NODE_SCORE, Pod, Rejected

NAME: Final = "InterPodAffinity"
AFFINITY_REASON: Final = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON: Final = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
HARD_POD_AFFINITY_WEIGHT: Final = 1  # the plugin's default hardPodAffinityWeight

Domain = tuple[str, str]  # (topology key, value)


@dataclass
class Counts:
    """PreFilter's state: per topology domain, the running pods that match every required
    affinity term of the pod, that match one of its anti-affinity terms, and whose own
    anti-affinity the pod would violate."""

    affinity_terms: list[Term]
    anti_affinity_terms: list[Term]
    affinity: Counter[Domain]
    anti_affinity: Counter[Domain]
    existing_anti_affinity: Counter[Domain]
    self_match: bool


def _domain(node: NodeState, key: str) -> Domain | None:
    value = node.labels.get(key)
    return None if value is None else (key, value)


def prefilter(pod: Pod, cluster: Cluster) -> Counts:
    namespaces = cluster.namespaces
    affinity_terms = own_terms(pod.obj, "podAffinity", True, namespaces)
    anti_terms = own_terms(pod.obj, "podAntiAffinity", True, namespaces)
    counts = Counts(affinity_terms, anti_terms, Counter(), Counter(), Counter(), False)
    counts.self_match = bool(affinity_terms) and all(
        t.matches(pod.obj, namespaces) for t in affinity_terms
    )
    for node in cluster.nodes:
        for existing in node.pods:
            if has_affinity(existing):
                for term in terms(existing, "podAntiAffinity", True):
                    domain = _domain(node, term.topology_key)
                    if domain is not None and term.matches(pod.obj, namespaces):
                        counts.existing_anti_affinity[domain] += 1
            if affinity_terms and all(t.matches(existing, namespaces) for t in affinity_terms):
                for term in affinity_terms:
                    domain = _domain(node, term.topology_key)
                    if domain is not None:
                        counts.affinity[domain] += 1
            for term in anti_terms:
                domain = _domain(node, term.topology_key)
                if domain is not None and term.matches(existing, namespaces):
                    counts.anti_affinity[domain] += 1
    return counts


def _affinity_holds(counts: Counts, node: NodeState) -> bool:
    found = True
    for term in counts.affinity_terms:
        domain = _domain(node, term.topology_key)
        if domain is None:
            return False  # every topology key must be on the node, even for self-affinity
        if counts.affinity[domain] <= 0:
            found = False
    # the first pod of a group that has affinity to itself may go anywhere
    return found or (not counts.affinity and counts.self_match)


def check(counts: Counts, node: NodeState) -> Rejected | None:
    if counts.affinity_terms and not _affinity_holds(counts, node):
        return Rejected(NAME, (AFFINITY_REASON,), True)
    for term in counts.anti_affinity_terms:
        domain = _domain(node, term.topology_key)
        if domain is not None and counts.anti_affinity[domain] > 0:
            return Rejected(NAME, (ANTI_AFFINITY_REASON,), False)
    if any(counts.existing_anti_affinity[(k, v)] > 0 for k, v in node.labels.items()):
        return Rejected(NAME, (EXISTING_ANTI_AFFINITY_REASON,), False)
    return None


def _add(
    scores: dict[Domain, int], term: Term, weight: int, pod_matches: bool, node: NodeState
) -> None:
    if pod_matches:
        domain = _domain(node, term.topology_key)
        if domain is not None:
            scores[domain] = scores.get(domain, 0) + weight


def scores(pod: Pod, nodes: list[NodeState], cluster: Cluster) -> list[int] | None:
    """None when neither the pod nor any running pod has terms that score (skipped)."""
    namespaces = cluster.namespaces
    preferred = own_terms(pod.obj, "podAffinity", False, namespaces)
    preferred_anti = own_terms(pod.obj, "podAntiAffinity", False, namespaces)
    everyone = bool(preferred or preferred_anti)
    by_domain: dict[Domain, int] = {}
    for node in cluster.nodes:
        if not node.labels:
            continue
        for existing in node.pods:
            if not everyone and not has_affinity(existing):
                continue
            for term in preferred:
                _add(by_domain, term, term.weight, term.matches(existing, namespaces), node)
            for term in preferred_anti:
                _add(by_domain, term, -term.weight, term.matches(existing, namespaces), node)
            for term in terms(existing, "podAffinity", True):
                weight = HARD_POD_AFFINITY_WEIGHT
                _add(by_domain, term, weight, term.matches(pod.obj, namespaces), node)
            for term in terms(existing, "podAffinity", False):
                _add(by_domain, term, term.weight, term.matches(pod.obj, namespaces), node)
            for term in terms(existing, "podAntiAffinity", False):
                _add(by_domain, term, -term.weight, term.matches(pod.obj, namespaces), node)
    if not by_domain:
        return None
    raw = [
        sum(v for (k, value), v in by_domain.items() if node.labels.get(k) == value)
        for node in nodes
    ]
    low, high = min(raw, default=0), max(raw, default=0)
    if high <= low:
        return [0] * len(nodes)
    return [int(MAX_NODE_SCORE * ((r - low) / (high - low))) for r in raw]
