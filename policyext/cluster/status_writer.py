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
    ) -> None:
        self.custom = api.custom
        self.replica = replica
        self.field_manager = f"policyext/{replica}"[:FIELD_MANAGER_LIMIT]
        self.now = now
        self.counts = {"written": 0, "failed": 0}
        self.last_error = ""  # why the last pass failed; "" once one succeeds
        self._backoff = backoff or Backoff()
        self._lock = threading.Lock()
        self._outcomes: dict[str, Outcome] = {}  # object name -> this replica's view
        self._objects: dict[str, Json] = {}  # object name -> as the API server has it
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
        while not self._stop.is_set():
            self._wake.wait()
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
            if wanted is None or applied(wanted, self.replica) == applied(
                obj.get("status"), self.replica
            ):
                continue
            ok = self._write(name, wanted) and ok
        return ok

    def _write(self, name: str, status: Json) -> bool:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "SchedulingPolicy",
            "metadata": {"name": name},
            "status": status,
        }
        try:
            written = self.custom.patch_cluster_custom_object_status(
                GROUP,
                VERSION,
                PLURAL,
                name,
                body,
                field_manager=self.field_manager,
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
        self.counts["written"] += 1
        self.last_error = ""
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
