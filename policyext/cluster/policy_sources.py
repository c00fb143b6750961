"""Where a worker's policies come from — files and folders, a ConfigMap, the SchedulingPolicy
objects of the cluster, or any mix — loaded as one set whenever any of them changes.

Every reload validates the whole union and swaps it in atomically (PolicyStore); a rejected
one keeps the last good set serving. A ConfigMap that is expected but not (yet) there makes
no partial set: the policies are not loaded until it is, and a deleted one leaves the last
good set serving while the status says what happened. The same holds for the
SchedulingPolicy objects: none are loaded until they have been listed once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from policyext.cluster.rules_configmap import ConfigMapRef, ConfigMapState, PolicyEvents
from policyext.cluster.rules_crd import RESOURCE, PolicyObjects
from policyext.policy.compile import load_policies
from policyext.store import PolicyStore, ReloadStatus

EVENT_ISSUES = 5


class PolicySources:
    def __init__(
        self,
        store: PolicyStore,
        paths: Sequence[str],
        configmap: ConfigMapRef | None = None,
        events: PolicyEvents | None = None,
        *,
        objects: bool = False,
    ) -> None:
        self.store = store
        self.paths = list(paths)
        self.configmap = configmap
        self.events = events
        self.objects = objects  # the SchedulingPolicy objects too (--rules-crd)
        self._state: ConfigMapState | None = None
        self._objects: PolicyObjects | None = None
        self._lock = threading.Lock()  # one reload at a time, whoever noticed the change

    def describe(self) -> str:
        parts = list(self.paths)
        if self.configmap is not None:
            state = self._state
            parts.append(state.description if state else f"configmap/{self.configmap}")
        if self.objects:
            listed = self._objects
            parts.append(listed.description if listed else RESOURCE)
        return ", ".join(parts)

    def reload(self) -> ReloadStatus | None:
        """Load everything again; None while the expected ConfigMap has not been read yet."""
        with self._lock:
            return self._reload()

    def configmap_changed(self, state: ConfigMapState) -> None:
        """The ConfigMap watch saw new content (or the ConfigMap appear or go away)."""
        with self._lock:
            self._state = state
            status = self._reload()
        if status is not None and self.events is not None:
            self.events.record(state, status.ok, event_message(status))

    def configmap_unreadable(self, message: str) -> None:
        """The ConfigMap could not be read at all yet (RBAC, the API down): the status says
        why nothing is served."""
        with self._lock:
            if self._state is None:
                self.store.fail(self.describe(), message)

    def objects_changed(self, listed: PolicyObjects) -> None:
        """The SchedulingPolicy watch saw an object's spec change, or one come or go."""
        with self._lock:
            self._objects = listed
            self._reload()

    def objects_unreadable(self, message: str) -> None:
        """The SchedulingPolicies could not be listed yet (no CRD, RBAC, the API down)."""
        with self._lock:
            if self._objects is None:
                self.store.fail(self.describe(), message)

    def _reload(self) -> ReloadStatus | None:
        state = self._state
        if self.objects and self._objects is None:
            return None  # not listed yet: a partial set is never served
        if self.configmap is not None:
            if state is None:
                return None
            if not state.exists:
                what = "was deleted" if state.deleted else "does not exist"
                keeps = (
                    f"; policy version {self.store.current.version} keeps serving"
                    if self.store.loaded
                    else "; no policies are loaded"
                )
                return self.store.fail(self.describe(), f"ConfigMap {self.configmap} {what}{keeps}")
        texts = state.texts if state is not None else {}
        if self._objects is not None:
            texts = texts | self._objects.texts
        return self.store.reload(lambda: load_policies(self.paths, texts), self.describe())


def event_message(status: ReloadStatus) -> str:
    if status.ok:
        return f"policy version {status.version} is now served"
    errors = [str(issue) for issue in status.issues[:EVENT_ISSUES]]
    if status.error:
        errors.append(status.error)
    more = len(status.issues) - EVENT_ISSUES
    tail = f" (and {more} more)" if more > 0 else ""
    return (
        f"policy update rejected, version {status.version} keeps serving: "
        + "; ".join(errors)
        + tail
    )
