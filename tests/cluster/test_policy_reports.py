"""What a policy report on a pod says (cluster/report_body.py), when it is written (once the node cache holds the pod
bound), that only the cluster's pods and nodes get one, and what a cluster without the
report CRD gets (against a stand-in for the API server; the reports themselves are tested
against the real one: tests/e2e/test_policy_reports.py)."""

from __future__ import annotations

import copy
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from policyext.cluster import policy_reports
from policyext.cluster.cache import ClusterSource
from policyext.cluster.policy_reports import (
    BUSY_FOR,
    RECHECK_AFTER,
    UNBOUND_AFTER,
    PolicyReports,
)
from policyext.cluster.report_body import (
    OPEN_REPORT,
    POLICY_REPORT,
    REPORT_APIS,
    ReportApi,
    audit_filters,
    filtered,
    report_body,
)
from policyext.policy import PolicySet
from policyext.policy.compile import load_policy_texts
from policyext.policy.engine import evaluate
from policyext.server.metrics import Metrics
from policyext.settings import REPORT_APIS as SETTINGS_REPORT_APIS
from tests.cluster.fake_core import fake_api

Json = dict[str, Any]

ROLLOUT = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: rollout
spec:
  filters:
    - name: no-spot-nodes
      expression: "!node.metadata.name.startsWith('spot-')"
      mode: Audit
    - name: zone-a-only
      expression: "node.metadata.labels['zone'] == 'a'"
      mode: Audit
    - name: no-gpu-nodes
      expression: "!node.metadata.name.startsWith('gpu-')"
"""
DATABASES = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: databases
spec:
  match:
    podSelector:
      matchLabels: {app: db}
  filters:
    - name: ssd-only
      expression: "node.metadata.name.endsWith('-ssd')"
      mode: Audit
"""
ENFORCE_ONLY = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: plain
spec:
  filters:
    - name: no-gpu-nodes
      expression: "!node.metadata.name.startsWith('gpu-')"
"""
NODES = ["spot-a", "plain-a", "plain-b"]  # plain-b has no zone label: zone-a-only fails there
POD: Json = {"metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1"}, "spec": {}}


def _node(name: str) -> Json:
    labels = {} if name == "plain-b" else {"zone": "a"}
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "4"}},
    }


def _policies(*texts: str) -> PolicySet:
    return load_policy_texts({f"{i}.yaml": text for i, text in enumerate(texts)})


def _bound(pod: Json, node: str) -> Json:
    bound = copy.deepcopy(pod)
    bound["spec"]["nodeName"] = node
    return bound


class _Raw:
    """An undecoded answer (`_preload_content=False`), as urllib3 gives it."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.released = False

    def release_conn(self) -> None:
        self.released = True


@dataclass
class FakeReports:
    """The report API of an API server: a server-side apply creates or replaces the object
    (one field manager owns all of it); `missing`: the CRD is not installed (404)."""

    objects: dict[tuple[str, str], Json] = field(default_factory=dict)
    calls: list[tuple[str, str, str, str]] = field(default_factory=list)
    missing: bool = False

    def patch_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        body: Json,
        *,
        field_manager: str,
        force: bool,
        _content_type: str,
        _preload_content: bool = True,
        **_: Any,
    ) -> _Raw:
        assert _content_type == "application/apply-patch+yaml" and force
        assert not _preload_content  # the written object is not decoded
        assert field_manager == "policyext"
        self.calls.append((group, version, plural, name))
        if self.missing:
            error = ApiException(status=404, reason="Not Found")
            error.body = json.dumps(
                {"kind": "Status", "code": 404, "message": "the server could not find it"}
            ).encode()
            raise error
        assert body["metadata"]["name"] == name and body["metadata"]["namespace"] == namespace
        self.objects[(namespace, name)] = copy.deepcopy(body)
        return _Raw(json.dumps(body).encode())


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _writer(
    policies: PolicySet, api: ReportApi = POLICY_REPORT, rate: float = 1000
) -> tuple[PolicyReports, ClusterSource, FakeReports, _Clock]:
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace("nodes", [_node(n) for n in NODES])
    source.replace("pods", [])
    custom = FakeReports()
    clock = _Clock()

    class Store:
        current = policies

    reports = PolicyReports(
        fake_api(custom=custom), source, Store(), api, rate=rate, clock=clock, start=False
    )
    return reports, source, custom, clock


def _filter(reports: PolicyReports, pod: Json = POD, nodes: list[str] = NODES) -> None:
    """A filter call's hand-over, then the thread's work on it."""
    ev = evaluate(reports.policies.current, pod, [_node(n) for n in nodes], scores=False)
    reports.offer(pod, ev)
    while not reports.pending.empty():
        reports.take(*reports.pending.get_nowait())


# -- what a report says ----------------------------------------------------------------------

RESULTS = {
    # the node the pod was bound to -> each Audit rule's result there
    "spot-a": {"no-spot-nodes": "fail", "zone-a-only": "pass"},
    "plain-a": {"no-spot-nodes": "pass", "zone-a-only": "pass"},
    "plain-b": {"no-spot-nodes": "pass", "zone-a-only": "error"},
}


@pytest.mark.parametrize("node", list(RESULTS))
def test_each_audit_rule_gets_a_result_about_the_node_the_pod_was_bound_to(node: str) -> None:
    policies = _policies(ROLLOUT)
    ev = evaluate(policies, POD, [_node(n) for n in NODES], scores=False)
    finding = filtered(POD, ev, audit_filters(policies), 0.0)
    assert finding is not None
    body = report_body(POLICY_REPORT, finding, node, 1_700_000_000.5)
    got = {r["rule"]: r["result"] for r in body["results"]}
    assert got == RESULTS[node]  # the Enforce rule has no result
    assert all(r["source"] == "policyext" and r["policy"] == "rollout" for r in body["results"])
    counts = list(RESULTS[node].values())
    assert body["summary"] == {
        k: counts.count(k) for k in ("pass", "fail", "warn", "error", "skip")
    }
    spot = next(r for r in body["results"] if r["rule"] == "no-spot-nodes")
    assert "1 node of the 3 nodes evaluated" in spot["message"]
    assert spot["properties"]["node"] == node and spot["timestamp"]["seconds"] == 1_700_000_000


@pytest.mark.parametrize("api", [POLICY_REPORT, OPEN_REPORT])
def test_the_report_is_scoped_to_and_owned_by_its_pod(api: ReportApi) -> None:
    policies = _policies(ROLLOUT)
    ev = evaluate(policies, POD, [_node(n) for n in NODES], scores=False)
    finding = filtered(POD, ev, audit_filters(policies), 0.0)
    assert finding is not None
    body = report_body(api, finding, "plain-a", 0.0)
    assert (body["apiVersion"], body["kind"]) == (api.api_version, api.kind)
    pod = {"apiVersion": "v1", "kind": "Pod", "name": "web-1", "uid": "u-1"}
    assert body["metadata"]["ownerReferences"] == [pod]  # no blockOwnerDeletion: no pod rights
    assert body["metadata"]["namespace"] == "shop"
    assert body["metadata"]["name"] == "policyext-u-1"
    assert body["scope"] == {**pod, "namespace": "shop"}


def test_the_settings_offer_the_apis_the_writer_knows() -> None:
    assert set(SETTINGS_REPORT_APIS) == set(REPORT_APIS)


# -- which pods get one, and when ------------------------------------------------------------

OFFERED = {
    # the policies, the pod's labels -> whether its filter call is kept for a report
    "an Audit filter applies": ((ROLLOUT,), {}, True),
    "only Enforce filters apply": ((ENFORCE_ONLY,), {}, False),
    "the Audit policy matches other pods": ((DATABASES, ENFORCE_ONLY), {"app": "web"}, False),
    "the Audit policy matches this pod": ((DATABASES, ENFORCE_ONLY), {"app": "db"}, True),
}


@pytest.mark.parametrize("case", list(OFFERED))
def test_only_pods_audit_filters_apply_to_are_kept_for_a_report(case: str) -> None:
    texts, labels, kept = OFFERED[case]
    reports, _, _, _ = _writer(_policies(*texts))
    pod = copy.deepcopy(POD)
    pod["metadata"]["labels"] = labels
    _filter(reports, pod)
    assert list(reports.waiting) == (["u-1"] if kept else [])


def test_the_report_is_written_once_the_cache_holds_the_pod_bound_and_only_once() -> None:
    reports, source, custom, _ = _writer(_policies(ROLLOUT))
    _filter(reports, POD, ["spot-a", "plain-b"])  # an earlier call, on other nodes
    _filter(reports)  # the last filter call before the binding: this one is reported
    reports.write_ready()
    assert custom.calls == []  # pending: nothing to report yet
    source.apply("pods", "ADDED", _bound(POD, "spot-a"))
    reports.write_ready()
    report = custom.objects[("shop", "policyext-u-1")]
    assert report["results"][0]["properties"]["evaluatedNodes"] == "3"
    assert report["summary"]["fail"] == 1
    _filter(reports)  # a late hand-over of the same call
    reports.write_ready()
    assert len(custom.calls) == 1
    assert reports.counts["written"] == 1


def test_a_pod_never_bound_is_forgotten_and_counted() -> None:
    reports, _, custom, clock = _writer(_policies(ROLLOUT))
    _filter(reports)
    clock.now += UNBOUND_AFTER + 1
    reports.write_ready()
    assert (reports.waiting, custom.calls, reports.counts["unbound"]) == ({}, [], 1)


UNVERIFIED = {
    # what the cluster has -> the outcome of a filter call of POD on NODES
    "another pod under that UID": (
        {"metadata": {"name": "web-9", "namespace": "shop", "uid": "u-1"}, "spec": {}},
        "unverified",
    ),
    "the pod, on a node the filter call did not name": (POD, "superseded"),
}


@pytest.mark.parametrize("case", list(UNVERIFIED))
def test_only_the_clusters_pod_on_nodes_it_was_filtered_on_gets_a_report(case: str) -> None:
    pod, outcome = UNVERIFIED[case]
    reports, source, custom, _ = _writer(_policies(ROLLOUT))
    _filter(reports)
    node = "plain-a" if outcome == "unverified" else "plain-z"
    source.apply("pods", "ADDED", _bound(pod, node))
    reports.write_ready()
    assert custom.calls == []
    assert reports.counts[outcome] == 1


def test_a_node_the_cache_does_not_hold_makes_the_finding_unverified() -> None:
    reports, source, custom, _ = _writer(_policies(ROLLOUT))
    _filter(reports, POD, [*NODES, "spot-URGENT-made-up"])
    source.apply("pods", "ADDED", _bound(POD, "plain-a"))
    reports.write_ready()
    assert (custom.calls, reports.counts["unverified"]) == ([], 1)


def test_writes_keep_to_the_rate_and_the_rest_wait_for_the_next_pass() -> None:
    reports, source, custom, clock = _writer(_policies(ROLLOUT), rate=1)
    for i in range(4):  # one pod a second: no burst
        pod = {"metadata": {"name": f"web-{i}", "namespace": "shop", "uid": f"u-{i}"}, "spec": {}}
        _filter(reports, pod)
        source.apply("pods", "ADDED", _bound(pod, "plain-a"))
        clock.now += 1.0
    reports.bucket.tokens, reports.bucket.at = 2.0, clock.now  # two writes' worth
    reports.write_ready()
    assert len(custom.calls) == 2 and len(reports.waiting) == 2
    clock.now += 1
    reports.write_ready()
    assert len(custom.calls) == 3


def _burst(reports: PolicyReports, source: ClusterSource, pods: int) -> None:
    """`pods` bound pods filtered within one second."""
    for i in range(pods):
        pod = {"metadata": {"name": f"web-{i}", "namespace": "shop", "uid": f"u-{i}"}, "spec": {}}
        _filter(reports, pod)
        source.apply("pods", "ADDED", _bound(pod, "plain-a"))


def test_during_a_burst_of_pods_faster_than_the_rate_nothing_is_written_until_it_ends() -> None:
    reports, source, custom, clock = _writer(_policies(ROLLOUT), rate=2)
    _burst(reports, source, 5)
    reports.write_ready()
    assert custom.calls == []  # the filter calls of the burst have the interpreter
    clock.now += BUSY_FOR
    reports.write_ready()
    assert len(custom.calls) == 5  # (the bucket's first burst)


def test_a_long_burst_still_gets_its_reports_once_half_the_waiting_room_is_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(policy_reports, "WAITING", 8)
    reports, source, custom, _ = _writer(_policies(ROLLOUT), rate=2)
    _burst(reports, source, 3)
    reports.write_ready()
    assert custom.calls == []
    _burst(reports, source, 5)  # (the same first three again, and two more)
    reports.write_ready()
    assert len(custom.calls) == 2  # down to below half the room: the writes wait again
    assert len(reports.waiting) == 3


def test_a_cluster_without_the_crd_gets_one_log_line_and_its_pods_reports_once_it_has_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reports, source, custom, clock = _writer(_policies(ROLLOUT))
    custom.missing = True
    for i in range(5):
        pod = {"metadata": {"name": f"web-{i}", "namespace": "shop", "uid": f"u-{i}"}, "spec": {}}
        _filter(reports, pod)
        source.apply("pods", "ADDED", _bound(pod, "plain-a"))
    with caplog.at_level(logging.INFO, "policyext.cluster.reports"):
        reports.write_ready()
        clock.now += RECHECK_AFTER / 2
        reports.write_ready()
        assert len(custom.calls) == 1  # the others are not even tried before the recheck
        assert not reports.available and len(reports.waiting) == 5
        custom.missing = False  # the CRD is installed
        clock.now += RECHECK_AFTER / 2
        reports.write_ready()
    assert reports.available and reports.counts["written"] == 5
    assert {name for _, name in custom.objects} == {f"policyext-u-{i}" for i in range(5)}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "policyreports.wgpolicyk8s.io" in warnings[0].getMessage()
    assert any("now" in r.getMessage() for r in caplog.records if r.levelno == logging.INFO)


def test_the_findings_of_bound_pods_wait_for_the_crd_no_longer_than_an_unbound_pod(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reports, source, custom, clock = _writer(_policies(ROLLOUT))
    custom.missing = True
    _filter(reports)
    source.apply("pods", "ADDED", _bound(POD, "plain-a"))
    reports.write_ready()
    clock.now += UNBOUND_AFTER + 1
    reports.write_ready()
    assert (reports.waiting, reports.counts["unavailable"]) == ({}, 1)
    assert len(custom.calls) == 1


def test_the_metrics_say_what_became_of_the_reports_and_whether_the_api_is_there() -> None:
    reports, source, custom, _ = _writer(_policies(ROLLOUT))
    metrics = Metrics()
    metrics.watch_policy_reports(reports)
    custom.missing = True
    _filter(reports)
    source.apply("pods", "ADDED", _bound(POD, "plain-a"))
    reports.write_ready()
    text = metrics.render()[0].decode()
    assert 'policyext_policy_reports_total{result="unavailable"} 0.0' in text
    assert 'policyext_policy_reports_total{result="written"} 0.0' in text
    assert "policyext_policy_reports_api_available 0.0" in text


def test_filter_calls_arriving_during_slow_writes_are_taken_between_them_not_dropped() -> None:
    """A write waits for the API server; the burst's filter calls keep coming meanwhile.
    The queue is emptied between two writes, so it never fills while writes go on."""
    policies = _policies(ROLLOUT)
    source = ClusterSource(fake_api())
    source.replace("nodes", [_node(n) for n in NODES])
    source.replace("pods", [])
    arrivals = iter(range(100, 200))

    class SlowReports(FakeReports):
        def patch_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> _Raw:
            for _ in range(3):  # three filter calls while this write waits
                i = next(arrivals)
                pod = {"metadata": {"name": f"w-{i}", "namespace": "shop", "uid": f"u-{i}"}}
                pod["spec"] = {}
                writer.offer(pod, evaluate(policies, pod, [_node(n) for n in NODES], scores=False))
            return super().patch_namespaced_custom_object(*args, **kwargs)

    class Store:
        current = policies

    custom = SlowReports()
    writer = PolicyReports(
        fake_api(custom=custom), source, Store(), rate=1000, queue_size=4, start=False
    )
    for i in range(10):
        pod = {"metadata": {"name": f"web-{i}", "namespace": "shop", "uid": f"u-{i}"}, "spec": {}}
        _filter(writer, pod)
        source.apply("pods", "ADDED", _bound(pod, "plain-a"))
    writer.write_ready()
    assert len(custom.calls) == 10
    assert writer.counts["dropped"] == 0
    assert len(writer.waiting) == 30  # the 30 calls that came during the writes, kept
