"""The selectors of the Kubernetes API, read straight from objects: label selectors (with
the nil-versus-empty difference kube-scheduler keeps), node selector terms, and
tolerations against taints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Json = Mapping[str, Any]


def as_map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def maps(value: object) -> list[Mapping[str, Any]]:
    """The objects of a list field (anything else in it is skipped)."""
    return [v for v in as_list(value) if isinstance(v, Mapping)]


def labels_of(obj: Json) -> dict[str, str]:
    labels = as_map(as_map(obj.get("metadata")).get("labels"))
    return {str(k): str(v) for k, v in labels.items()}


def namespace_of(pod: Json) -> str:
    return str(as_map(pod.get("metadata")).get("namespace") or "default")


def name_of(obj: Json) -> str:
    return str(as_map(obj.get("metadata")).get("name") or "")


def _requirement(key: str, operator: str, values: list[str], labels: Mapping[str, str]) -> bool:
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    return False  # an operator the API server would have refused


def label_selector_matches(selector: object, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector as kube-scheduler reads it: a missing (nil) selector matches
    nothing, an empty one everything."""
    if not isinstance(selector, Mapping):
        return False
    for key, value in as_map(selector.get("matchLabels")).items():
        if labels.get(str(key)) != str(value):
            return False
    for req in maps(selector.get("matchExpressions")):
        values = [str(v) for v in as_list(req.get("values"))]
        if not _requirement(str(req.get("key", "")), str(req.get("operator", "")), values, labels):
            return False
    return True


def selector_is_empty(selector: object) -> bool:
    """An empty selector (`{}`): it matches every object."""
    selector = as_map(selector)
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def _node_requirement(req: Json, labels: Mapping[str, str]) -> bool:
    key = str(req.get("key", ""))
    operator = str(req.get("operator", ""))
    values = [str(v) for v in as_list(req.get("values"))]
    if operator in ("Gt", "Lt"):
        if key not in labels or len(values) != 1:
            return False
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return _requirement(key, operator, values, labels)


def node_selector_term_matches(term: object, node: Json) -> bool:
    """One NodeSelectorTerm: its expressions and fields all hold; an empty term matches
    no node."""
    term = as_map(term)
    expressions = as_list(term.get("matchExpressions"))
    fields = as_list(term.get("matchFields"))
    if not expressions and not fields:
        return False
    labels = labels_of(node)
    if not all(_node_requirement(as_map(r), labels) for r in expressions):
        return False
    field_values = {"metadata.name": name_of(node)}
    return all(_node_requirement(as_map(r), field_values) for r in fields)


def node_selector_matches(selector: object, node: Json) -> bool:
    """A NodeSelector: any of its terms."""
    return any(
        node_selector_term_matches(t, node)
        for t in as_list(as_map(selector).get("nodeSelectorTerms"))
    )


def tolerates(toleration: Json, taint: Json) -> bool:
    """core/v1 Toleration.ToleratesTaint (the alpha comparison operators are off by
    default in 1.37 and not emulated)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(tolerations: list[Any], taint: Json) -> bool:
    return any(tolerates(as_map(t), taint) for t in tolerations)
