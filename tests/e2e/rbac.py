"""The extender's RBAC, exactly as the Helm chart grants it, created through the API.

The `policyext` identity of the harness has no groups, so after `grant_extender_rbac` it
can do what these rules allow and nothing else: the end-to-end tests run the extender with
the permissions a real installation gives it, and a missing permission fails a test.
"""

from __future__ import annotations

import time
from typing import Any, Final

from tests.e2e.controlplane import PATIENCE, POLICYEXT, ApiError, KubeClient

RBAC_API: Final = "/apis/rbac.authorization.k8s.io/v1"
CLUSTER_ROLE: Final = "policyext"

Json = dict[str, Any]

CLUSTER_RULES: Final[list[Json]] = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
]


def _subjects(user: str) -> list[Json]:
    return [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]


def _role_ref(kind: str, name: str) -> Json:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}


def _create_or_replace(admin: KubeClient, collection: str, body: Json) -> None:
    try:
        admin.create(collection, body)
    except ApiError as error:
        if error.reason != "AlreadyExists":
            raise
        admin.request("PUT", f"{collection}/{body['metadata']['name']}", body)


def grant_extender_rbac(admin: KubeClient, user: str = POLICYEXT) -> None:
    """The chart's ClusterRole and its binding to `user`."""
    _create_or_replace(
        admin,
        f"{RBAC_API}/clusterroles",
        {"metadata": {"name": CLUSTER_ROLE}, "rules": CLUSTER_RULES},
    )
    _create_or_replace(
        admin,
        f"{RBAC_API}/clusterrolebindings",
        {
            "metadata": {"name": CLUSTER_ROLE},
            "roleRef": _role_ref("ClusterRole", CLUSTER_ROLE),
            "subjects": _subjects(user),
        },
    )


def grant_configmap_access(
    admin: KubeClient, namespace: str, name: str, user: str = POLICYEXT
) -> None:
    """The chart's Role for the policy ConfigMap (only when it is watched through the API):
    that one ConfigMap, read and watched by name."""
    role = f"policyext-{name}"
    _create_or_replace(
        admin,
        f"{RBAC_API}/namespaces/{namespace}/roles",
        {
            "metadata": {"name": role},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "resourceNames": [name],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        },
    )
    _create_or_replace(
        admin,
        f"{RBAC_API}/namespaces/{namespace}/rolebindings",
        {
            "metadata": {"name": role},
            "roleRef": _role_ref("Role", role),
            "subjects": _subjects(user),
        },
    )


def can(
    client: KubeClient,
    verb: str,
    resource: str,
    *,
    subresource: str = "",
    namespace: str = "",
    name: str = "",
) -> bool:
    """What the API server's authorizer answers for the client's own identity."""
    review = client.create(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {
            "spec": {
                "resourceAttributes": {
                    "verb": verb,
                    "resource": resource,
                    "subresource": subresource,
                    "namespace": namespace,
                    "name": name,
                }
            }
        },
    )
    return bool(review["status"].get("allowed"))


def wait_until_granted(client: KubeClient, timeout: float = PATIENCE) -> None:
    """The authorizer reads RBAC objects from an informer: a grant lands within moments."""
    deadline = time.monotonic() + timeout
    while not (
        can(client, "watch", "pods") and can(client, "create", "pods", subresource="binding")
    ):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the extender's RBAC not in effect after {timeout:.0f} s")
        time.sleep(0.1)
