"""A gone replica's `status.byPod` entry removed through the real API server: two `serve
--rules-crd --replica-namespace` replicas named as two pods of the namespace each write
their entry; one stops and its pod is deleted; the other removes that entry by a
server-side apply of nothing as the gone replica's field manager, which drops what that
manager alone wrote and nothing else."""

from __future__ import annotations

import uuid

import pytest
import yaml

from tests.cli.run import RULES
from tests.e2e.controlplane import ControlPlane, KubeClient, fake_node, pod
from tests.e2e.extender import Extender
from tests.e2e.test_crd import POLICIES, STRICT, crd, policies  # noqa: F401 - fixtures

pytestmark = pytest.mark.e2e


def _entries(obj: dict[str, object]) -> list[str]:
    status = obj.get("status") or {}
    assert isinstance(status, dict)
    return sorted(e["pod"] for e in status.get("byPod") or [])


def _ready_message(obj: dict[str, object]) -> str:
    status = obj.get("status") or {}
    assert isinstance(status, dict)
    return next(str(c["message"]) for c in status.get("conditions") or [] if c["type"] == "Ready")


def test_the_entry_of_a_replica_whose_pod_is_deleted_is_removed_by_the_others(
    policies: KubeClient,  # noqa: F811 - the fixture imported above
    admin: KubeClient,
    namespace: str,
    control_plane: ControlPlane,
) -> None:
    node = f"node-{uuid.uuid4().hex[:6]}"
    admin.create_fake_node(fake_node(node))
    replicas = [f"policyext-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    for name in replicas:  # the replicas' pods, bound as running extender pods are
        manifest = pod(name)
        manifest["spec"]["nodeName"] = node
        admin.create(f"/api/v1/namespaces/{namespace}/pods", manifest)
    spot = yaml.safe_load((RULES / "critical-off-spot.yaml").read_text())
    path = f"{POLICIES}/{spot['metadata']['name']}"
    policies.request("POST", POLICIES, spot, query=STRICT)
    extenders = [
        Extender(
            control_plane,
            control_plane.admin_kubeconfig,
            [],
            name=replica,
            args=[
                "--rules-crd",
                "--replica-name",
                replica,
                "--replica-namespace",
                namespace,
                "--audit-events-per-second",
                "0",
            ],
        )
        for replica in replicas
    ]
    for extender in extenders:
        extender.start()
    try:
        both = policies.wait_for(
            path,
            lambda o: (
                _entries(o) == sorted(replicas)
                and _ready_message(o).endswith("served by 2 of the replicas that read it")
            ),
        )
        assert {f"policyext/{r}" for r in replicas} <= {
            f["manager"] for f in both["metadata"]["managedFields"]
        }

        gone, staying = replicas[1], replicas[0]
        extenders[1].stop()
        admin.delete(f"/api/v1/namespaces/{namespace}/pods/{gone}", gracePeriodSeconds="0")
        pruned = policies.wait_for(
            path,
            lambda o: (
                _entries(o) == [staying]
                and _ready_message(o).endswith("served by 1 of the replicas that read it")
            ),
        )
        managers = {f["manager"] for f in pruned["metadata"]["managedFields"]}
        assert f"policyext/{gone}" not in managers  # it owned nothing else
        assert f"policyext/{staying}" in managers
        status = pruned["status"]
        assert status["observedGeneration"] == pruned["metadata"]["generation"]
        assert (status["filters"], status["scores"], status["mode"]) == (1, 0, "Enforce")
    finally:
        for extender in extenders:
            extender.stop()
