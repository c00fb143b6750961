"""The extender's identity can do what the extender needs, and nothing else."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.e2e.controlplane import POLICYEXT, ApiError, ControlPlane, KubeClient, fake_node, pod
from tests.e2e.rbac import can, grant_configmap_access, grant_extender_rbac
from tests.waiting import eventually

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
        ("update", "pods", "status", True, False),
        ("patch", "events", "", True, False),
        ("delete", "events", "", True, False),
        ("create", "serviceaccounts", "token", True, False),
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


def _service_account_client(admin: KubeClient, namespace: str, name: str) -> KubeClient:
    """A client with a token of a new ServiceAccount (TokenRequest): what a pod would hold."""
    admin.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
    )
    token: str = admin.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )["status"]["token"]
    return KubeClient(admin.port, token, admin.context)


def _event(namespace: str, pod_name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": "audit-"},
        "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod_name},
        "reason": "PolicyAudit",
        "message": "e2e",
        "type": "Normal",
    }


@pytest.mark.parametrize(
    ("features", "binds", "records_events"),
    [
        (("extender.auditEventsPerSecond=0",), False, False),
        (("extender.auditEventsPerSecond=0", "extender.bind=true"), True, False),
        ((), False, True),
    ],
    ids=["caches-only", "bind-verb", "audit-events"],
)
def test_without_a_feature_the_charts_rules_refuse_what_it_would_use(
    admin: KubeClient,
    namespace: str,
    features: tuple[str, ...],
    binds: bool,
    records_events: bool,
) -> None:
    """An extender installed without the bind verb cannot bind pods, nor create Events
    without Audit Events; none of them can delete a pod. Real calls, refused with 403."""
    account = f"ext-{uuid.uuid4().hex[:6]}"
    grant_extender_rbac(
        admin,
        features=features,
        name=f"policyext-{account}",
        subjects=[{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    )
    identity = _service_account_client(admin, namespace, account)
    node = f"node-{uuid.uuid4().hex[:6]}"
    admin.create_fake_node(fake_node(node))
    name = f"pod-{uuid.uuid4().hex[:6]}"
    admin.create(f"/api/v1/namespaces/{namespace}/pods", pod(name, scheduler_name="nobody"))
    # the grant reaches the authorizer a moment after it is stored
    eventually(lambda: can(identity, "watch", "pods"))

    # what every extender may: its caches
    assert identity.get("/api/v1/nodes", fieldSelector=f"metadata.name={node}")["items"]
    assert identity.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    attempts = {
        "bind": (binds, lambda: _bind(identity, namespace, name, node)),
        "event": (
            records_events,
            lambda: identity.create(
                f"/api/v1/namespaces/{namespace}/events", _event(namespace, name)
            ),
        ),
        "delete": (False, lambda: identity.delete(f"/api/v1/namespaces/{namespace}/pods/{name}")),
    }
    for what, (allowed, attempt) in attempts.items():
        if allowed:
            attempt()
            continue
        with pytest.raises(ApiError) as denied:
            attempt()
        assert denied.value.status == 403, what
    bound = admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    assert bound["spec"].get("nodeName", "") == (node if binds else "")
