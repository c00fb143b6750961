"""Scheduling through the extender, as the cluster shows it: where pods land, what a pod
that fits nowhere says, who bound it, whom preemption evicts.

One extender (as the `policyext` identity, with the chart's RBAC) and one kube-scheduler
profile that calls it serve the whole module; every test makes its own nodes and pods.
"""

from __future__ import annotations

import json
import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import ControlPlane, KubeClient, fake_node, pod
from tests.e2e.extender import BIND_OK, CRITICAL_OFF_SPOT, PROBE_POLICY, Extender, scheduler_config
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

SCHEDULER = "policy-scenarios"
NOBODY = "no-such-scheduler"
# pods no running scheduler picks up, which the extender binds for: the tests bind them by hand
BY_HAND = "policy-scenarios-by-hand"

POLICIES = {
    "critical-off-spot.yaml": CRITICAL_OFF_SPOT,
    "prefer-gold.yaml": """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: prefer-gold
spec:
  scores:
    - name: gold-tier
      expression: "node.metadata.?labels[?'tier'].orValue('') == 'gold' ? 10 : 0"
""",
    # resolvable on purpose: the scheduler then offers the node to preemption, and only
    # our preempt verb can tell it that evicting pods there would not help
    "high-tier-off-batch.yaml": """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: high-tier-off-batch
spec:
  match:
    podSelector:
      matchLabels:
        tier: high
  filters:
    - name: not-on-batch-pool
      expression: "node.metadata.?labels[?'pool'].orValue('') != 'batch'"
      message: "high-tier pods stay off the batch pool"
""",
    "e2e-probe.yaml": PROBE_POLICY,
}


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def extender(
    control_plane: ControlPlane,
    policyext_kubeconfig: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Extender]:
    rules = tmp_path_factory.mktemp("scenario-rules")
    for name, text in POLICIES.items():
        (rules / name).write_text(text)
    # its debug log says which calls the direct lane answered (server/transport/plain.py)
    server = Extender(
        control_plane,
        policyext_kubeconfig,
        [rules],
        name="policyext-scenarios",
        args=("--log-level", "debug"),
        binds_for=f"{SCHEDULER},{BY_HAND}",
    )
    server.start()
    try:
        control_plane.start_scheduler(scheduler_config(server.url, SCHEDULER), name=SCHEDULER)
        yield server
    finally:
        if SCHEDULER in control_plane.components:
            control_plane.stop_component(SCHEDULER)
        server.stop()


def _create(admin: KubeClient, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
    return admin.create(f"/api/v1/namespaces/{namespace}/pods", manifest)


def _bound_node(admin: KubeClient, namespace: str, name: str) -> str:
    seen = admin.wait_for(
        f"/api/v1/namespaces/{namespace}/pods/{name}",
        lambda p: bool(p["spec"].get("nodeName")),
    )
    return str(seen["spec"]["nodeName"])


def _events(admin: KubeClient, namespace: str, name: str, reason: str) -> list[dict[str, Any]]:
    listed = admin.get(
        f"/api/v1/namespaces/{namespace}/events",
        fieldSelector=f"involvedObject.name={name},reason={reason}",
    )
    return list(listed["items"])


# --------------------------------------------------------------------------- placement


@pytest.mark.parametrize(
    ("labels", "nodes", "lands_on"),
    [
        # the gold spot node scores as well, but a critical pod may not go there
        (
            {"critical": "true"},
            {"spot-gold": {"lifecycle": "spot", "tier": "gold"}, "gold": {"tier": "gold"}, "a": {}},
            "gold",
        ),
        # identical nodes: the in-tree scores tie, ours decides
        ({}, {"a": {}, "gold": {"tier": "gold"}, "b": {}}, "gold"),
        ({"critical": "true"}, {"spot": {"lifecycle": "spot"}, "plain": {}}, "plain"),
    ],
)
def test_a_pod_lands_only_where_the_policies_allow_and_on_our_best_scored_node(
    admin: KubeClient,
    namespace: str,
    extender: Extender,
    labels: dict[str, str],
    nodes: dict[str, dict[str, str]],
    lands_on: str,
) -> None:
    suffix = uuid.uuid4().hex[:6]
    for name, node_labels in nodes.items():
        admin.create_fake_node(fake_node(f"{name}-{suffix}", labels=node_labels))
    names = [_unique("pod") for _ in range(2)]
    for name in names:
        _create(admin, namespace, pod(name, scheduler_name=SCHEDULER, labels=labels))

    placed = {_bound_node(admin, namespace, name) for name in names}

    assert placed == {f"{lands_on}-{suffix}"}


def test_the_schedulers_filter_and_prioritize_calls_take_the_direct_lane(
    admin: KubeClient, namespace: str, extender: Extender
) -> None:
    """kube-scheduler's client sends plain calls: the worker answers them without gunicorn's
    request handling (server/transport/plain.py), which is what makes them cheap."""
    suffix = uuid.uuid4().hex[:6]
    for name in ("a", "b"):
        admin.create_fake_node(fake_node(f"{name}-{suffix}"))
    name = _unique("pod")
    _create(admin, namespace, pod(name, scheduler_name=SCHEDULER))
    _bound_node(admin, namespace, name)

    log = extender.component.log_path.read_text(encoding="utf-8", errors="replace")
    assert "POST /filter answered in the direct lane" in log
    assert "POST /prioritize answered in the direct lane" in log


def test_the_schedulers_prioritize_calls_get_scores_worked_out_after_its_filter_calls(
    admin: KubeClient, namespace: str, extender: Extender
) -> None:
    """After a filter call kube-scheduler runs its own score plugins, then asks prioritize
    about the nodes the filter reply passed: the extender works those scores out in
    between (server/remembered.py, Ahead), for the call it expects byte for byte."""
    suffix = uuid.uuid4().hex[:6]
    for name in ("a", "b"):
        admin.create_fake_node(fake_node(f"{name}-{suffix}"))
    names = [_unique("pod") for _ in range(3)]
    placed: dict[str, int] = {}
    for name in names:
        _create(admin, namespace, pod(name, scheduler_name=SCHEDULER))
        node = _bound_node(admin, namespace, name)
        placed[node] = placed.get(node, 0) + 1
        # the binding in the extender's node information before the next pod: a pod bound
        # to a node between a filter call and its prioritize has the scores worked afresh
        eventually(lambda n=node: extender.probe([n])[n]["pods-seen"] == placed[n])

    lines = extender.component.log_path.read_text(encoding="utf-8", errors="replace")
    prioritized = {
        line["pod"]: line
        for line in map(_decision, lines.splitlines())
        if line is not None and line["verb"] == "prioritize"
    }
    # (the first pod's depends on what the scheduler asked before it)
    for name in names[1:]:
        assert prioritized[f"{namespace}/{name}"].get("scoredAhead") is True, name


def _decision(line: str) -> dict[str, Any] | None:
    """A decision line of the extender's log (its stdout), else None (the lines of each
    node at debug level among them)."""
    if not line.startswith('{"'):
        return None
    decoded = json.loads(line)
    if not isinstance(decoded, dict) or "verb" not in decoded or "node" in decoded:
        return None
    return decoded


def test_a_pod_that_fits_nowhere_says_why_in_its_failed_scheduling_event(
    admin: KubeClient, namespace: str, extender: Extender
) -> None:
    for _ in range(2):
        admin.create_fake_node(fake_node(_unique("spot"), labels={"lifecycle": "spot"}))
    name = _unique("pod")
    _create(admin, namespace, pod(name, scheduler_name=SCHEDULER, labels={"critical": "true"}))

    def with_our_reason() -> list[dict[str, Any]]:
        # an attempt made before the extender's watch delivered the new nodes says they are
        # not in its node cache; the scheduler tries again
        events = _events(admin, namespace, name, "FailedScheduling")
        return [e for e in events if "critical pods do not run on spot nodes" in e["message"]]

    message = eventually(with_our_reason)[0]["message"]
    assert message.startswith("0/")  # the scheduler's own summary, with our reason in it

    def scheduled_condition() -> dict[str, Any] | None:
        # written by the scheduler in a call of its own after the Event: awaited too
        stored = admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        assert not stored["spec"].get("nodeName")
        conditions = {c["type"]: c for c in stored["status"].get("conditions", [])}
        return conditions.get("PodScheduled")

    condition = eventually(scheduled_condition)
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")


# --------------------------------------------------------------------------- binding


def test_pods_are_bound_by_our_bind_verb_and_counted_by_the_extender_at_once(
    admin: KubeClient, namespace: str, extender: Extender
) -> None:
    node = _unique("node")
    admin.create_fake_node(fake_node(node))
    binds = extender.metric("policyext_requests_total", BIND_OK) or 0
    names = [_unique("pod") for _ in range(3)]
    for name in names:
        _create(admin, namespace, pod(name, scheduler_name=SCHEDULER))

    for name in names:
        assert _bound_node(admin, namespace, name) == node
        stored = admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        condition = {c["type"]: c for c in stored["status"]["conditions"]}["PodScheduled"]
        assert condition["status"] == "True"
        assert eventually(lambda n=name: _events(admin, namespace, n, "Scheduled"))

    # an extender that binds replaces the scheduler's binder: every bind was ours
    # (counted once our handler returns, a moment after the API shows the binding)
    eventually(lambda: extender.metric("policyext_requests_total", BIND_OK) == binds + len(names))
    assert extender.probe([node])[node]["pods-seen"] == len(names)


@pytest.mark.parametrize(
    ("second", "error"),
    [
        ("same node", ""),
        ("other node", "is already bound to node"),
        ("other uid", "has UID"),
    ],
)
def test_a_second_bind_through_the_service_succeeds_only_for_the_same_pod_and_node(
    admin: KubeClient, namespace: str, extender: Extender, second: str, error: str
) -> None:
    first, other = _unique("node"), _unique("node")
    for name in (first, other):
        admin.create_fake_node(fake_node(name))
    eventually(lambda: set(extender.probe([first, other])) == {first, other})  # (cached)
    name = _unique("pod")
    uid = _create(admin, namespace, pod(name, scheduler_name=BY_HAND))["metadata"]["uid"]

    def bind(node: str, pod_uid: str) -> Any:
        status, reply = extender.post(
            "/bind", {"PodName": name, "PodNamespace": namespace, "PodUID": pod_uid, "Node": node}
        )
        assert status == 200
        return reply

    assert bind(first, uid) == {"Error": ""}
    again = {
        "same node": (first, uid),
        "other node": (other, uid),
        "other uid": (first, str(uuid.uuid4())),
    }[second]
    reply = bind(*again)

    assert (error in reply["Error"]) if error else reply == {"Error": ""}
    assert admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")["spec"]["nodeName"] == first
    seen = extender.probe([first, other])
    assert (seen[first]["pods-seen"], seen[other]["pods-seen"]) == (1, 0)


# --------------------------------------------------------------------------- preemption


@pytest.fixture
def priority_classes(admin: KubeClient) -> Iterator[dict[str, str]]:
    """Three PriorityClasses, lowest to highest, removed after the test."""
    suffix = uuid.uuid4().hex[:6]
    classes = {"lowest": 10, "low": 100, "high": 1000}
    names = {key: f"e2e-{key}-{suffix}" for key in classes}
    for key, value in classes.items():
        admin.create(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {"metadata": {"name": names[key]}, "value": value},
        )
    yield names
    for name in names.values():
        admin.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


def test_preemption_evicts_only_on_a_node_our_policies_allow(
    admin: KubeClient, namespace: str, extender: Extender, priority_classes: dict[str, str]
) -> None:
    batch, allowed = _unique("batch"), _unique("general")
    admin.create_fake_node(fake_node(batch, cpu="1", labels={"pool": "batch"}))
    admin.create_fake_node(fake_node(allowed, cpu="1"))
    # the batch node's pods are the cheaper victims: left to itself, the scheduler would
    # evict there, where the preemptor may not run
    victims = {batch: (_unique("victim"), "lowest"), allowed: (_unique("victim"), "low")}
    for node, (name, priority) in victims.items():
        manifest = pod(name, scheduler_name=NOBODY, cpu="800m")
        manifest["spec"].update(nodeName=node, priorityClassName=priority_classes[priority])
        _create(admin, namespace, manifest)
    eventually(lambda: all(extender.probe([batch, allowed])[n]["pods-seen"] == 1 for n in victims))

    preemptor = _unique("preemptor")
    manifest = pod(preemptor, scheduler_name=SCHEDULER, cpu="500m", labels={"tier": "high"})
    manifest["spec"]["priorityClassName"] = priority_classes["high"]
    _create(admin, namespace, manifest)

    path = f"/api/v1/namespaces/{namespace}/pods"
    nominated = admin.wait_for(
        f"{path}/{preemptor}", lambda p: bool(p["status"].get("nominatedNodeName")), 30
    )
    assert nominated["status"]["nominatedNodeName"] == allowed
    # the victims are deleted after the nomination (asynchronous preemption); no kubelet
    # is there to finish a graceful delete, so the victim stays, marked
    admin.wait_for(
        f"{path}/{victims[allowed][0]}", lambda p: bool(p["metadata"].get("deletionTimestamp"))
    )
    survivor = admin.get(f"{path}/{victims[batch][0]}")
    assert not survivor["metadata"].get("deletionTimestamp")

    # finish the eviction as a kubelet would: the preemptor then lands where it was nominated
    admin.delete(f"{path}/{victims[allowed][0]}", gracePeriodSeconds="0")
    assert _bound_node(admin, namespace, preemptor) == allowed
    assert admin.get(f"{path}/{victims[batch][0]}")["spec"]["nodeName"] == batch


# --------------------------------------------------------------------------- visibility

VISIBILITY_PODS = 50


def test_a_pod_bound_by_someone_else_shows_in_the_extenders_node_information(
    admin: KubeClient, namespace: str, extender: Extender, capsys: pytest.CaptureFixture[str]
) -> None:
    """The figures in docs/architecture.md ("Pods bound by someone else") come from here:
    run with `-s` to see them."""
    node = _unique("node")
    admin.create_fake_node(fake_node(node, cpu="64", pods=VISIBILITY_PODS + 10))
    delays: list[float] = []
    for count in range(1, VISIBILITY_PODS + 1):
        manifest = pod(_unique("bound"), scheduler_name=NOBODY, cpu="10m")
        manifest["spec"]["nodeName"] = node  # bound at creation, as a DaemonSet's pods are
        _create(admin, namespace, manifest)
        stored = time.monotonic()  # the API server has it from here on
        eventually(lambda c=count: extender.probe([node])[node]["pods-seen"] == c, interval=0.002)
        delays.append(time.monotonic() - stored)

    delays.sort()
    median = statistics.median(delays)
    p99 = delays[min(len(delays) - 1, round(0.99 * (len(delays) - 1)))]
    with capsys.disabled():
        print(
            f"\npod visibility over {len(delays)} pods: median {median * 1000:.1f} ms, "
            f"p99 {p99 * 1000:.1f} ms, max {delays[-1] * 1000:.1f} ms"
        )
    assert len(delays) == VISIBILITY_PODS  # each one seen (how soon is the figure above)
