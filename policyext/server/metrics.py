"""Prometheus metrics, correct with several gunicorn workers.

With several worker processes each keeps its own counters; prometheus_client's
multiprocess mode (PROMETHEUS_MULTIPROC_DIR, set by `policyext serve` before the workers
fork) writes them to files that /metrics aggregates, so every scrape sees the whole server.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator, Mapping, Sequence
from importlib import metadata
from typing import Any, Final, Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from policyext.policy import Evaluation, PolicySet
from policyext.server.binding import REASONS as BIND_REFUSAL_REASONS

# the *_created series double the output and no dashboard uses them
disable_created_metrics()  # type: ignore[no-untyped-call]

LATENCY_BUCKETS: Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    # httpTimeout (5 s unless set) may be set higher: latency near it must be measurable
    10.0,
    30.0,
    60.0,
)
NODE_BUCKETS: Final = (1, 10, 50, 100, 250, 500, 1000, 2500, 5000)
# the decision endpoints: their answers are counted in policyext_requests_total by `verb`;
# every other path (probes, /metrics, /policies, unknown paths) by `endpoint` in
# policyext_endpoint_requests_total, so that a verb's rate is never mixed with the probes'
VERBS: Final = ("filter", "prioritize", "preempt", "bind", "explain")
# the verbs whose evaluations can be cut short by --request-deadline
DEADLINE_VERBS: Final = ("filter", "prioritize", "preempt", "explain")


def build_version() -> str:
    """The installed policyext's version (the package metadata)."""
    try:
        return metadata.version("policyext")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


class WatchState(Protocol):
    """One watched resource of a live node source (cluster.cache.WatchStats has this shape)."""

    @property
    def resource(self) -> str: ...

    @property
    def staleness_seconds(self) -> float: ...

    @property
    def relists(self) -> int: ...

    @property
    def synced(self) -> bool: ...


class WatchedSource(Protocol):
    def watch_stats(self) -> Sequence[WatchState]: ...


class CacheCollector(Collector):
    """The caches' health, read from the source when /metrics is scraped (so staleness is
    exact at that moment and nothing is written on the request path). With several
    workers, each scrape reports the caches of the worker that answers it."""

    def __init__(self, source: WatchedSource) -> None:
        self.source = source

    def collect(self) -> Iterator[Metric]:
        staleness = GaugeMetricFamily(
            "policyext_cache_staleness_seconds",
            "Seconds since the API server was last heard from about this resource (an event,"
            " a bookmark, a new watch or a list); +Inf before the first list.",
            labels=["resource"],
        )
        relists = CounterMetricFamily(
            "policyext_cache_relists",
            "Full lists of this resource (the first, then one after every 410 Gone).",
            labels=["resource"],
        )
        synced = GaugeMetricFamily(
            "policyext_cache_synced",
            "1 once the resource's initial list is in, else 0.",
            labels=["resource"],
        )
        for state in self.source.watch_stats():
            staleness.add_metric([state.resource], state.staleness_seconds)
            relists.add_metric([state.resource], state.relists)
            synced.add_metric([state.resource], 1.0 if state.synced else 0.0)
        yield staleness
        yield relists
        yield synced


class AuditEventCounts(Protocol):
    """The Events a cluster adapter recorded about Audit findings (cluster.audit_events)."""

    @property
    def counts(self) -> Mapping[str, int]: ...


class AuditEventsCollector(Collector):
    """policyext_audit_events_total, read from the recorder at scrape time (per worker)."""

    def __init__(self, source: AuditEventCounts) -> None:
        self.source = source

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "policyext_audit_events",
            "Audit findings offered for an Event on the pod, by result: recorded, repeated (the"
            " same finding for a retried pod), unverified (the cluster has no such pod, or a"
            " node is not in the node cache: no Event), dropped (over the rate or the queue),"
            " failed.",
            labels=["result"],
        )
        for result, count in sorted(self.source.counts.items()):
            family.add_metric([result], count)
        yield family


class PolicyReportCounts(Protocol):
    """What a policy report writer did (cluster.policy_reports)."""

    @property
    def counts(self) -> Mapping[str, int]: ...

    @property
    def available(self) -> bool: ...


class PolicyReportsCollector(Collector):
    """policyext_policy_reports_total and policyext_policy_reports_api_available, read
    from the writer at scrape time (per worker)."""

    def __init__(self, source: PolicyReportCounts) -> None:
        self.source = source

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "policyext_policy_reports",
            "Bound pods' Audit findings, by what became of their policy report: written,"
            " failed (the API server refused or was unreachable), dropped (over the queue or"
            " the waiting room), unverified (not the cluster's pod or nodes), unbound (never"
            " bound), superseded (filtered last by another worker), unavailable (the API"
            " server had no report CRD for as long as a finding may wait).",
            labels=["result"],
        )
        for result, count in sorted(self.source.counts.items()):
            family.add_metric([result], count)
        yield family
        yield GaugeMetricFamily(
            "policyext_policy_reports_api_available",
            "0 while the API server has no report CRD (its last write answered 404), else 1.",
            value=1.0 if self.source.available else 0.0,
        )


class Metrics:
    """The server's metrics. One instance per process; `render()` serves /metrics."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.multiprocess = "PROMETHEUS_MULTIPROC_DIR" in os.environ
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.latency = Histogram(
            "policyext_request_duration_seconds",
            "Time to answer an extender or explain request, by verb.",
            ["verb"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.requests = Counter(
            "policyext_requests_total",
            "Requests to the decision endpoints (filter, prioritize, preempt, bind, explain)"
            " answered, by verb and HTTP status.",
            ["verb", "code"],
            registry=r,
        )
        self.endpoint_requests = Counter(
            "policyext_endpoint_requests_total",
            "Requests to the other endpoints (healthz, readyz, metrics, policies; unknown for"
            " any other path) answered, by endpoint and HTTP status.",
            ["endpoint", "code"],
            registry=r,
        )
        self.refused = Counter(
            "policyext_refused_requests_total",
            "Requests refused by the HTTP server before the application saw them (a request"
            " line or headers over the limits, malformed HTTP), by HTTP status.",
            ["code"],
            registry=r,
        )
        self.bind_refusals = Counter(
            "policyext_bind_refusals_total",
            "Binds /bind refused or could not make (the reply's Error says why), by reason:"
            " disabled (no --bind-verb), no_cluster, not_ready, no_uid, no_pod,"
            " pod_unreadable, other_uid, other_scheduler, bound_elsewhere, no_node, filtered"
            " (an Enforce filter rejects the node), failed (the API server did not bind).",
            ["reason"],
            registry=r,
        )
        self.build_info = Gauge(
            "policyext_build_info",
            "The policyext version serving (value 1).",
            ["version", "python"],
            registry=r,
            multiprocess_mode="max",
        )
        self.nodes = Histogram(
            "policyext_request_nodes",
            "Nodes in a request, by verb.",
            ["verb"],
            buckets=NODE_BUCKETS,
            registry=r,
        )
        self.evaluations = Counter(
            "policyext_evaluations_total", "CEL evaluations performed.", registry=r
        )
        self.rejections = Counter(
            "policyext_rule_rejections_total",
            "Nodes rejected, by policy and rule.",
            ["policy", "rule"],
            registry=r,
        )
        self.audit_rejections = Counter(
            "policyext_rule_audit_rejections_total",
            "Nodes an Audit-mode rule would have rejected, by policy and rule.",
            ["policy", "rule"],
            registry=r,
        )
        self.audit_scores = Counter(
            "policyext_rule_audit_scores_total",
            "Node scores an Audit-mode score rule computed (left out of the final score),"
            " by policy and rule.",
            ["policy", "rule"],
            registry=r,
        )
        self.audit_score_points = Counter(
            "policyext_rule_audit_score_points_total",
            "The sum of those scores (0..10 each): divided by policyext_rule_audit_scores_total,"
            " the rule's mean score.",
            ["policy", "rule"],
            registry=r,
        )
        self.no_feasible_node = Counter(
            "policyext_pods_without_feasible_node_total",
            "filter answers that left the pod no feasible node (every scheduling attempt of"
            " a pod counts).",
            registry=r,
        )
        self.rule_errors = Counter(
            "policyext_rule_errors_total",
            "Rule evaluations that failed, by policy and rule.",
            ["policy", "rule"],
            registry=r,
        )
        self.errors = Counter(
            "policyext_evaluation_errors_total", "Evaluation errors of all kinds.", registry=r
        )
        self.deadline_exceeded = Counter(
            "policyext_request_deadline_exceeded_total",
            "Requests answered after their --request-deadline stopped some evaluations, by verb.",
            ["verb"],
            registry=r,
        )
        self.reloads = Counter(
            "policyext_policy_reloads_total",
            "Policy reloads, by result.",
            ["result"],
            registry=r,
        )
        self.policy_version = Gauge(
            "policyext_policy_version_info",
            "The policy version being served (value 1).",
            ["version"],
            registry=r,
            multiprocess_mode="liveall",
        )
        self.policies_loaded = Gauge(
            "policyext_policies_loaded",
            "Policies in the set being served: 0 means no filter rejects any node.",
            registry=r,
            multiprocess_mode="livemin",
        )
        self.policy_rules = Gauge(
            "policyext_policy_rules",
            "Rules in the policy set being served.",
            registry=r,
            multiprocess_mode="liveall",
        )
        self.last_reload_ok = Gauge(
            "policyext_policy_last_reload_success",
            "1 when the last policy reload was applied, 0 when it was rejected (the last good "
            "set keeps serving).",
            registry=r,
            multiprocess_mode="livemin",
        )
        self.last_reload_time = Gauge(
            "policyext_policy_last_reload_timestamp_seconds",
            "When the last policy reload was tried (Unix time).",
            registry=r,
            multiprocess_mode="livemax",
        )
        self._version = ""
        self._caches: CacheCollector | None = None
        self._audit_events: AuditEventsCollector | None = None
        self._reports: PolicyReportsCollector | None = None
        # labelled series by their labels: prometheus_client takes a lock and checks the
        # labels on every labels() call, and the same few series are counted on every request
        self._series: dict[tuple[object, ...], Any] = {}
        self.build_info.labels(build_version(), platform.python_version()).set(1)
        # series that exist at 0 from the start: a rate() or an alert sees the first event
        for verb in DEADLINE_VERBS:
            self._child(self.deadline_exceeded, verb)
        for result in ("ok", "failed"):
            self.reloads.labels(result)
        for reason in BIND_REFUSAL_REASONS:
            self._child(self.bind_refusals, reason)

    def watch_caches(self, source: WatchedSource) -> None:
        """Report a live node source's caches at every scrape."""
        self._caches = CacheCollector(source)
        self.registry.register(self._caches)

    def watch_audit_events(self, source: AuditEventCounts) -> None:
        """Report an Event recorder's counts at every scrape."""
        self._audit_events = AuditEventsCollector(source)
        self.registry.register(self._audit_events)

    def watch_policy_reports(self, source: PolicyReportCounts) -> None:
        """Report a policy report writer's counts at every scrape."""
        self._reports = PolicyReportsCollector(source)
        self.registry.register(self._reports)

    def _child(self, family: Any, *labels: str) -> Any:
        key = (id(family), *labels)
        child = self._series.get(key)
        if child is None:
            child = self._series[key] = family.labels(*labels)
        return child

    def count(self, name: str, code: str) -> None:
        """One answered request to the endpoint `name` (a verb, or healthz, metrics...)."""
        if name in VERBS:
            self._child(self.requests, name, code).inc()
        else:
            self._child(self.endpoint_requests, name, code).inc()

    def bind_refused(self, reason: str) -> None:
        """One bind /bind did not make, for one of BIND_REFUSAL_REASONS."""
        self._child(self.bind_refusals, reason).inc()

    def count_refused(self, code: int) -> None:
        """One request the HTTP server refused before the application saw it."""
        self._child(self.refused, str(code)).inc()

    def set_policy(self, policies: PolicySet) -> None:
        """The policy set being served; each of its rules' series is created (at 0) the
        first time a version is seen, so that they exist before their first event."""
        version = policies.version
        if version != self._version:
            if self._version:  # (multiprocess gauges cannot remove a series: zero it)
                self.policy_version.labels(self._version).set(0)
            self.policy_version.labels(version).set(1)
            self._version = version
            self._create_rule_series(policies)
        self.policies_loaded.set(len(policies.policies))
        self.policy_rules.set(policies.rule_count())

    def _create_rule_series(self, policies: PolicySet) -> None:
        child = self._child
        for policy in policies.policies:
            for f in policy.filters:
                family = self.audit_rejections if f.rule.mode == "Audit" else self.rejections
                child(family, policy.name, f.rule.name)
                child(self.rule_errors, policy.name, f.rule.name)
            for s in policy.scores:
                if s.rule.mode == "Audit":
                    child(self.audit_scores, policy.name, s.rule.name)
                    child(self.audit_score_points, policy.name, s.rule.name)
                child(self.rule_errors, policy.name, s.rule.name)

    def reloaded(self, ok: bool, at: float) -> None:
        self.reloads.labels("ok" if ok else "failed").inc()
        self.last_reload_ok.set(1 if ok else 0)
        self.last_reload_time.set(at)

    def observe(self, verb: str, ev: Evaluation | None, nodes: int, seconds: float) -> None:
        """Latency and size of every verb; rule outcomes only for the scheduling decisions
        (filter and prioritize), not for /explain or preemption what-ifs."""
        self._child(self.latency, verb).observe(seconds)
        self._child(self.nodes, verb).observe(nodes)
        if ev is None:
            return
        if ev.timed_out:
            self._child(self.deadline_exceeded, verb).inc()
        if verb not in ("filter", "prioritize"):
            return
        if verb == "filter" and nodes and not ev.feasible_count():
            self.no_feasible_node.inc()
        self.evaluations.inc(ev.evaluations)
        if ev.errors:
            self.errors.inc(ev.errors)
        # counted per rule by the evaluation: a label lookup per node would cost more
        tally = ev.tally()
        child = self._child
        for (policy, rule), n in tally.rejections.items():
            child(self.rejections, policy, rule).inc(n)
        for (policy, rule), n in tally.audits.items():
            child(self.audit_rejections, policy, rule).inc(n)
        for (policy, rule), n in tally.errors.items():
            child(self.rule_errors, policy, rule).inc(n)
        for (policy, rule), audit in ev.audit_scores.items():
            child(self.audit_scores, policy, rule).inc(audit.nodes)
            child(self.audit_score_points, policy, rule).inc(audit.points)

    def render(self) -> tuple[bytes, str]:
        if self.multiprocess:
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            if self._caches is not None:  # per process: not in the shared files
                registry.register(self._caches)
            if self._audit_events is not None:
                registry.register(self._audit_events)
            if self._reports is not None:
                registry.register(self._reports)
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
