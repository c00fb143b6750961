"""Faults between the extender and the cluster, and what the cluster shows after them:
the API server unreachable at start, a watch cut mid-way, an API server restart, and an
extender restart while pods wait. Nothing is lost; /readyz always tells the truth.

The extender reaches the API server through a relay the tests can take down; kube-scheduler
talks to the API server directly, as it would with the extender's network in trouble.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import POLICYEXT, ControlPlane, KubeClient, fake_node, pod
from tests.e2e.extender import BIND_OK, MARK_LABEL, PROBE_POLICY, Extender, scheduler_config
from tests.e2e.proxy import Relay
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

SCHEDULER = "policy-faults"
NOBODY = "no-such-scheduler"


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@dataclass
class Faults:
    control_plane: ControlPlane
    relay: Relay
    extender: Extender

    def running(self) -> Extender:
        """The extender, started and ready (whatever an earlier test left)."""
        self.relay.up()
        if not self.extender.component.running():
            self.extender.start()
        self.extender.wait_ready()
        return self.extender


@pytest.fixture(scope="module")
def faults(
    control_plane: ControlPlane,
    policyext_kubeconfig: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Faults]:
    folder = tmp_path_factory.mktemp("faults")
    rules = folder / "rules"
    rules.mkdir()
    (rules / "e2e-probe.yaml").write_text(PROBE_POLICY)
    relay = Relay(control_plane.api_port)
    kubeconfig = control_plane.write_kubeconfig(
        POLICYEXT, folder / "policyext.kubeconfig", server=relay.server
    )
    extender = Extender(
        control_plane, kubeconfig, [rules], name="policyext-faults", binds_for=SCHEDULER
    )
    control_plane.start_scheduler(scheduler_config(extender.url, SCHEDULER), name=SCHEDULER)
    try:
        yield Faults(control_plane, relay, extender)
    finally:
        control_plane.stop_component(SCHEDULER)
        extender.stop()
        relay.down()


def _readyz(extender: Extender) -> tuple[int, Any]:
    return extender.get("/readyz")


def _node_source(extender: Extender) -> Any:
    """/policies' word on the node source; empty while the server does not answer yet."""
    status, listing = extender.get("/policies")
    return listing["nodeSource"] if status == 200 and isinstance(listing, dict) else {}


def _bound(admin: KubeClient, namespace: str, name: str) -> str:
    found = admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return str(found["spec"].get("nodeName") or "")


def test_an_api_server_unreachable_at_start_is_reported_then_recovered_from(
    faults: Faults, admin: KubeClient
) -> None:
    extender = faults.extender
    extender.stop()
    faults.relay.down()
    node = _unique("node")
    admin.create_fake_node(fake_node(node, labels={MARK_LABEL: "5"}))

    extender.start(wait=False)
    # not ready, and saying why on /policies (/readyz says the category only): the first
    # attempts have failed and are being retried
    problem = eventually(
        lambda: "retrying" in (p := _node_source(extender).get("problem", "")) and p
    )
    assert problem.startswith("nodes: ")
    status, detail = _readyz(extender)
    assert status == 503
    assert detail == {
        "ready": False,
        "policyVersion": detail["policyVersion"],
        "checks": {"policies": "loaded", "nodeSource": "not synced"},
    }
    assert extender.metric("policyext_cache_synced", {"resource": "nodes"}) == 0

    faults.relay.up()
    extender.wait_ready()  # the backoff reaches at most a few seconds by then

    _, detail = _readyz(extender)
    assert detail["checks"]["nodeSource"] == "synced"
    assert _node_source(extender) == {"synced": True, "problem": ""}
    assert extender.probe([node])[node]["mark-seen"] == 5
    assert extender.metric("policyext_cache_synced", {"resource": "pods"}) == 1
    staleness = extender.metric("policyext_cache_staleness_seconds", {"resource": "nodes"})
    assert staleness is not None and staleness < 10


def test_a_watch_cut_mid_way_loses_no_node_or_pod_update(
    faults: Faults, admin: KubeClient, namespace: str
) -> None:
    extender = faults.running()
    labelled, busy = _unique("node"), _unique("node")
    for name in (labelled, busy):
        admin.create_fake_node(fake_node(name))
    leaving = _unique("pod")
    manifest = pod(leaving, scheduler_name=NOBODY)
    manifest["spec"]["nodeName"] = busy
    admin.create(f"/api/v1/namespaces/{namespace}/pods", manifest)
    eventually(lambda: extender.probe_value(busy, "pods-seen") == 1)
    relists = extender.metric("policyext_cache_relists_total", {"resource": "pods"})

    faults.relay.down()  # every open stream cut; reconnects refused meanwhile
    late = _unique("node")
    admin.merge_patch(f"/api/v1/nodes/{labelled}", {"metadata": {"labels": {MARK_LABEL: "7"}}})
    admin.create_fake_node(fake_node(late, labels={MARK_LABEL: "3"}))
    admin.delete(f"/api/v1/namespaces/{namespace}/pods/{leaving}", gracePeriodSeconds="0")
    arriving = [_unique("pod") for _ in range(2)]
    for name in arriving:
        manifest = pod(name, scheduler_name=NOBODY)
        manifest["spec"]["nodeName"] = busy
        admin.create(f"/api/v1/namespaces/{namespace}/pods", manifest)
    faults.relay.up()

    expected = {
        labelled: {"pods-seen": 0, "mark-seen": 7},
        busy: {"pods-seen": 2, "mark-seen": 0},
        late: {"pods-seen": 0, "mark-seen": 3},
    }
    eventually(lambda: extender.probe(list(expected)) == expected)
    # resumed from the last resourceVersion seen, not listed again
    assert extender.metric("policyext_cache_relists_total", {"resource": "pods"}) == relists
    assert _readyz(extender)[0] == 200


def test_an_api_server_restart_is_survived_and_scheduling_goes_on(
    faults: Faults, admin: KubeClient, namespace: str
) -> None:
    extender = faults.running()
    binds = extender.metric("policyext_requests_total", BIND_OK) or 0

    faults.control_plane.stop_apiserver()
    try:
        # the caches keep serving what they hold: still ready, the staleness grows
        assert _readyz(extender)[0] == 200
    finally:
        faults.control_plane.start_apiserver()
    node = _unique("node")
    admin.create_fake_node(fake_node(node, labels={MARK_LABEL: "9"}))
    name = _unique("pod")
    admin.create(f"/api/v1/namespaces/{namespace}/pods", pod(name, scheduler_name=SCHEDULER))

    eventually(lambda: _bound(admin, namespace, name))

    assert _bound(admin, namespace, name) == node
    # bound by us, through the restarted API server (counted once our handler returns,
    # a moment after the API shows the binding)
    eventually(lambda: extender.metric("policyext_requests_total", BIND_OK) == binds + 1)
    assert extender.probe([node])[node] == {"pods-seen": 1, "mark-seen": 9}
    assert _readyz(extender)[0] == 200
    for resource in ("nodes", "pods"):
        staleness = extender.metric("policyext_cache_staleness_seconds", {"resource": resource})
        assert staleness is not None and staleness < 30


def test_an_extender_restart_loses_no_pending_pod(
    faults: Faults, admin: KubeClient, namespace: str
) -> None:
    extender = faults.running()
    node = _unique("node")
    admin.create_fake_node(fake_node(node))

    extender.kill()
    names = [_unique("pod") for _ in range(4)]
    for name in names:
        admin.create(f"/api/v1/namespaces/{namespace}/pods", pod(name, scheduler_name=SCHEDULER))
    # the scheduler tried while we were gone, and failed
    failed = eventually(
        lambda: admin.get(
            f"/api/v1/namespaces/{namespace}/events",
            fieldSelector=f"involvedObject.name={names[0]},reason=FailedScheduling",
        )["items"]
    )
    assert not any(_bound(admin, namespace, name) for name in names)
    extender.start()

    eventually(lambda: all(_bound(admin, namespace, name) for name in names))

    assert {_bound(admin, namespace, name) for name in names} == {node}
    # bound by us (counted once our handler returns, a moment after the API shows the
    # binding; the restarted extender's first binds read their pod back first)
    eventually(lambda: (extender.metric("policyext_requests_total", BIND_OK) or 0) >= len(names))
    assert extender.probe([node])[node]["pods-seen"] == len(names)
    assert "/filter" in failed[0]["message"]  # the scheduler could not reach our filter
