"""Writes the status of the SchedulingPolicy objects (what policy_status.py decides), from
a thread of its own: never on a scheduling call's path.

Two things wake it: a reload (what this replica now makes of each object) and the watch
(each object as the API server has it, status included). For each object it compares what
it would write with what the object already says, and writes only the difference, by
server-side apply to the status subresource with a field manager of its own replica
(`policyext/POD`): its byPod entry is its alone, the summary fields are shared by the
replicas that write the same values. A write changes the object's resourceVersion, not its
generation: the watch reloads nothing (rules_crd.py reloads on a spec change only), and the
object it brings back already says what was written, so nothing is written again. When the
API server is away a failed pass is retried with a growing, jittered delay (watch.Backoff).

A replica that is gone leaves its byPod entry behind, and nobody else may take it over by
an apply. With `alive` (`--replica-namespace`: the replicas are the pods of that namespace,
known to the live pod cache), each pass also removes the entry of every replica whose pod
no longer exists, by an apply with that replica's own field manager and an empty status:
server-side apply then drops exactly the fields that manager alone wrote (its entry) and
leaves every other one alone. A pod that is terminating still exists: its entry goes with
it. `alive` answers None until the pod cache has its first list, and nothing is removed
then. The pass runs at least every PASS_INTERVAL seconds, so that a replica gone without
any other change is noticed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Final

from kubernetes.client.exceptions import ApiException

from policyext.cluster.client import ApiClients
from policyext.cluster.policy_status import Json, Outcome, applied, desired_status
from policyext.cluster.rules_crd import GROUP, PLURAL, VERSION
from policyext.cluster.watch import CONNECT_TIMEOUT, Backoff, describe

log = logging.getLogger("policyext.cluster.status")

APPLY: Final = "application/apply-patch+yaml"
WRITE_TIMEOUT: Final = 10.0
FIELD_MANAGER_LIMIT: Final = 128  # characters, the API server's limit
# seconds between passes when nothing wakes the writer (with `alive`): how soon a gone
# replica's entry is removed; a pass without a difference makes no request
PASS_INTERVAL: Final = 10.0
# whether the replica (a pod's name) still exists; None: not known yet
Alive = Callable[[str], bool | None]


def field_manager(replica: str) -> str:
    """The field manager of `replica`'s status writes."""
    return f"policyext/{replica}"[:FIELD_MANAGER_LIMIT]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class StatusWriter:
    """The status writes of one worker for its replica `replica` (its pod's name)."""

    def __init__(
        self,
        api: ApiClients,
        replica: str,
        *,
        now: Callable[[], str] = _now,
        backoff: Backoff | None = None,
        alive: Alive | None = None,
    ) -> None:
        self.custom = api.custom
        self.replica = replica
        self.field_manager = field_manager(replica)
        self.alive = alive
        self.now = now
        self.counts = {"written": 0, "failed": 0, "pruned": 0}
        self.last_error = ""  # why the last pass failed; "" once one succeeds
        self._backoff = backoff or Backoff()
        self._lock = threading.Lock()
        self._outcomes: dict[str, Outcome] = {}  # object name -> this replica's view
        self._objects: dict[str, Json] = {}  # object name -> as the API server has it
        self._unowned: set[tuple[str, str]] = set()  # (object, replica) entries left alone
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- fed by the reloads and the watch (any thread; never waits)

    def outcomes_changed(self, outcomes: Mapping[str, Outcome]) -> None:
        with self._lock:
            self._outcomes = dict(outcomes)
        self._wake.set()

    def objects_seen(self, objects: Mapping[str, Json]) -> None:
        with self._lock:
            self._objects = dict(objects)
        self._wake.set()

    # -- the thread

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="policyext-status", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        interval = PASS_INTERVAL if self.alive is not None else None
        while not self._stop.is_set():
            self._wake.wait(interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            if self.write_pending():
                self._backoff.reset()
                continue
            self._stop.wait(self._backoff.next_delay())
            self._wake.set()  # try again, with whatever is newest by then

    def write_pending(self) -> bool:
        """One pass: write each object's status where it differs from what it should say.
        False when a write failed (the pass is to be tried again)."""
        with self._lock:
            outcomes, objects = self._outcomes, self._objects
        ok = True
        for name, obj in objects.items():
            mine = outcomes.get(name)
            if mine is None:
                continue  # not loaded by this replica yet
            wanted = desired_status(obj, self.replica, mine, self.now())
            if wanted is None:
                continue  # this replica has not read the object's generation yet
            gone = self._gone(obj, name)
            differs = applied(wanted, self.replica) != applied(obj.get("status"), self.replica)
            # before a gone replica's fields are dropped, this replica owns every shared
            # field too (an apply of the same values shares them), so that they stay
            if (gone or differs) and not self._write(name, wanted):
                ok = False
                continue
            for replica in gone:
                ok = self._prune(name, replica) and ok
        return ok

    def _gone(self, obj: Json, name: str) -> list[str]:
        """The replicas with an entry in the object's byPod whose pod no longer exists."""
        if self.alive is None:
            return []
        entries = (obj.get("status") or {}).get("byPod") or []
        pods = [str(e.get("pod")) for e in entries if e.get("pod") not in (None, self.replica)]
        return [p for p in pods if (name, p) not in self._unowned and self.alive(p) is False]

    def _prune(self, name: str, gone: str) -> bool:
        """Remove the entry of `gone` by an apply as its own field manager of nothing."""
        if not self._apply(name, None, field_manager(gone)):
            return False
        with self._lock:
            after = self._objects.get(name) or {}
        if gone in {e.get("pod") for e in (after.get("status") or {}).get("byPod") or []}:
            # written by someone else than that replica's writer: not ours to remove
            self._unowned.add((name, gone))
            log.warning(
                "schedulingpolicy/%s: the status entry of %s (its pod is gone) is not owned "
                "by policyext/%s and stays",
                name,
                gone,
                gone,
            )
            return True
        self.counts["pruned"] += 1
        log.info("schedulingpolicy/%s: removed the status entry of %s (pod gone)", name, gone)
        return True

    def _write(self, name: str, status: Json) -> bool:
        if not self._apply(name, status, self.field_manager):
            return False
        self.counts["written"] += 1
        self.last_error = ""
        return True

    def _apply(self, name: str, status: Json | None, manager: str) -> bool:
        """Apply `status` as `manager`; None: apply nothing (what the manager owned goes,
        and so does its entry in managedFields: not even an empty status is left owned)."""
        body: Json = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "SchedulingPolicy",
            "metadata": {"name": name},
        }
        if status is not None:
            body["status"] = status
        try:
            written = self.custom.patch_cluster_custom_object_status(
                GROUP,
                VERSION,
                PLURAL,
                name,
                body,
                field_manager=manager,
                force=True,  # the summary fields: the newest reading of the same inputs wins
                _content_type=APPLY,
                _request_timeout=(CONNECT_TIMEOUT, WRITE_TIMEOUT),
            )
        except ApiException as e:
            if e.status == 404:
                return True  # deleted meanwhile: nothing to say about it
            return self._failed(name, describe(e))
        except Exception as e:  # the API server unreachable: tried again later
            return self._failed(name, describe(e))
        with self._lock:
            if name in self._objects and isinstance(written, dict):
                # until the watch brings it: what was written is not written again
                self._objects[name] = written
        return True

    def _failed(self, name: str, why: str) -> bool:
        self.counts["failed"] += 1
        if why != self.last_error:
            log.warning("cannot write the status of schedulingpolicy/%s: %s", name, why)
        self.last_error = why
        return False
