"""Where a worker's policies come from — files and folders, a ConfigMap, the SchedulingPolicy
objects of the cluster, or any mix — loaded as one set whenever any of them changes.

Every reload validates the whole union and swaps it in atomically (PolicyStore); a rejected
one keeps the last good set serving. A ConfigMap that is expected but not (yet) there makes
no partial set: the policies are not loaded until it is, and a deleted one leaves the last
good set serving while the status says what happened. The same holds for the
SchedulingPolicy objects: none are loaded until they have been listed once.

The SchedulingPolicy objects are the exception to the whole-set rule, as each has its own
author: an object that does not load on its own (schema, CEL, its own problems) is refused
and replaced by its last good text (the last text of that object that was served; an object
never served is left out), so one object's bad generation never blocks another's update. A
new object whose policy name is already taken by a file or a ConfigMap key is refused too
(the newer one gives way); when a file or ConfigMap key takes the name of an object already
served, the whole reload is rejected as before. Such a reload serves the new set and is
still recorded as failed (PartialSet), naming the refused objects.

After every reload with the objects, `on_outcomes` hears what this worker made of each
object's generation (served, or refused with its problems and the generation that keeps
serving): what the object's status says (policy_status.py, status_writer.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from policyext.cluster.policy_status import (
    REASON_INVALID,
    REASON_REJECTED,
    Outcome,
    problem,
)
from policyext.cluster.rules_configmap import ConfigMapRef, ConfigMapState, PolicyEvents
from policyext.cluster.rules_crd import RESOURCE, PolicyObjects
from policyext.policy import TEXT_PREFIX, Issue, PolicyError, load_policies
from policyext.store import PartialSet, PolicyStore, ReloadStatus

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
        on_outcomes: Callable[[dict[str, Outcome]], None] | None = None,
    ) -> None:
        self.store = store
        self.paths = list(paths)
        self.configmap = configmap
        self.events = events
        self.objects = objects  # the SchedulingPolicy objects too (--rules-crd)
        self._state: ConfigMapState | None = None
        self._objects: PolicyObjects | None = None
        self._good: dict[str, str] = {}  # each served object's last text that loaded
        self._good_generation: dict[str, int] = {}  # and its generation
        self._refused: dict[str, tuple[str, tuple[Issue, ...]]] = {}  # reason, issues
        self.on_outcomes = on_outcomes
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
        if self._objects is None:
            return self.store.reload(lambda: load_policies(self.paths, texts), self.describe())
        objects = self._objects
        status = self.store.reload(lambda: self._load_with_objects(texts, objects), self.describe())
        if self.on_outcomes is not None:
            self.on_outcomes(self._outcomes(objects, status))
        return status

    def _load_with_objects(self, texts: dict[str, str], objects: PolicyObjects) -> PartialSet:
        """The set of the files, the ConfigMap's texts and every object that loads, each
        refused object replaced by its last good text. Raises PolicyError when the rest
        does not load: then nothing is served from this reload, as for the other sources."""
        listed = objects.texts
        chosen: dict[str, str] = {}
        refused: list[Issue] = []
        self._refused = {}
        for name, text in listed.items():
            issues = () if self._good.get(name) == text else _own_issues(name, text)
            if not issues:
                chosen[name] = text
                continue
            refused.extend(issues)
            self._refused[name] = (REASON_INVALID, issues)
            if name in self._good:
                chosen[name] = self._good[name]
        try:
            policy_set = load_policies(self.paths, texts | chosen)
        except PolicyError as e:
            # what remains is between sources: a new object whose policy name is taken
            # gives way; anything else rejects the whole reload
            newer = {i.policy for i in e.issues} & {
                _policy_name(n) for n in chosen if n not in self._good
            }
            if not newer:
                raise PolicyError([*refused, *e.issues]) from e
            refused.extend(i for i in e.issues if i.policy in newer)
            for name in chosen:
                if _policy_name(name) in newer:
                    taken = tuple(i for i in e.issues if i.policy == _policy_name(name))
                    self._refused[name] = (REASON_REJECTED, taken)
            chosen = {n: t for n, t in chosen.items() if _policy_name(n) not in newer}
            try:
                policy_set = load_policies(self.paths, texts | chosen)
            except PolicyError as again:
                raise PolicyError([*refused, *again.issues]) from again
        self._good_generation = {
            name: objects.generations.get(name, 0)
            if listed.get(name) == text
            else self._good_generation.get(name, 0)
            for name, text in chosen.items()
        }
        self._good = chosen
        return PartialSet(policy_set, tuple(refused))

    def _outcomes(self, objects: PolicyObjects, status: ReloadStatus) -> dict[str, Outcome]:
        """What this worker made of each object's generation after the reload, by object
        name: served, refused on its own (Invalid), or not served with the others
        (Rejected: a policy name taken, or the whole set refused for another reason)."""
        outcomes: dict[str, Outcome] = {}
        for name, text in objects.texts.items():
            generation = objects.generations.get(name, 0)
            serving = self._good_generation.get(name) if name in self._good else None
            reason, issues = self._refused.get(name, ("", ()))
            if not issues and self._good.get(name) == text:
                outcomes[_policy_name(name)] = Outcome(generation, generation)
                continue
            if not issues:  # the whole reload was refused: its issues in this object first
                reason = REASON_REJECTED
                issues = tuple(i for i in status.issues if i.location.file == name)
                issues = issues or tuple(status.issues)
            problems = tuple(
                problem(i, text) if i.location.file == name else str(i) for i in issues
            )
            if not problems:
                problems = (status.error or "the policy set was not loaded",)
            outcomes[_policy_name(name)] = Outcome(generation, serving, problems, reason)
        return outcomes


def _own_issues(name: str, text: str) -> tuple[Issue, ...]:
    """What is wrong with one object's text on its own (none when it loads alone)."""
    try:
        load_policies([], {name: text})
    except PolicyError as e:
        return tuple(e.issues)
    return ()


def _policy_name(text_name: str) -> str:
    """An object's policy is named as the object (rules_crd.policy_text)."""
    return text_name.removeprefix(TEXT_PREFIX)


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
