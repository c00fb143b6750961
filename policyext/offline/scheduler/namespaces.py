"""The namespaces' labels as kube-scheduler's namespace lister knows them, for the
namespaceSelector of pod (anti-)affinity terms.

Given the Namespace objects (a snapshot that holds them, or the live cluster), a namespace
has the labels of its object, and one without an object has none (kube-scheduler's
"assuming empty set of namespace labels"). Without any Namespace object, each namespace
is assumed to exist with the one label the API server gives every namespace,
`kubernetes.io/metadata.name`: a selector on a namespace's name matches as in the cluster,
one on any other label matches no namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from policyext.offline.scheduler.selectors import label_selector_matches, labels_of, name_of

Json = Mapping[str, Any]
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"


class Namespaces:
    """`known` is False when no Namespace object was given (see the module's docstring)."""

    def __init__(self, objects: Iterable[Json] | None) -> None:
        self._labels = {name_of(o): labels_of(o) for o in objects or ()}
        self.known = bool(self._labels)

    def labels(self, name: str) -> Mapping[str, str]:
        if not self.known:
            return {NAMESPACE_NAME_LABEL: name}
        return self._labels.get(name, {})

    def selected(self, selector: object) -> frozenset[str]:
        """The names of the known namespaces whose labels match a selector (the lister's
        List)."""
        return frozenset(
            name
            for name, labels in self._labels.items()
            if label_selector_matches(selector, labels)
        )
