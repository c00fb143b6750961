"""SchedulingPolicy objects watched through the API (`--rules-crd`).

Every SchedulingPolicy of the cluster (the CRD of charts/policyext/crds/) is listed and
watched with the reflector that keeps the node caches, so a dropped stream resumes and an
API server restart is survived. Each object is one policy text, named
`schedulingpolicy/NAME` in errors: the object written as YAML with what its author wrote
(apiVersion, kind, its name, its spec; not what the API server added, nor the status), so
that a status update or a new resourceVersion reloads nothing. Each text's object
generation goes with it (what the status says is served); `on_objects` hears of every
object as the API server has it, status included (status_writer.py compares with it).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from policyext.cluster.client import ApiClients
from policyext.cluster.watch import Json, ReflectedSource, Reflector
from policyext.policy import TEXT_PREFIX, authored_text

GROUP: Final = "policyext.io"
VERSION: Final = "v1alpha1"
PLURAL: Final = "schedulingpolicies"
RESOURCE: Final = f"{PLURAL}.{GROUP}"

OnChange = Callable[["PolicyObjects"], None]
OnProblem = Callable[[str], None]
OnObjects = Callable[[dict[str, Json]], None]


@dataclass(frozen=True, slots=True)
class PolicyObjects:
    """The SchedulingPolicies the API server last listed or reported, as policy texts, and
    the metadata.generation of each (by text name)."""

    texts: dict[str, str]
    generations: dict[str, int] = field(default_factory=dict)

    @property
    def description(self) -> str:
        return f"{RESOURCE} ({len(self.texts)})"


def policy_text(obj: Json) -> str:
    """The part of the object its author wrote, as YAML (policy.authored_text: the same
    text the admission webhook checks)."""
    return authored_text(obj)


class PolicyObjectsWatch(ReflectedSource):
    """Keeps every SchedulingPolicy and reports each change of what their authors wrote."""

    def __init__(
        self,
        api: ApiClients,
        on_change: OnChange,
        *,
        on_problem: OnProblem | None = None,
        on_objects: OnObjects | None = None,
        watch_timeout: int = 300,
    ) -> None:
        super().__init__(RESOURCE, on_problem)
        self.on_change = on_change
        self.on_objects = on_objects
        self.state: PolicyObjects | None = None  # None until the first list
        self._objects: dict[str, Json] = {}
        self._lock = threading.Lock()
        list_all = functools.partial(api.custom.list_cluster_custom_object, GROUP, VERSION, PLURAL)
        self._reflector = Reflector(
            RESOURCE, list_all, _Handler(self), watch_timeout=watch_timeout, on_error=self._failed
        )

    def _replace(self, items: list[Json]) -> None:
        with self._lock:
            self._objects = {_name(obj): obj for obj in items}
            self._publish()

    def _apply(self, kind: str, obj: Json) -> None:
        with self._lock:
            if kind == "DELETED":
                self._objects.pop(_name(obj), None)
            else:
                self._objects[_name(obj)] = obj
            self._publish()

    def _publish(self) -> None:
        """Under the lock: report the texts, unless they did not change (a status update)."""
        if self.on_objects is not None:
            self.on_objects(self._objects)
        texts = {f"{TEXT_PREFIX}{name}": policy_text(obj) for name, obj in self._objects.items()}
        generations = {
            f"{TEXT_PREFIX}{name}": int((obj.get("metadata") or {}).get("generation") or 0)
            for name, obj in self._objects.items()
        }
        # a new generation of the same text (a spec rewritten equal) reloads the same set,
        # so that the status can say the new generation is served
        state = PolicyObjects(texts, generations)
        if self.state == state:
            return
        self.state = state
        self.on_change(self.state)


def _name(obj: Json) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


@dataclass
class _Handler:
    watch: PolicyObjectsWatch

    def replace(self, items: list[Json], started: float) -> None:
        self.watch._replace(items)

    def apply(self, kind: str, obj: Json) -> None:
        self.watch._apply(kind, obj)

    def touched(self) -> None:
        pass
