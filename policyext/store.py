"""PolicyStore: the policy set being served, swapped atomically on reload.

A reload validates the whole new set first; a set with any issue is never served, the last
good set keeps serving, and the failure is kept for the status endpoints and metrics. A
loader may instead return a PartialSet: a valid set built without some parts of its source
(the SchedulingPolicy objects that do not load, each replaced by its last good text). It is
served, and the reload is still recorded as failed, with the refused parts' issues.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from policyext.policy import NOT_LOADED, Issue, PolicyError, PolicySet

log = logging.getLogger("policyext.reload")

Listener = Callable[["ReloadStatus"], None]


@dataclass(frozen=True, slots=True)
class PartialSet:
    """A valid set, and the issues of the parts of the source that were left out of it."""

    policies: PolicySet
    refused: tuple[Issue, ...]


Loader = Callable[[], PolicySet | PartialSet]


@dataclass(frozen=True, slots=True)
class ReloadStatus:
    """The outcome of the last reload attempt."""

    ok: bool
    at: float  # time.time() of the attempt
    version: str  # the version serving after it
    source: str  # where the attempted policies came from
    issues: tuple[Issue, ...] = ()
    error: str | None = None  # a failure to read the source (I/O, API)
    partial: bool = False  # failed, yet a set without the refused parts was swapped in


@dataclass
class PolicyStore:
    """Holds the current PolicySet. Readers take `store.current` once per request: the set
    is immutable, so a request sees exactly one version even while a reload happens."""

    current: PolicySet = NOT_LOADED
    loaded: bool = False  # a valid set has been loaded at least once
    status: ReloadStatus | None = None
    reloads_ok: int = 0
    reloads_failed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _listeners: list[Listener] = field(default_factory=list, repr=False)

    def subscribe(self, listener: Listener) -> None:
        """Call `listener` with the status of every later reload (metrics, logs, Events).
        Listeners run on the reloading thread, in reload order; they must not raise."""
        self._listeners.append(listener)

    def reload(self, load: Loader, source: str) -> ReloadStatus:
        """Build a new set with `load`; swap it in only when it is valid."""
        with self._lock:
            try:
                loaded = load()
            except PolicyError as e:
                return self._failed(source, tuple(e.issues), None)
            except (OSError, ValueError) as e:
                return self._failed(source, (), f"cannot read policies: {e}")
            except Exception as e:  # whatever it is, the last good set serves
                # RecursionError and MemoryError included: a policy that exhausts the loader
                # is a rejected reload (and the metric and alert of one), not a dead worker
                log.error("loading the policies from %s failed", source, exc_info=True)
                return self._failed(source, (), unexpected_failure(e))
            partial = loaded if isinstance(loaded, PartialSet) else PartialSet(loaded, ())
            policy_set, refused = partial.policies, partial.refused
            self.current = policy_set
            self.loaded = True
            for warning in policy_set.warnings:  # served all the same (see /policies)
                log.warning("%s", warning.as_warning())
            if refused:
                self.reloads_failed += 1
                self.status = ReloadStatus(
                    False, time.time(), policy_set.version, source, refused, partial=True
                )
            else:
                self.reloads_ok += 1
                self.status = ReloadStatus(True, time.time(), policy_set.version, source)
            return self._announce(self.status)

    def fail(self, source: str, error: str) -> ReloadStatus:
        """Record a reload that could not even be tried (e.g. the policy source is gone):
        the current set keeps serving."""
        with self._lock:
            return self._failed(source, (), error)

    def _failed(self, source: str, issues: tuple[Issue, ...], error: str | None) -> ReloadStatus:
        self.reloads_failed += 1
        self.status = ReloadStatus(False, time.time(), self.current.version, source, issues, error)
        return self._announce(self.status)

    def _announce(self, status: ReloadStatus) -> ReloadStatus:
        for listener in self._listeners:
            listener(status)
        return status


def unexpected_failure(error: BaseException) -> str:
    """What a load that failed in an unexpected way says (the log has the traceback)."""
    if isinstance(error, RecursionError):
        return "cannot load policies: a value is nested too deeply to load"
    if isinstance(error, MemoryError):
        return "cannot load policies: they take more memory than there is to load them"
    return f"cannot load policies: {type(error).__name__}: {error}"
