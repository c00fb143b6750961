"""/bind against the real API server binds only what kube-scheduler would: a forged call
(anyone who reaches the verbs' port can make one) binds nothing, whatever pod it names.
The binds asked here come from the test, as an attacker's would; the scheduler's own are
in test_cluster.py and test_scenarios.py."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import ControlPlane, KubeClient, fake_node, pod
from tests.e2e.extender import Extender
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

SCHEDULER = "policy-bind"  # the pods the extender binds for; no scheduler runs them here
THEIRS = "no-such-scheduler"  # a scheduler that never asked
RESERVED = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: pools
spec:
  filters:
    - name: not-reserved
      expression: "node.metadata.?labels[?'pool'].orValue('') != 'reserved'"
      message: "the reserved pool is for the platform team"
"""


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bind-rules")
    (folder / "pools.yaml").write_text(RESERVED)
    return folder


@pytest.fixture(scope="module")
def binding(
    control_plane: ControlPlane, policyext_kubeconfig: Path, rules: Path
) -> Iterator[Extender]:
    """An extender that binds (`--bind-verb --scheduler-name policy-bind`)."""
    server = Extender(
        control_plane, policyext_kubeconfig, [rules], name="policyext-bind", binds_for=SCHEDULER
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def not_binding(
    control_plane: ControlPlane, policyext_kubeconfig: Path, rules: Path
) -> Iterator[Extender]:
    """An extender with the same cluster connection, started without --bind-verb."""
    server = Extender(control_plane, policyext_kubeconfig, [rules], name="policyext-no-bind")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _nodes(admin: KubeClient, *extenders: Extender) -> tuple[str, str]:
    """A plain node and a reserved one, named uniquely, once the extenders' node caches
    hold them; returns their names."""
    suffix = uuid.uuid4().hex[:6]
    plain, reserved = f"plain-{suffix}", f"reserved-{suffix}"
    admin.create_fake_node(fake_node(plain))
    admin.create_fake_node(fake_node(reserved, labels={"pool": "reserved"}))
    for extender in extenders:
        eventually(lambda e=extender: _holds(e, [plain, reserved]))
    return plain, reserved


def _holds(extender: Extender, nodes: list[str]) -> bool:
    """Whether the extender's node cache holds these nodes (its /explain knows them)."""
    status, reply = extender.post("/explain", {"Pod": pod("probe"), "NodeNames": nodes})
    return status == 200 and isinstance(reply, dict) and reply["unknownNodes"] == {}


def _pending(admin: KubeClient, namespace: str, scheduler: str) -> tuple[str, str]:
    """A pending pod of `scheduler`; its name and UID."""
    name = f"pod-{uuid.uuid4().hex[:6]}"
    created = admin.create(
        f"/api/v1/namespaces/{namespace}/pods", pod(name, scheduler_name=scheduler)
    )
    return name, created["metadata"]["uid"]


def _bind(extender: Extender, namespace: str, name: str, uid: str, node: str) -> str:
    """The Error of a /bind call ("" once bound)."""
    status, reply = extender.post(
        "/bind", {"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node}
    )
    assert status == 200 and isinstance(reply, dict), (status, reply)
    error: str = reply["Error"]
    return error


def _bound_to(admin: KubeClient, namespace: str, name: str) -> str:
    found: dict[str, Any] = admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return str(found["spec"].get("nodeName") or "")


def _refusals(extender: Extender, reason: str) -> float:
    return extender.metric("policyext_bind_refusals_total", {"reason": reason}) or 0.0


@pytest.mark.parametrize("when", ["before its first bind", "after a bind"])
def test_a_forged_bind_of_a_pending_pod_of_another_scheduler_binds_nothing(
    admin: KubeClient, namespace: str, binding: Extender, when: str
) -> None:
    plain, _ = _nodes(admin, binding)
    if when == "after a bind":  # the pod watch then holds the pending pods too
        ours, uid = _pending(admin, namespace, SCHEDULER)
        assert _bind(binding, namespace, ours, uid, plain) == ""
    name, uid = _pending(admin, namespace, THEIRS)
    refused = _refusals(binding, "other_scheduler")

    error = _bind(binding, namespace, name, uid, plain)  # the right UID, even

    assert f"is for scheduler {THEIRS}" in error
    assert _bound_to(admin, namespace, name) == ""
    assert _refusals(binding, "other_scheduler") == refused + 1


@pytest.mark.parametrize(
    ("given", "reason", "says"),
    [
        ("another", "other_uid", "has UID"),
        ("none", "no_uid", "PodUID is empty"),  # the forged call: no UID at all
    ],
)
def test_a_bind_without_the_pods_uid_binds_nothing(
    admin: KubeClient, namespace: str, binding: Extender, given: str, reason: str, says: str
) -> None:
    plain, _ = _nodes(admin, binding)
    name, _ = _pending(admin, namespace, SCHEDULER)
    uid = str(uuid.uuid4()) if given == "another" else ""
    refused = _refusals(binding, reason)

    error = _bind(binding, namespace, name, uid, plain)

    assert says in error
    assert _bound_to(admin, namespace, name) == ""
    assert _refusals(binding, reason) == refused + 1


def test_a_bind_to_a_node_the_filters_reject_binds_nothing_and_one_they_accept_is_made(
    admin: KubeClient, namespace: str, binding: Extender
) -> None:
    plain, reserved = _nodes(admin, binding)
    name, uid = _pending(admin, namespace, SCHEDULER)
    refused = _refusals(binding, "filtered")

    error = _bind(binding, namespace, name, uid, reserved)

    assert f"node {reserved} does not pass the policies" in error
    assert "the reserved pool is for the platform team" in error
    assert _bound_to(admin, namespace, name) == ""
    assert _refusals(binding, "filtered") == refused + 1
    # the same pod, to a node its filters accept: bound (the refusal was the node's)
    assert _bind(binding, namespace, name, uid, plain) == ""
    assert _bound_to(admin, namespace, name) == plain


def test_a_bind_to_a_node_the_cache_does_not_hold_binds_nothing(
    admin: KubeClient, namespace: str, binding: Extender
) -> None:
    name, uid = _pending(admin, namespace, SCHEDULER)

    error = _bind(binding, namespace, name, uid, "control-plane-1")

    assert "node control-plane-1 is not in policyext's node cache" in error
    assert _bound_to(admin, namespace, name) == ""


def test_without_bind_verb_nothing_is_bound(
    admin: KubeClient, namespace: str, not_binding: Extender
) -> None:
    plain, _ = _nodes(admin, not_binding)
    name, uid = _pending(admin, namespace, SCHEDULER)
    refused = _refusals(not_binding, "disabled")

    error = _bind(not_binding, namespace, name, uid, plain)

    assert "runs without --bind-verb" in error
    assert _bound_to(admin, namespace, name) == ""
    assert _refusals(not_binding, "disabled") == refused + 1
