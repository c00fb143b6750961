"""Audit findings as Events on the pod, through the real kube-scheduler and API server:
`kubectl describe pod` shows which Audit rule would have rejected which nodes, once per
finding, however often the pod is filtered."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import ControlPlane, KubeClient, fake_node, pod
from tests.e2e.extender import Extender, scheduler_config
from tests.e2e.policies import AUDIT_SPOT_NODES
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

SCHEDULER = "policy-audit"
NOBODY = "no-such-scheduler"


@pytest.fixture(scope="module")
def extender(
    control_plane: ControlPlane,
    policyext_kubeconfig: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Extender]:
    rules = tmp_path_factory.mktemp("audit-rules")
    (rules / "rollout.yaml").write_text(AUDIT_SPOT_NODES)
    server = Extender(
        control_plane, policyext_kubeconfig, [rules], name="policyext-audit", binds_for=SCHEDULER
    )
    server.start()
    try:
        control_plane.start_scheduler(scheduler_config(server.url, SCHEDULER), name=SCHEDULER)
        yield server
    finally:
        if SCHEDULER in control_plane.components:
            control_plane.stop_component(SCHEDULER)
        server.stop()


def _audit_events(admin: KubeClient, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = admin.get(
        f"/api/v1/namespaces/{namespace}/events",
        fieldSelector=f"involvedObject.name={name},reason=PolicyAudit",
    )
    return list(listed["items"])


def test_a_scheduled_pod_gets_an_event_naming_the_audit_rule_and_the_nodes(
    admin: KubeClient, namespace: str, extender: Extender
) -> None:
    suffix = uuid.uuid4().hex[:6]
    admin.create_fake_node(fake_node(f"spot-{suffix}", labels={"lifecycle": "spot"}))
    admin.create_fake_node(fake_node(f"plain-{suffix}"))
    name = f"audited-{suffix}"
    admin.create(f"/api/v1/namespaces/{namespace}/pods", pod(name, scheduler_name=SCHEDULER))

    admin.wait_for(
        f"/api/v1/namespaces/{namespace}/pods/{name}",
        lambda p: bool(p["spec"].get("nodeName")),
    )
    [event] = eventually(lambda: _audit_events(admin, namespace, name))

    assert event["type"] == "Normal"
    assert event["involvedObject"]["kind"] == "Pod"
    assert "rollout/no-spot-nodes on 1 node" in event["message"]
    assert f"spot-{suffix}" in event["message"]
    assert f"plain-{suffix}" not in event["message"]


def test_the_same_finding_for_a_pod_filtered_again_is_recorded_once(
    admin: KubeClient, namespace: str, extender: Extender
) -> None:
    suffix = uuid.uuid4().hex[:6]
    admin.create_fake_node(fake_node(f"spot-{suffix}", labels={"lifecycle": "spot"}))
    name = f"retried-{suffix}"
    created = admin.create(f"/api/v1/namespaces/{namespace}/pods", pod(name, scheduler_name=NOBODY))
    repeated = extender.metric("policyext_audit_events_total", {"result": "repeated"}) or 0.0
    request = {"Pod": created, "NodeNames": [f"spot-{suffix}"]}

    for _ in range(3):  # as the scheduler retries a pod
        assert extender.post("/filter", request)[0] == 200
    eventually(
        lambda: (
            (extender.metric("policyext_audit_events_total", {"result": "repeated"}) or 0)
            >= repeated + 2
        )
    )

    [event] = eventually(lambda: _audit_events(admin, namespace, name))
    assert event["count"] == 1
    assert "rollout/no-spot-nodes" in event["message"]


def test_a_forged_filter_call_makes_no_event_while_a_real_pods_finding_still_does(
    admin: KubeClient, namespace: str, extender: Extender
) -> None:
    """Anyone who reaches the verbs' port can call /filter with a pod and nodes of their
    own: the made-up pod on a made-up spot node (the node's name meant as a message) gets
    no Event. The real pod's finding, offered after it to the same recorder, does: once
    it is recorded the forged one has been judged."""
    suffix = uuid.uuid4().hex[:6]
    forged_node = "URGENT-run-curl-evil-sh"
    made_up = {
        "metadata": {"name": f"db-{suffix}", "namespace": namespace, "uid": str(uuid.uuid4())},
        "spec": {"containers": [{"name": "main", "image": "e2e.invalid/pause:1"}]},
    }
    nodes = {"metadata": {}, "items": [fake_node(forged_node, labels={"lifecycle": "spot"})]}
    unverified = extender.metric("policyext_audit_events_total", {"result": "unverified"}) or 0.0
    assert extender.post("/filter", {"Pod": made_up, "Nodes": nodes, "NodeNames": None})[0] == 200

    admin.create_fake_node(fake_node(f"spot-{suffix}", labels={"lifecycle": "spot"}))
    name = f"real-{suffix}"
    created = admin.create(f"/api/v1/namespaces/{namespace}/pods", pod(name, scheduler_name=NOBODY))
    eventually(lambda: _known(extender, f"spot-{suffix}"))
    assert extender.post("/filter", {"Pod": created, "NodeNames": [f"spot-{suffix}"]})[0] == 200
    [event] = eventually(lambda: _audit_events(admin, namespace, name), timeout=60)

    assert f"spot-{suffix}" in event["message"]
    assert _audit_events(admin, namespace, f"db-{suffix}") == []
    everything = admin.get(f"/api/v1/namespaces/{namespace}/events")["items"]
    assert not [e for e in everything if forged_node in e.get("message", "")]
    assert extender.metric("policyext_audit_events_total", {"result": "unverified"}) == (
        unverified + 1
    )


def _known(extender: Extender, node: str) -> bool:
    """Whether the extender's node cache holds the node (its /explain knows it)."""
    status, reply = extender.post("/explain", {"Pod": pod("probe"), "NodeNames": [node]})
    return status == 200 and isinstance(reply, dict) and reply["unknownNodes"] == {}
