"""PolicyStore: the policy set being served, swapped atomically on reload.

A reload validates the whole new set first; a set with any issue is never served, the last
good set keeps serving, and the failure is kept for the status endpoints and metrics.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from policyext.policy.compile import EMPTY_POLICY_SET, PolicySet
from policyext.policy.model import Issue, PolicyError

Loader = Callable[[], PolicySet]


@dataclass(frozen=True, slots=True)
class ReloadStatus:
    """The outcome of the last reload attempt."""

    ok: bool
    at: float  # time.time() of the attempt
    version: str  # the version serving after it
    source: str  # where the attempted policies came from
    issues: tuple[Issue, ...] = ()
    error: str | None = None  # a failure to read the source (I/O, API)


@dataclass
class PolicyStore:
    """Holds the current PolicySet. Readers take `store.current` once per request: the set
    is immutable, so a request sees exactly one version even while a reload happens."""

    current: PolicySet = EMPTY_POLICY_SET
    loaded: bool = False  # a valid set has been loaded at least once
    status: ReloadStatus | None = None
    reloads_ok: int = 0
    reloads_failed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reload(self, load: Loader, source: str) -> ReloadStatus:
        """Build a new set with `load`; swap it in only when it is valid."""
        with self._lock:
            try:
                policy_set = load()
            except PolicyError as e:
                return self._failed(source, tuple(e.issues), None)
            except (OSError, ValueError) as e:
                return self._failed(source, (), f"cannot read policies: {e}")
            self.current = policy_set
            self.loaded = True
            self.reloads_ok += 1
            self.status = ReloadStatus(True, time.time(), policy_set.version, source)
            return self.status

    def _failed(self, source: str, issues: tuple[Issue, ...], error: str | None) -> ReloadStatus:
        self.reloads_failed += 1
        self.status = ReloadStatus(False, time.time(), self.current.version, source, issues, error)
        return self.status
