"""Events on pods an Audit filter would have kept off nodes: `kubectl describe pod` then
shows, beside the scheduler's own Events, which Audit rules would have rejected which
nodes for that pod.

Recording an Event is an API call (a few milliseconds, docs/operations.md has the figures),
far too slow for the request path. A filter answer only offers the pod and its evaluation
to a bounded queue (put_nowait: it never waits); one thread per worker turns them into
Events, at most `rate` a second (with a burst), and one per pod, policy version and set of
Audit rules: a pod the scheduler retries gets no second Event for the same finding. What
the queue cannot hold, or what arrives while the thread waits for its rate, is dropped
and counted: the decision log and the metrics still have every finding.

Anyone who reaches the verbs' port can call /filter with a pod and nodes of their own
making, so nothing of a request becomes an Event unchecked: a finding is recorded only for
a pod the cluster has under that UID, namespace and name (the node cache's pods, or the
API server's for a pending pod the cache does not hold) and nodes that are all in the node
cache, and its Event is written from those objects (the pod's name and namespace, the
nodes' names), never from the request's text. The others are counted as unverified.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import kubernetes.client as k8s
import orjson

from policyext.cluster import events
from policyext.cluster.client import ApiClients
from policyext.policy import Evaluation

log = logging.getLogger("policyext.cluster.audit")

EVENT_REASON: Final = "PolicyAudit"
NODES_NAMED: Final = 5  # per rule, in the message
DEFAULT_RATE: Final = 5.0  # Events a second, per worker
BURST: Final = 20
QUEUE_SIZE: Final = 256
REMEMBERED: Final = 10_000  # findings already recorded, to skip a retried pod's
# an Event the API server did not take (a 5xx, a 429, a timeout: an API server starting
# or busy) is asked again twice, 0.5 s then 1 s later, by the recording thread
CREATE_ATTEMPTS: Final = 3
RETRY_DELAY: Final = 0.5


class ClusterView(Protocol):
    """What the extender holds of the cluster (cluster.cache.ClusterSource)."""

    def pod_by_uid(self, uid: str) -> Mapping[str, Any] | None: ...

    def get_node(self, name: str) -> Mapping[str, Any] | None: ...


@dataclass(frozen=True, slots=True)
class AuditFinding:
    """What the Audit filters would have done for one pod: per rule, how many nodes it
    would have rejected and the first of them."""

    namespace: str
    name: str
    uid: str
    version: str
    rules: tuple[tuple[str, int, tuple[str, ...]], ...]  # (policy/rule, nodes, first nodes)

    @property
    def key(self) -> tuple[str, str, tuple[str, ...]]:
        """The same finding for the same pod (a retry): recorded once."""
        return (self.uid or f"{self.namespace}/{self.name}", self.version, self.rule_ids)

    @property
    def rule_ids(self) -> tuple[str, ...]:
        return tuple(rule for rule, _, _ in self.rules)

    def message(self) -> str:
        parts = []
        for rule, count, nodes in self.rules:
            more = f", and {count - len(nodes)} more" if count > len(nodes) else ""
            word = "node" if count == 1 else "nodes"
            parts.append(f"{rule} on {count} {word} ({', '.join(nodes)}{more})")
        return (
            f"Audit rules would have rejected nodes (policy version {self.version}): "
            + "; ".join(parts)
        )


def audit_finding(pod: Mapping[str, Any], ev: Evaluation) -> AuditFinding | None:
    """The finding of a filter evaluation, or None when no Audit filter would have
    rejected a node (or the pod has no name to attach an Event to)."""
    audits = ev.tally().audits
    meta = pod.get("metadata")
    if not audits or not isinstance(meta, Mapping) or not meta.get("name"):
        return None
    nodes = ev.audit_nodes(NODES_NAMED)
    rules = tuple(
        (f"{p}/{r}", n, tuple(nodes.get(f"{p}/{r}", ()))) for (p, r), n in sorted(audits.items())
    )
    return AuditFinding(
        str(meta.get("namespace") or "default"),
        str(meta["name"]),
        str(meta.get("uid") or ""),
        ev.version,
        rules,
    )


def event_body(finding: AuditFinding, instance: str) -> dict[str, Any]:
    # one name per finding: several workers recording the same one collapse into one Event
    digest = hashlib.sha256(repr(finding.key).encode()).hexdigest()[:12]
    involved: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": finding.namespace,
        "name": finding.name,
    }
    if finding.uid:
        involved["uid"] = finding.uid
    name = f"{finding.name[:200]}.policyext-audit.{digest}"
    return events.event_body(name, involved, EVENT_REASON, finding.message(), "Normal", instance)


class TokenBucket:
    """At most `rate` takes a second on average, `burst` at once."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.clock = clock
        self.tokens = float(burst)
        self.at = clock()

    def wait(self) -> float:
        """Seconds until a token is there (0: now)."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.rate

    def take(self) -> None:
        self.tokens -= 1.0


class AuditEvents:
    """The Events of one worker: `offer` from the request path, checked against the
    cluster (`cluster`: the node cache) and recorded by a thread."""

    def __init__(
        self,
        api: ApiClients,
        cluster: ClusterView,
        instance: str,
        rate: float = DEFAULT_RATE,
        burst: int = BURST,
        queue_size: int = QUEUE_SIZE,
        *,
        start: bool = True,
    ) -> None:
        self.core = api.core
        self.cluster = cluster
        self.instance = instance
        self.bucket = TokenBucket(rate, burst)
        self.pending: queue.Queue[tuple[Mapping[str, Any], Evaluation]] = queue.Queue(queue_size)
        self.recorded: OrderedDict[tuple[str, str, tuple[str, ...]], None] = OrderedDict()
        # outcomes, for the metrics (read at scrape time)
        self.counts = {"recorded": 0, "repeated": 0, "unverified": 0, "dropped": 0, "failed": 0}
        if start:  # (tests record in their own thread, with `record`)
            threading.Thread(target=self._run, name="policyext-audit-events", daemon=True).start()

    def offer(self, pod: Mapping[str, Any], ev: Evaluation) -> None:
        """Called for every filter answer: never waits, never raises."""
        if not ev.tally().audits:
            return
        try:
            self.pending.put_nowait((pod, ev))
        except queue.Full:
            self.counts["dropped"] += 1

    def _run(self) -> None:
        while True:
            pod, ev = self.pending.get()
            try:
                self.record(pod, ev)
            except Exception:  # the thread must outlive anything one Event does
                self.counts["failed"] += 1
                log.exception("cannot record an audit Event")

    def record(self, pod: Mapping[str, Any], ev: Evaluation) -> None:
        """Check one offered finding and record its Event (the thread's work)."""
        finding = audit_finding(pod, ev)
        if finding is None:
            return
        if finding.key in self.recorded:  # (only checked findings are remembered)
            self.counts["repeated"] += 1
            return
        delay = self.bucket.wait()  # (the check may ask the API server too)
        if delay > 0:
            time.sleep(delay)
            self.bucket.wait()
        self.bucket.take()
        checked, why = self._checked(finding, ev)
        if checked is None:
            self.counts["unverified"] += 1
            # (the request's names, quoted: they may be anything)
            log.warning(
                "no audit Event for the pod a filter call named, %r in %r: %s",
                finding.name[:253],
                finding.namespace[:63],
                why,
            )
            return
        self.recorded[checked.key] = None
        if len(self.recorded) > REMEMBERED:
            self.recorded.popitem(last=False)
        why = ""
        for attempt in range(CREATE_ATTEMPTS):
            if attempt:
                time.sleep(RETRY_DELAY * 2 ** (attempt - 1))
            try:
                self.core.create_namespaced_event(
                    checked.namespace,
                    event_body(checked, self.instance),  # type: ignore[arg-type]
                    _request_timeout=5.0,
                )
                self.counts["recorded"] += 1
                return
            except k8s.ApiException as e:
                if e.status == 409:  # another worker recorded the same finding first
                    self.counts["repeated"] += 1
                    return
                why = f"HTTP {e.status}"
                if e.status is not None and 400 <= e.status < 500 and e.status != 429:
                    break  # refused: asking again gets the same answer
            except Exception as e:  # the API unreachable: asked again, a little later
                why = str(e)
        # not recorded: the same finding offered again may be (the decision log has it)
        self.recorded.pop(checked.key, None)
        self._failed(checked, why)

    def _checked(self, finding: AuditFinding, ev: Evaluation) -> tuple[AuditFinding | None, str]:
        """The finding as the cluster has its pod and nodes (None, and why, when it does
        not have them): the names in it are the cluster's objects' own."""
        if not finding.uid:
            return None, "the pod has no UID"
        pod = self.cluster.pod_by_uid(finding.uid)
        if pod is None:  # a pending pod: the node cache may not hold it (cluster/cache.py)
            pod = self._read_pod(finding.namespace, finding.name)
        every = ev.audit_nodes(len(ev.names))  # every node the finding counts, not only those named
        nodes = (node for named in every.values() for node in named)
        why = unverified(self.cluster, pod, finding.uid, (finding.namespace, finding.name), nodes)
        if why:
            return None, why
        namespace, name = finding.namespace, finding.name
        rules = tuple(
            (rule, len(every.get(rule, ())), tuple(_node_name(self.cluster, n) for n in named))
            for rule, _, named in finding.rules
        )
        return AuditFinding(namespace, name, finding.uid, finding.version, rules), ""

    def _read_pod(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The API server's pod of that name; None when it has none or cannot be asked."""
        try:
            response: Any = self.core.read_namespaced_pod(
                name, namespace, _preload_content=False, _request_timeout=5.0
            )
            try:
                pod: dict[str, Any] = orjson.loads(response.data)
            finally:
                response.release_conn()
        except k8s.ApiException as e:
            if e.status != 404:
                log.warning(
                    "cannot read pod %r in %r for its audit Event: HTTP %s",
                    name,
                    namespace,
                    e.status,
                )
            return None
        except Exception as e:  # unreachable, not JSON: no Event without the pod
            log.warning("cannot read pod %r in %r for its audit Event: %s", name, namespace, e)
            return None
        return pod

    def _failed(self, finding: AuditFinding, why: str) -> None:
        self.counts["failed"] += 1
        log.warning(
            "cannot record audit Event on pod %s/%s: %s", finding.namespace, finding.name, why
        )


def unverified(
    cluster: ClusterView,
    pod: Mapping[str, Any] | None,
    uid: str,
    named: tuple[str, str],
    nodes: Iterable[str],
) -> str:
    """Why a finding is not the cluster's pod (`pod`, as the cluster has the UID `uid`,
    named `named`: namespace and name) on the cluster's nodes; "" when it is. The Events
    and the policy reports check the same, so that nothing of a request's own making is
    written."""
    meta = pod.get("metadata") if pod is not None else None
    if not isinstance(meta, Mapping) or str(meta.get("uid") or "") != uid:
        return f"the cluster has no pod with UID {uid[:64]!r}"
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    if (namespace, name) != named:
        return f"the pod with UID {uid[:64]!r} is {namespace}/{name}"
    for node in nodes:
        if cluster.get_node(node) is None:
            return f"node {node[:253]!r} is not in the node cache"
    return ""


def _node_name(cluster: ClusterView, name: str) -> str:
    """The node cache's own name of a node (checked to be there)."""
    node = cluster.get_node(name) or {}
    meta = node.get("metadata")
    return str(meta.get("name") or name) if isinstance(meta, Mapping) else name
