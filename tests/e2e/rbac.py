"""The extender's RBAC, exactly as the Helm chart renders it now, created through the API.

The rules are not copied here: they are read from `helm template` of charts/policyext with
the features the end-to-end extenders use (binding, Audit Events; the policy ConfigMap's
Role when it is watched), so a rule the chart drops or narrows is dropped here too, and an
extender needing more than the chart grants fails a test. The `policyext` identity of the
harness has no groups, so after `grant_extender_rbac` it can do what these rules allow and
nothing else.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any, Final

import yaml

from tests.chart.helmbin import HelmUnavailable, ensure_helm
from tests.e2e.controlplane import POLICYEXT, ApiError, KubeClient
from tests.unavailable import skip_or_fail
from tests.waiting import PATIENCE, eventually

RBAC_API: Final = "/apis/rbac.authorization.k8s.io/v1"
CLUSTER_ROLE: Final = "policyext"
CHART: Final = Path(__file__).resolve().parents[2] / "charts" / "policyext"
RENDERED: Final = "e2e-policyext"  # the rendered release's full name (release "e2e")
# what the e2e extenders do: bind (--bind-verb) and record Audit Events (the chart's default)
EXTENDER_FEATURES: Final = ("extender.bind=true",)

Json = dict[str, Any]


@functools.cache
def chart_rbac(*sets: str) -> dict[tuple[str, str], list[Json]]:
    """{(kind, name): rules} of every ClusterRole and Role the chart renders with `sets`."""
    try:
        helm = ensure_helm()
    except HelmUnavailable as reason:
        skip_or_fail(str(reason))
    args = [
        "template",
        "e2e",
        str(CHART),
        "--namespace",
        "e2e",
        "--set",
        "policies.allowEmpty=true",
    ]
    for item in sets:
        args += ["--set", item]
    done = subprocess.run(
        [str(helm), *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return {
        (o["kind"], o["metadata"]["name"]): o["rules"]
        for o in yaml.safe_load_all(done.stdout)
        if o and o["kind"] in ("ClusterRole", "Role")
    }


def extender_cluster_rules(*features: str) -> list[Json]:
    """The chart's ClusterRole of the extender with `features` on (the defaults otherwise)."""
    return chart_rbac(*features)[("ClusterRole", RENDERED)]


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


def grant_extender_rbac(
    admin: KubeClient,
    user: str = POLICYEXT,
    *,
    features: tuple[str, ...] = EXTENDER_FEATURES,
    name: str = CLUSTER_ROLE,
    subjects: list[Json] | None = None,
) -> None:
    """The chart's ClusterRole of the extender (rendered with `features`), as `name`, and
    its binding to `user` (or to `subjects`)."""
    _create_or_replace(
        admin,
        f"{RBAC_API}/clusterroles",
        {"metadata": {"name": name}, "rules": extender_cluster_rules(*features)},
    )
    _create_or_replace(
        admin,
        f"{RBAC_API}/clusterrolebindings",
        {
            "metadata": {"name": name},
            "roleRef": _role_ref("ClusterRole", name),
            "subjects": subjects or _subjects(user),
        },
    )


def grant_configmap_access(
    admin: KubeClient, namespace: str, name: str, user: str = POLICYEXT
) -> None:
    """The chart's Role for the policy ConfigMap (only when it is watched through the API):
    that one ConfigMap, read and watched by name, and Events about it."""
    role = f"policyext-{name}"
    watched = ("policies.mount=false", "policies.watch=true", f"policies.existingConfigMap={name}")
    rules = chart_rbac(*watched)[("Role", f"{RENDERED}-policies")]
    _create_or_replace(
        admin,
        f"{RBAC_API}/namespaces/{namespace}/roles",
        {"metadata": {"name": role}, "rules": rules},
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
    group: str = "",
) -> bool:
    """What the API server's authorizer answers for the client's own identity."""
    review = client.create(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {
            "spec": {
                "resourceAttributes": {
                    "group": group,
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
    eventually(
        lambda: (
            can(client, "watch", "pods") and can(client, "create", "pods", subresource="binding")
        ),
        timeout,
        what="the extender's RBAC in effect",
    )
