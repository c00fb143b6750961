"""The harness itself works: the cluster it starts stores nodes, schedules and enforces RBAC."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from tests.e2e.controlplane import (
    NOT_READY_TAINT,
    POLICYEXT,
    SCHEDULER,
    ApiError,
    ControlPlane,
    KubeClient,
    fake_node,
    pod,
)
from tests.waiting import PATIENCE

pytestmark = pytest.mark.e2e


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _bound(seen: dict[str, Any]) -> bool:
    return bool(seen["spec"].get("nodeName"))


@pytest.mark.parametrize(
    ("cpu", "memory", "pods"),
    [("4", "8Gi", 110), ("500m", "1536Mi", 8)],
)
def test_a_fake_node_is_listed_ready_with_its_allocatable_resources(
    admin: KubeClient, cpu: str, memory: str, pods: int
) -> None:
    name = _unique("node")
    admin.create_fake_node(fake_node(name, cpu=cpu, memory=memory, pods=pods))

    listed = {item["metadata"]["name"]: item for item in admin.get("/api/v1/nodes")["items"]}

    node = listed[name]
    assert node["status"]["allocatable"] == {"cpu": cpu, "memory": memory, "pods": str(pods)}
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert [c["status"] for c in ready] == ["True"]
    assert NOT_READY_TAINT not in {t["key"] for t in node["spec"].get("taints") or []}


def test_the_default_scheduler_binds_a_pod_to_the_only_fake_node(
    admin: KubeClient, namespace: str, default_scheduler: str
) -> None:
    node = _unique("node")
    admin.create_fake_node(fake_node(node))
    name = _unique("pod")
    admin.create(f"/api/v1/namespaces/{namespace}/pods", pod(name))

    seen = admin.wait_for(f"/api/v1/namespaces/{namespace}/pods/{name}", _bound)

    assert seen["spec"]["nodeName"] == node
    assert seen["spec"]["schedulerName"] == default_scheduler


@pytest.mark.parametrize(("cordoned", "expected"), [("a", "b"), ("b", "a")])
def test_a_pod_lands_on_the_node_that_is_not_cordoned(
    admin: KubeClient, namespace: str, default_scheduler: str, cordoned: str, expected: str
) -> None:
    suffix = uuid.uuid4().hex[:6]
    for letter in ("a", "b"):
        admin.create_fake_node(fake_node(f"{letter}-{suffix}", unschedulable=letter == cordoned))
    names = [_unique("pod") for _ in range(3)]
    for name in names:
        admin.create(f"/api/v1/namespaces/{namespace}/pods", pod(name))

    placed = {
        admin.wait_for(f"/api/v1/namespaces/{namespace}/pods/{name}", _bound)["spec"]["nodeName"]
        for name in names
    }

    assert placed == {f"{expected}-{suffix}"}


@pytest.mark.parametrize(
    ("resource", "path"),
    # none the extender's own RBAC grants it (another test's fixture may have granted that)
    [("secrets", "/api/v1/secrets"), ("services", "/api/v1/services")],
)
def test_the_policyext_identity_may_list_only_what_rbac_grants_it(
    control_plane: ControlPlane, admin: KubeClient, resource: str, path: str
) -> None:
    policyext = control_plane.client(POLICYEXT)
    with pytest.raises(ApiError) as denied:
        policyext.get(path)
    assert denied.value.status == 403

    role = _unique(f"policyext-read-{resource}")
    admin.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {
            "metadata": {"name": role},
            "rules": [{"apiGroups": [""], "resources": [resource], "verbs": ["list"]}],
        },
    )
    admin.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "metadata": {"name": role},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": POLICYEXT}
            ],
        },
    )
    try:
        # The authorizer reads RBAC objects from an informer: the grant lands within moments.
        allowed = _eventually_allowed(policyext, path)
        assert allowed["kind"] == f"{resource.capitalize()[:-1]}List"
    finally:
        admin.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{role}")
        admin.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}")


@pytest.mark.parametrize(
    ("verb", "resource", "subresource", "allowed"),
    [
        ("create", "pods", "binding", True),  # system:kube-scheduler
        ("update", "persistentvolumes", "", True),  # system:volume-scheduler
        ("list", "secrets", "", False),  # nothing a scheduler needs
    ],
)
def test_the_scheduler_identity_has_the_scheduler_roles_and_no_more(
    control_plane: ControlPlane, verb: str, resource: str, subresource: str, allowed: bool
) -> None:
    review = control_plane.client(SCHEDULER).create(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {
            "spec": {
                "resourceAttributes": {
                    "verb": verb,
                    "resource": resource,
                    "subresource": subresource,
                    "namespace": "default" if resource != "persistentvolumes" else "",
                }
            }
        },
    )

    assert review["status"]["allowed"] is allowed


def _eventually_allowed(client: KubeClient, path: str) -> dict[str, Any]:
    """The object, once the authorizer has the grant (RBAC reaches it from an informer, a
    moment after the binding is stored): forbidden until then, PATIENCE at most."""
    deadline = time.monotonic() + PATIENCE
    while True:
        try:
            return client.get(path)
        except ApiError as error:
            if error.status != 403 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
