"""The extender's identity can do what the extender needs, and nothing else."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.e2e.controlplane import POLICYEXT, ApiError, ControlPlane, KubeClient, fake_node, pod
from tests.e2e.rbac import can, grant_configmap_access

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("verb", "resource", "subresource", "namespaced", "allowed"),
    [
        ("list", "nodes", "", False, True),
        ("watch", "nodes", "", False, True),
        ("get", "pods", "", True, True),
        ("watch", "pods", "", False, True),
        ("create", "pods", "binding", True, True),
        ("create", "events", "", True, True),
        ("update", "nodes", "", False, False),
        ("patch", "nodes", "status", False, False),
        ("delete", "pods", "", True, False),
        ("create", "pods", "eviction", True, False),
        ("get", "secrets", "", True, False),
        ("list", "configmaps", "", True, False),
    ],
)
def test_the_extender_identity_is_allowed_exactly_the_charts_rules(
    control_plane: ControlPlane,
    policyext_kubeconfig: Path,
    verb: str,
    resource: str,
    subresource: str,
    namespaced: bool,
    allowed: bool,
) -> None:
    identity = control_plane.client(POLICYEXT)

    answer = can(
        identity, verb, resource, subresource=subresource, namespace="default" if namespaced else ""
    )

    assert answer is allowed


def _bind(client: KubeClient, namespace: str, name: str, node: str) -> None:
    client.create(
        f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        },
    )


def test_the_extender_identity_lists_and_binds_but_is_refused_secrets_and_node_updates(
    control_plane: ControlPlane, policyext_kubeconfig: Path, admin: KubeClient, namespace: str
) -> None:
    identity = control_plane.client(POLICYEXT)
    node = f"node-{uuid.uuid4().hex[:6]}"
    admin.create_fake_node(fake_node(node))
    name = f"pod-{uuid.uuid4().hex[:6]}"
    admin.create(f"/api/v1/namespaces/{namespace}/pods", pod(name, scheduler_name="nobody"))

    assert node in {n["metadata"]["name"] for n in identity.get("/api/v1/nodes")["items"]}
    assert identity.get(f"/api/v1/namespaces/{namespace}/pods/{name}")["metadata"]["name"] == name
    _bind(identity, namespace, name, node)
    bound = admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    assert bound["spec"]["nodeName"] == node

    refused = [
        lambda: identity.get(f"/api/v1/namespaces/{namespace}/secrets"),
        lambda: identity.merge_patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {"x": "y"}}}),
        lambda: identity.delete(f"/api/v1/namespaces/{namespace}/pods/{name}"),
        lambda: identity.get(f"/api/v1/namespaces/{namespace}/configmaps"),
    ]
    for attempt in refused:
        with pytest.raises(ApiError) as denied:
            attempt()
        assert denied.value.status == 403
    assert "x" not in admin.get(f"/api/v1/nodes/{node}")["metadata"]["labels"]


def test_the_configmap_role_grants_the_policy_configmap_and_no_other(
    control_plane: ControlPlane, policyext_kubeconfig: Path, admin: KubeClient, namespace: str
) -> None:
    identity = control_plane.client(POLICYEXT)
    for name in ("policies", "other"):
        admin.create(
            f"/api/v1/namespaces/{namespace}/configmaps",
            {"metadata": {"name": name}, "data": {"a.yaml": ""}},
        )

    grant_configmap_access(admin, namespace, "policies")

    assert can(identity, "watch", "configmaps", namespace=namespace, name="policies")
    assert not can(identity, "get", "configmaps", namespace=namespace, name="other")
    assert not can(identity, "update", "configmaps", namespace=namespace, name="policies")
    # the extender lists by name (a field selector), which RBAC checks against resourceNames
    listed = identity.get(
        f"/api/v1/namespaces/{namespace}/configmaps", fieldSelector="metadata.name=policies"
    )
    assert [c["metadata"]["name"] for c in listed["items"]] == ["policies"]
