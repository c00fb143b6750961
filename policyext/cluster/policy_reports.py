"""Policy reports, written: for each pod that Audit filter rules apply to, once it is
bound, one report scoped to the pod with one result per Audit rule about the node it was
bound to (what it says: report_body.py). Policy Reporter and `kubectl get polr` read them
as they read Kyverno's.

A result is about the node the pod is on, so a report is written once the binding is
known, and it is learnt from the node cache (cluster/cache.py), not from /bind: the pod
watch brings every bound pod with its `spec.nodeName` whoever bound it (kube-scheduler
itself, or our /bind), so reports need no --bind-verb, and nothing is added to a bind.

Nothing of this is on the request path. A filter answer's `account` (after the reply is
sent: server/entrance.py) offers the pod and its evaluation to a bounded queue, as it does
for the audit Events (cluster/audit_events.py), only when an Audit filter of the set
applies to the pod; a thread per worker keeps the last finding of each pod by UID, and at
every tick writes those whose pod the cache now holds bound, at most `rate` a second (with
a burst), each by one server-side apply (field manager `policyext`: created or updated in
one call, whichever worker or replica writes it), and empties the queue between two writes
(each waits for the API server). During a burst of pods (more a second than the reports'
rate) it writes nothing: a write holds the worker's interpreter for a few milliseconds,
which the filter calls on kube-scheduler's path would wait for; the writes resume a second
after the burst, or once half the waiting room is taken. A pod filtered several times before it
binds gets one report, from its last filter call. What the queue cannot hold, what waits
longer than the waiting room allows, and the pods never bound (deleted while pending) are
dropped and counted; the decision log and the metrics still have every finding.

As for the Events, a report is written from the cluster's objects, never from a request's
text: the pod is the cache's pod under that UID, namespace and name, and every node the
finding counts is in the node cache; the rest is counted as unverified.

A cluster without the report's CRD answers the apply with a 404: that is logged once,
`policyext_policy_reports_api_available` drops to 0, and the API is tried again a minute
later, so a CRD installed later is noticed without a restart; meanwhile the bound pods'
findings wait as the unbound ones do (in the same bounded room, at most ten minutes, then
dropped and counted `unavailable`), so that the pods bound just before the CRD came get
their reports too. The report is owned by its pod (an ownerReference, without
blockOwnerDeletion, which would need the right to delete pods): the garbage collector
deletes it with the pod.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from kubernetes.client.exceptions import ApiException

from policyext.cluster.audit_events import ClusterView, TokenBucket, unverified
from policyext.cluster.client import ApiClients
from policyext.cluster.report_body import (
    POLICY_REPORT,
    Filtered,
    ReportApi,
    audit_filters,
    filtered,
    report_body,
)
from policyext.cluster.watch import CONNECT_TIMEOUT, describe
from policyext.policy import Evaluation, PolicySet

log = logging.getLogger("policyext.cluster.reports")

Json = dict[str, Any]

FIELD_MANAGER: Final = "policyext"
APPLY: Final = "application/apply-patch+yaml"
WRITE_TIMEOUT: Final = 10.0
DEFAULT_RATE: Final = 10.0  # reports a second, per worker
BURST: Final = 10  # a small start: the first writes come during the burst of bindings
QUEUE_SIZE: Final = 512  # filter answers waiting for the thread
WAITING: Final = 2048  # pods filtered and not yet bound (or not yet written), per worker
UNBOUND_AFTER: Final = 600.0  # seconds: a pod not bound by then is forgotten
RECHECK_AFTER: Final = 60.0  # seconds: the report API asked again after a 404
TICK: Final = 0.5  # seconds between the thread's looks at the cache
BUSY_FOR: Final = 1.0  # seconds the writes wait after a second of more pods than the rate
WRITTEN: Final = 10_000  # reports already written, so a late offer does not write again
OUTCOMES: Final = (
    "written",
    "failed",
    "dropped",
    "unverified",
    "unbound",
    "superseded",
    "unavailable",
)


class PolicyHolder(Protocol):
    """Where the policy set being served is read (store.PolicyStore)."""

    @property
    def current(self) -> PolicySet: ...


class PolicyReports:
    """The reports of one worker: `offer` from the request path's hand-over, a thread
    that waits for each pod's binding in the node cache and writes its report."""

    def __init__(
        self,
        api: ApiClients,
        cluster: ClusterView,
        policies: PolicyHolder,
        report_api: ReportApi = POLICY_REPORT,
        rate: float = DEFAULT_RATE,
        burst: int = BURST,
        queue_size: int = QUEUE_SIZE,
        *,
        clock: Callable[[], float] = time.monotonic,
        start: bool = True,
    ) -> None:
        self.custom = api.custom
        self.cluster = cluster
        self.policies = policies
        self.api = report_api
        self.clock = clock
        self.bucket = TokenBucket(rate, burst, clock)
        self.pending: queue.Queue[tuple[Mapping[str, Any], Evaluation]] = queue.Queue(queue_size)
        self.waiting: OrderedDict[str, Filtered] = OrderedDict()  # by pod UID, oldest first
        self.written: OrderedDict[tuple[str, str, str], None] = OrderedDict()
        # the Audit filters of the set being served, by version: what `offer` checks
        self.audited: tuple[str, dict[str, tuple[str, ...]]] = ("", {})
        self.available = True  # whether the last write found the report API
        self.recheck_at = 0.0
        self.last_error = ""
        self.counts = dict.fromkeys(OUTCOMES, 0)  # for the metrics, read at scrape time
        self.second, self.kept = 0.0, 0  # filter calls kept in the current second
        self.busy_until = 0.0  # the writes wait for a burst of pods until then
        if start:  # (tests drive it with `take` and `write_ready`)
            threading.Thread(target=self._run, name="policyext-policy-reports", daemon=True).start()

    def offer(self, pod: Mapping[str, Any], ev: Evaluation) -> None:
        """Called for every filter answer once its reply is sent: never waits, never raises.
        Queued only when an Audit filter of the set applies to the pod."""
        version, audited = self.audited
        if version != ev.version:
            audited = self._audited(ev.version)
        if not audited:
            return
        for match in ev.matches:
            if match.applies and match.policy in audited:
                break
        else:
            return
        try:
            self.pending.put_nowait((pod, ev))
        except queue.Full:
            self.counts["dropped"] += 1

    def _audited(self, version: str) -> dict[str, tuple[str, ...]]:
        """The Audit filters of the set of that version (once per reload; empty while the
        store serves another version)."""
        policies = self.policies.current
        if policies.version != version:
            return {}
        audited = audit_filters(policies)
        self.audited = (version, audited)
        return audited

    def _run(self) -> None:
        while True:
            try:
                pod, ev = self.pending.get(timeout=TICK)
                self.take(pod, ev)
            except queue.Empty:
                pass
            except Exception:  # the thread must outlive anything one finding does
                log.exception("cannot keep a filter call's audit findings for a report")
            try:
                self.drain()
                self.write_ready()
            except Exception:
                log.exception("cannot write policy reports")

    def drain(self) -> None:
        """Take what the queue holds now. Called between two writes too: a write waits for
        the API server (tens of milliseconds when it is busy with a burst of pods), and the
        filter calls of the burst must not find the queue full meanwhile."""
        for _ in range(self.pending.maxsize or QUEUE_SIZE):
            try:
                pod, ev = self.pending.get_nowait()
            except queue.Empty:
                return
            try:
                self.take(pod, ev)
            except Exception:  # one finding's trouble is not the others'
                log.exception("cannot keep a filter call's audit findings for a report")

    def take(self, pod: Mapping[str, Any], ev: Evaluation) -> None:
        """Keep a pod's finding until it binds (the thread's work); a newer filter call of
        the same pod replaces the older."""
        version, audited = self.audited
        if version != ev.version:
            audited = self._audited(ev.version)
        now = self.clock()
        finding = filtered(pod, ev, audited, now)
        if finding is None:
            return
        if now - self.second >= 1.0:  # filter calls kept in the current second
            self.second, self.kept = now, 0
        self.kept += 1
        if self.kept > self.bucket.rate:  # a burst of pods: the writes wait for its end
            self.busy_until = now + BUSY_FOR
        self.waiting.pop(finding.uid, None)
        self.waiting[finding.uid] = finding
        while len(self.waiting) > WAITING:
            self.waiting.popitem(last=False)
            self.counts["dropped"] += 1

    def write_ready(self) -> None:
        """One pass over the waiting pods: write the report of each the cache holds bound,
        as fast as the rate allows (the rest wait for the next pass). While the API server
        has no report CRD the bound pods wait too, for as long as an unbound one may."""
        now = self.clock()
        for uid, finding in list(self.waiting.items()):
            if self._yielding():
                return
            pod = self.cluster.pod_by_uid(uid)
            node = _node_of(pod)
            if (not node or not self.available) and now - finding.at > UNBOUND_AFTER:
                del self.waiting[uid]
                self.counts["unbound" if not node else "unavailable"] += 1
                continue
            if not node or (not self.available and now < self.recheck_at):
                continue
            if self.bucket.wait() > 0:
                return  # over the rate: the next pass goes on
            if self._write(finding, pod, node) and self.waiting.get(uid) is finding:
                del self.waiting[uid]
            self.drain()

    def _yielding(self) -> bool:
        """Whether the writes wait: while pods come faster than the reports' rate (a burst),
        each write would take the worker's interpreter from the filter calls for a few
        milliseconds, on kube-scheduler's path; they wait until a second after the burst,
        or until half the waiting room is taken."""
        return self.clock() < self.busy_until and len(self.waiting) < WAITING // 2

    def _write(self, finding: Filtered, pod: Mapping[str, Any] | None, node: str) -> bool:
        """Write the finding's report; False when the API server has no report CRD (the
        finding is kept for when it has)."""
        if node not in finding.nodes:
            # another worker or replica filtered the pod last, on other nodes: theirs is
            # the report to write (kube-scheduler binds to a node its last filter call kept)
            self.counts["superseded"] += 1
            return True
        why = unverified(
            self.cluster, pod, finding.uid, (finding.namespace, finding.name), finding.nodes
        )
        if why:
            self.counts["unverified"] += 1
            log.warning(
                "no policy report for the pod a filter call named, %r in %r: %s",
                finding.name[:253],
                finding.namespace[:63],
                why,
            )
            return True
        key = (finding.uid, finding.version, node)
        if key in self.written:
            return True
        self.bucket.take()
        body = report_body(self.api, finding, node, time.time())
        try:
            response: Any = self.custom.patch_namespaced_custom_object(
                self.api.group,
                self.api.version,
                finding.namespace,
                self.api.plural,
                body["metadata"]["name"],
                body,
                field_manager=FIELD_MANAGER,
                force=True,  # ours alone: the newest finding wins
                _content_type=APPLY,
                _request_timeout=(CONNECT_TIMEOUT, WRITE_TIMEOUT),
                # the object written comes back: read, never decoded (nothing looks at it)
                _preload_content=False,
            )
            try:
                response.data  # noqa: B018 - read whole, so that the connection is reused
            finally:
                response.release_conn()
        except ApiException as e:
            if e.status == 404 and not _about_a_namespace(e):
                self._unavailable()
                return False
            self._failed(finding, describe(e))
            return True
        except Exception as e:  # the API server unreachable: the decision log has it
            self._failed(finding, describe(e))
            return True
        self.counts["written"] += 1
        self.last_error = ""
        if not self.available:
            self.available = True
            log.info("the API server has %s now: writing policy reports", self._resource())
        self.written[key] = None
        if len(self.written) > WRITTEN:
            self.written.popitem(last=False)
        return True

    def _unavailable(self) -> None:
        if self.available:
            log.warning(
                "the API server has no %s (is its CRD installed?): no policy reports until it"
                " has; asked again every %d s",
                self._resource(),
                RECHECK_AFTER,
            )
        self.available = False
        self.recheck_at = self.clock() + RECHECK_AFTER

    def _failed(self, finding: Filtered, why: str) -> None:
        self.counts["failed"] += 1
        if why != self.last_error:
            log.warning(
                "cannot write the policy report of pod %s/%s: %s",
                finding.namespace,
                finding.name,
                why,
            )
        self.last_error = why

    def _resource(self) -> str:
        return f"{self.api.plural}.{self.api.group}/{self.api.version}"


def _node_of(pod: Mapping[str, Any] | None) -> str:
    spec = pod.get("spec") if pod is not None else None
    return str(spec.get("nodeName") or "") if isinstance(spec, Mapping) else ""


def _about_a_namespace(error: ApiException) -> bool:
    """A 404 about the namespace (deleted with its pod), not about the resource type."""
    body = error.body if isinstance(error.body, str | bytes) else b""
    text = body.decode(errors="replace") if isinstance(body, bytes) else body
    return '"kind":"namespaces"' in text.replace(" ", "")
