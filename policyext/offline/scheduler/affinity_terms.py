"""Pod (anti-)affinity terms as kube-scheduler reads them: which namespaces a term covers,
its label selector (with matchLabelKeys and mismatchLabelKeys merged in), its topology
key, and whether a pod matches it. A namespaceSelector is matched against the labels of
`Namespaces` (see there what is assumed when no Namespace object is known).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from policyext.offline.scheduler.namespaces import Namespaces
from policyext.offline.scheduler.selectors import (
    as_list,
    as_map,
    label_selector_matches,
    labels_of,
    maps,
    namespace_of,
    selector_is_empty,
)

Json = Mapping[str, Any]


@dataclass(frozen=True)
class Term:
    namespaces: frozenset[str]
    namespace_selector: object  # a LabelSelector, or None (no namespace by selector)
    selector: object  # a LabelSelector, or None (no pod)
    topology_key: str
    weight: int = 1

    def matches(self, pod: Json, namespaces: Namespaces) -> bool:
        namespace = namespace_of(pod)
        if namespace not in self.namespaces and not label_selector_matches(
            self.namespace_selector, namespaces.labels(namespace)
        ):
            return False
        return label_selector_matches(self.selector, labels_of(pod))

    def resolved(self, namespaces: Namespaces) -> Term:
        """A term of the pod being scheduled as PreFilter and PreScore merge it: the known
        namespaces its namespaceSelector selects join its namespaces and the selector then
        matches nothing more. An empty selector is kept: it matches every namespace, one
        without an object too."""
        selector = self.namespace_selector
        if not namespaces.known or not isinstance(selector, Mapping) or selector_is_empty(selector):
            return self
        return replace(
            self,
            namespaces=self.namespaces | namespaces.selected(selector),
            namespace_selector=None,
        )


def _selector(term: Json, owner_labels: Mapping[str, str]) -> object:
    selector = term.get("labelSelector")
    match_keys = [str(k) for k in as_list(term.get("matchLabelKeys"))]
    mismatch_keys = [str(k) for k in as_list(term.get("mismatchLabelKeys"))]
    if selector is None or not (match_keys or mismatch_keys):
        return selector
    expressions = list(as_list(as_map(selector).get("matchExpressions")))
    for key in match_keys:
        if key in owner_labels:
            expressions.append({"key": key, "operator": "In", "values": [owner_labels[key]]})
    for key in mismatch_keys:
        if key in owner_labels:
            expressions.append({"key": key, "operator": "NotIn", "values": [owner_labels[key]]})
    return {**as_map(selector), "matchExpressions": expressions}


def _term(owner: Json, raw: object, weight: int = 1) -> Term:
    term = as_map(raw)
    namespaces = [str(n) for n in as_list(term.get("namespaces"))]
    namespace_selector = term.get("namespaceSelector")
    if not namespaces and namespace_selector is None:
        namespaces = [namespace_of(owner)]
    return Term(
        frozenset(namespaces),
        namespace_selector,
        _selector(term, labels_of(owner)),
        str(term.get("topologyKey") or ""),
        weight,
    )


def own_terms(pod: Json, kind: str, required: bool, namespaces: Namespaces) -> list[Term]:
    """`terms` of the pod being scheduled, resolved against the namespaces."""
    return [t.resolved(namespaces) for t in terms(pod, kind, required)]


def has_namespace_selector(pod: Json) -> bool:
    """Whether one of the pod's (anti-)affinity terms selects namespaces by label."""
    return any(
        t.namespace_selector is not None
        for kind in ("podAffinity", "podAntiAffinity")
        for required in (True, False)
        for t in terms(pod, kind, required)
    )


def terms(pod: Json, kind: str, required: bool) -> list[Term]:
    """The pod's `podAffinity` or `podAntiAffinity` (kind) terms, required or preferred."""
    affinity = as_map(as_map(as_map(pod.get("spec")).get("affinity")).get(kind))
    if required:
        return [
            _term(pod, t)
            for t in as_list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
        ]
    out = []
    for weighted in maps(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
        weight = weighted.get("weight")
        out.append(
            _term(pod, weighted.get("podAffinityTerm"), weight if isinstance(weight, int) else 0)
        )
    return out


def has_affinity(pod: Json) -> bool:
    affinity = as_map(as_map(pod.get("spec")).get("affinity"))
    return bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))
