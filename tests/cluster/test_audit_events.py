"""What an Audit Event on a pod says, how often one may be recorded, and that only the
cluster's pods and nodes become Events (against a stand-in for the API server; the
recording itself is tested against the real one: tests/e2e/test_audit_events.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from policyext.cluster import audit_events
from policyext.cluster.audit_events import (
    NODES_NAMED,
    AuditEvents,
    AuditFinding,
    TokenBucket,
    audit_finding,
    event_body,
)
from policyext.cluster.cache import ClusterSource
from policyext.cluster.events import EVENT_MESSAGE_LIMIT
from policyext.policy.compile import load_policy_texts
from policyext.policy.engine import evaluate
from tests.cluster.fake_core import FakeCore, fake_api

POLICY = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: rollout
spec:
  filters:
    - name: no-spot-nodes
      expression: "!node.metadata.name.startsWith('spot-')"
      mode: Audit
    - name: no-gpu-nodes
      expression: "!node.metadata.name.startsWith('gpu-')"
"""
POD: dict[str, Any] = {"metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1"}}


def _node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": "4"}}}


def _finding(nodes: list[str], pod: dict[str, Any] = POD) -> AuditFinding | None:
    policies = load_policy_texts({"rollout.yaml": POLICY})
    ev = evaluate(policies, pod, [_node(n) for n in nodes], scores=False)
    return audit_finding(pod, ev)


def test_a_finding_names_each_audit_rule_its_node_count_and_the_first_nodes() -> None:
    spots = [f"spot-{i}" for i in range(8)]
    finding = _finding(["plain-a", *spots, "gpu-a"])
    assert finding is not None
    assert (finding.namespace, finding.name, finding.uid) == ("shop", "web-1", "u-1")
    assert finding.rules == (("rollout/no-spot-nodes", 8, tuple(spots[:NODES_NAMED])),)
    assert finding.message().endswith(
        "rollout/no-spot-nodes on 8 nodes (spot-0, spot-1, spot-2, spot-3, spot-4, and 3 more)"
    )


@pytest.mark.parametrize(
    ("nodes", "pod"),
    [
        (["plain-a", "gpu-a"], POD),  # the Enforce rule rejects; no Audit rule would have
        (["spot-a"], {"metadata": {"namespace": "shop"}}),  # no name to attach an Event to
    ],
)
def test_no_finding_without_an_audit_rejection_or_a_pod_name(
    nodes: list[str], pod: dict[str, Any]
) -> None:
    assert _finding(nodes, pod) is None


def test_a_retried_pod_has_the_same_finding_and_event_name() -> None:
    first, again = _finding(["spot-a", "plain-a"]), _finding(["plain-b", "spot-a"])
    assert first is not None and again is not None
    assert first.key == again.key
    names = [event_body(f, "pod-1")["metadata"]["name"] for f in (first, again)]
    assert names[0] == names[1]
    assert len(names[0]) <= 253


def test_the_event_is_about_the_pod_and_its_message_fits_the_limit() -> None:
    many = tuple((f"policy-{i}/rule-{i}", 100, ("node-a" * 10,)) for i in range(40))
    finding = AuditFinding("shop", "web-1", "u-1", "abc123", many)
    body = event_body(finding, "policyext-7d9f")
    assert body["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "shop",
        "name": "web-1",
        "uid": "u-1",
    }
    assert (body["reason"], body["type"]) == ("PolicyAudit", "Normal")
    assert len(body["message"]) == EVENT_MESSAGE_LIMIT
    assert body["message"].endswith("...")


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_lets_a_burst_through_then_the_rate() -> None:
    clock = _Clock()
    bucket = TokenBucket(rate=2.0, burst=3, clock=clock)
    for _ in range(3):
        assert bucket.wait() == 0.0
        bucket.take()
    assert bucket.wait() == pytest.approx(0.5)
    clock.now += 0.5
    assert bucket.wait() == 0.0
    bucket.take()
    clock.now += 100  # idle: never more than the burst
    for _ in range(3):
        assert bucket.wait() == 0.0
        bucket.take()
    assert bucket.wait() > 0


# -- what may become an Event: only the cluster's pods and nodes -----------------------------
# /filter takes any pod and any nodes; the Event is about the cluster's pod, names the
# cluster's nodes, or is not recorded at all.

CLUSTER_NODES = ["spot-a", "spot-b", "plain-a"]
BOUND = {
    "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1"},
    "spec": {"nodeName": "plain-a"},
}
PENDING = {"metadata": {"name": "web-2", "namespace": "shop", "uid": "u-2"}, "spec": {}}


def _recorder() -> tuple[AuditEvents, FakeCore]:
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace("nodes", [_node(n) for n in CLUSTER_NODES])
    source.replace("pods", [copy.deepcopy(BOUND)])  # the pod watch: bound pods only
    core = FakeCore()
    core.add(copy.deepcopy(BOUND))
    core.add(copy.deepcopy(PENDING))
    events = AuditEvents(fake_api(core), source, "policyext-0", rate=1000, start=False)
    return events, core


def _named(pod: dict[str, Any], **meta: str) -> dict[str, Any]:
    return {**pod, "metadata": {**pod["metadata"], **meta}}


FORGED_NODE = "URGENT-run-curl-evil-sh"
OFFERS: dict[str, tuple[dict[str, Any], list[str], str]] = {
    # the pod and nodes a filter call sends -> the Event's pod ("": none recorded)
    "a bound pod the node cache holds, on its nodes": (BOUND, ["spot-a", "plain-a"], "web-1"),
    "a pending pod the API server has, on the cache's nodes": (PENDING, ["spot-b"], "web-2"),
    "a made-up pod": (_named(PENDING, name="db-0", uid="u-made-up"), ["spot-a"], ""),
    "a pod without a UID": (_named(PENDING, uid=""), ["spot-a"], ""),
    "a real pod's UID under another name": (_named(BOUND, name="web-9"), ["spot-a"], ""),
    "a real pod's UID in another namespace": (_named(BOUND, namespace="payments"), ["spot-a"], ""),
    "a real pod's name with another UID": (_named(PENDING, uid="u-forged"), ["spot-a"], ""),
    "a real pod on a made-up node": (BOUND, ["spot-a", f"spot-{FORGED_NODE}"], ""),
    "a real pod on nodes the cache does not hold only": (PENDING, [f"spot-{FORGED_NODE}"], ""),
}


@pytest.mark.parametrize("offer", list(OFFERS))
def test_only_the_clusters_pods_on_the_clusters_nodes_become_events(offer: str) -> None:
    pod, nodes, expected = OFFERS[offer]
    recorder, core = _recorder()
    policies = load_policy_texts({"rollout.yaml": POLICY})

    recorder.record(pod, evaluate(policies, pod, [_node(n) for n in nodes], scores=False))

    if not expected:
        assert core.events == []
        assert recorder.counts["unverified"] == 1
        return
    [(namespace, event)] = core.events
    assert (namespace, event["involvedObject"]["name"]) == ("shop", expected)
    assert event["involvedObject"]["uid"] == pod["metadata"]["uid"]
    spots = [n for n in nodes if n.startswith("spot-")]
    assert f"rollout/no-spot-nodes on {len(spots)} node" in event["message"]
    assert all(n in event["message"] for n in spots)
    assert recorder.counts == {**recorder.counts, "recorded": 1, "unverified": 0}


def test_a_forged_finding_does_not_keep_the_real_pods_event_from_being_recorded() -> None:
    recorder, core = _recorder()
    policies = load_policy_texts({"rollout.yaml": POLICY})
    forged = _named(BOUND, name="web-9")  # the real UID, the same rules: the same key
    for pod in (forged, BOUND):
        recorder.record(pod, evaluate(policies, pod, [_node("spot-a")], scores=False))
    assert [event["involvedObject"]["name"] for _, event in core.events] == ["web-1"]
    assert (recorder.counts["unverified"], recorder.counts["recorded"]) == (1, 1)


# -- an Event the API server does not take at once ------------------------------------------


class _Unwell(Exception):
    """A connection that timed out or was reset."""


ANSWERS: dict[str, tuple[list[int | None], int, int]] = {
    # what the API server answers each create (an HTTP status, None: no answer at all)
    # -> the creates asked, and whether the Event was recorded
    "a 504, then taken": ([504], 2, 1),
    "two 503s, then taken": ([503, 503], 3, 1),
    "no answer, then taken": ([None], 2, 1),
    "a 429, then taken": ([429], 2, 1),
    "three 500s: not recorded": ([500, 500, 500], 3, 0),
    "a 403: refused, not asked again": ([403], 1, 0),
}


@pytest.mark.parametrize("answers", list(ANSWERS))
def test_an_event_the_api_server_did_not_take_is_asked_again_a_little_later(
    answers: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures, asked, recorded = ANSWERS[answers]
    recorder, core = _recorder()
    monkeypatch.setattr(audit_events, "RETRY_DELAY", 0.0)
    calls: list[int] = []
    create = core.create_namespaced_event

    def unwell_first(namespace: str, body: dict[str, Any], **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) <= len(failures):
            status = failures[len(calls) - 1]
            if status is None:
                raise _Unwell("read timed out")
            raise ApiException(status=status, reason="")
        return create(namespace, body, **kwargs)

    monkeypatch.setattr(core, "create_namespaced_event", unwell_first)
    policies = load_policy_texts({"rollout.yaml": POLICY})

    recorder.record(BOUND, evaluate(policies, BOUND, [_node("spot-a")], scores=False))

    assert (len(calls), len(core.events)) == (asked, recorded)
    assert (recorder.counts["recorded"], recorder.counts["failed"]) == (recorded, 1 - recorded)


def test_a_finding_not_recorded_is_recorded_when_offered_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorder, core = _recorder()
    monkeypatch.setattr(audit_events, "RETRY_DELAY", 0.0)
    policies = load_policy_texts({"rollout.yaml": POLICY})
    ev = evaluate(policies, BOUND, [_node("spot-a")], scores=False)
    core.fail_with = 503
    recorder.record(BOUND, ev)
    core.fail_with = None

    recorder.record(BOUND, ev)

    assert [event["involvedObject"]["name"] for _, event in core.events] == ["web-1"]
    assert (recorder.counts["failed"], recorder.counts["recorded"]) == (1, 1)
