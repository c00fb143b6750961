"""What a filter plugin says of a node it rejects, and the pod as the plugins read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final

from policyext.offline.scheduler.selectors import as_list, as_map, labels_of, namespace_of

Json = Mapping[str, Any]
MAX_NODE_SCORE: Final = 100  # kube-scheduler's framework.MaxNodeScore


@dataclass(frozen=True)
class Rejected:
    """A filter plugin's verdict on a node: its reasons, as FailedScheduling writes them,
    and whether preemption could help (`unresolvable`: it cannot)."""

    plugin: str
    reasons: tuple[str, ...]
    unresolvable: bool


class Pod:
    """The fields of the pod being scheduled that the plugins read, read once."""

    def __init__(self, pod: Json) -> None:
        self.obj = pod
        self.spec = as_map(pod.get("spec"))
        self.labels = labels_of(pod)
        self.namespace = namespace_of(pod)

    @cached_property
    def tolerations(self) -> list[Any]:
        return as_list(self.spec.get("tolerations"))

    @cached_property
    def affinity(self) -> Mapping[str, Any]:
        return as_map(self.spec.get("affinity"))


def default_normalize(scores: list[int], reverse: bool) -> list[int]:
    """The scheduler's DefaultNormalizeScore: scale to 0..100 by the highest score,
    reversed when fewer is better."""
    highest = max(scores, default=0)
    if highest == 0:
        return [MAX_NODE_SCORE if reverse else 0 for _ in scores]
    out = [MAX_NODE_SCORE * s // highest for s in scores]
    return [MAX_NODE_SCORE - s for s in out] if reverse else out
