"""The Helm chart against the real API server and kube-scheduler, with its policies watched
from its ConfigMap or mounted from it: `helm install` into the test API server, then its
containers run here with what it installed (tests/e2e/chart.py says how and what is
adapted).
"""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart.chart import CHART
from tests.e2e import chart
from tests.e2e.chart import Running
from tests.e2e.controlplane import ApiError, ControlPlane, KubeClient, pod
from tests.e2e.extender import CRITICAL_OFF_SPOT, bind_count, http_get
from tests.e2e.rbac import can
from tests.unavailable import skip_or_fail
from tests.waiting import PATIENCE, eventually

pytestmark = pytest.mark.e2e

RELEASE = "pe2e"
FULLNAME = f"{RELEASE}-policyext"
EXTENDER_SA = FULLNAME
SCHEDULER_SA = f"{FULLNAME}-scheduler"
SCHEDULER_NAME = "chart-scheduler"
# the flags the chart passes that `policyext serve` gained with issue 43
SECURITY_FLAGS = ("--ops-bind", "--introspection", "--bind-verb", "--scheduler-name")


def _serve_flags() -> str:
    return subprocess.run(
        [sys.executable, "-m", "policyext.cli", "serve", "--help"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@dataclass(frozen=True)
class Installed(chart.Installed):
    watched: bool = False


def _values(watched: bool, policies: dict[str, str]) -> dict[str, Any]:
    return {
        "scheduler": {"name": SCHEDULER_NAME, "leaderElection": {"enabled": True}},
        # policyext binds: the chart's RBAC must let its ServiceAccount do it; /policies
        # (introspection, on the operations port) shows what is served
        "extender": {"bind": True, "introspection": True},
        "policies": {"inline": policies, "mount": not watched, "watch": watched},
        "networkPolicy": {"enabled": True},
        "dashboard": {"enabled": True},
    }


@pytest.fixture(scope="module", params=["watched", "mounted"])
def installed(
    request: pytest.FixtureRequest,
    control_plane: ControlPlane,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Installed]:
    """The chart installed with its policies watched through the API (`policies.watch`) or
    mounted as files (`policies.mount`, the kubelet's part played by the test)."""
    helm = chart.helm()
    admin = control_plane.client()
    namespace = f"chart-{uuid.uuid4().hex[:6]}"
    admin.create_namespace(namespace)
    folder = tmp_path_factory.mktemp("chart")
    watched = request.param == "watched"
    assert "--rules-configmap" in _serve_flags(), "policyext serve has no --rules-configmap"
    values = folder / "values.yaml"
    values.write_text(
        yaml.safe_dump(_values(watched, {"critical-off-spot.yaml": CRITICAL_OFF_SPOT}))
    )
    release = Installed(namespace, helm, control_plane.admin_kubeconfig, RELEASE, watched)
    release.run("install", RELEASE, str(CHART), "--values", str(values))
    yield release
    release.run("uninstall", RELEASE)


def test_the_api_server_accepts_every_object_the_chart_installs(
    installed: Installed, admin: KubeClient
) -> None:
    manifest = installed.manifest()
    kinds = {o["kind"] for o in manifest}

    assert {"Deployment", "ConfigMap", "ClusterRole", "Role", "NetworkPolicy", "Secret"} <= kinds
    for obj in manifest:
        stored = admin.get(chart.object_path(obj, installed.namespace))
        assert stored["metadata"]["name"] == obj["metadata"]["name"]


# --------------------------------------------------------------------------- identities


def test_each_container_has_its_own_identity_and_the_pod_mounts_no_token_by_itself(
    installed: Installed, admin: KubeClient
) -> None:
    ns = installed.namespace
    spec = admin.get(f"/apis/apps/v1/namespaces/{ns}/deployments/{FULLNAME}")["spec"]
    pod_spec = spec["template"]["spec"]
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    token_dir = "/var/run/secrets/kubernetes.io/serviceaccount"

    assert pod_spec["serviceAccountName"] == SCHEDULER_SA
    assert pod_spec["automountServiceAccountToken"] is False
    mounted = {
        c["name"]: volumes[
            next(m["name"] for m in c["volumeMounts"] if m["mountPath"] == token_dir)
        ]
        for c in pod_spec["containers"]
    }
    assert "serviceAccountToken" in mounted["kube-scheduler"]["projected"]["sources"][0]
    secret_name = mounted["extender"]["secret"]["secretName"]
    secret = admin.get(f"/api/v1/namespaces/{ns}/secrets/{secret_name}")
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"]["kubernetes.io/service-account.name"] == EXTENDER_SA


def test_the_extenders_identity_is_refused_what_kube_schedulers_may_do(
    installed: Installed, admin: KubeClient, namespace: str
) -> None:
    """The two ServiceAccounts as the chart bound them: the extender binds (extender.bind)
    but cannot delete a pod or read Secrets, which kube-scheduler's identity may partly do."""
    ns = installed.namespace
    extender = KubeClient(admin.port, admin.service_account_token(ns, EXTENDER_SA), admin.context)
    scheduler = KubeClient(admin.port, admin.service_account_token(ns, SCHEDULER_SA), admin.context)
    name = f"victim-{uuid.uuid4().hex[:6]}"
    admin.create(f"/api/v1/namespaces/{namespace}/pods", pod(name, scheduler_name="nobody"))

    assert can(extender, "create", "pods", subresource="binding", namespace=namespace)
    assert can(extender, "list", "nodes")
    for verb, resource in (("delete", "pods"), ("get", "secrets"), ("update", "pods")):
        assert not can(extender, verb, resource, namespace=namespace), (verb, resource)
    assert can(scheduler, "delete", "pods", namespace=namespace)  # system:kube-scheduler's
    with pytest.raises(ApiError) as denied:
        extender.delete(f"/api/v1/namespaces/{namespace}/pods/{name}")
    assert denied.value.status == 403
    assert admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")["metadata"]["name"] == name


# --------------------------------------------------------------------------- running it


@pytest.fixture(scope="module")
def running(
    control_plane: ControlPlane,
    installed: Installed,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Running]:
    missing = [f for f in SECURITY_FLAGS if f not in _serve_flags()]
    if missing:
        skip_or_fail(f"policyext serve has no {', '.join(missing)}, which the chart passes")
    with chart.running(control_plane, installed, tmp_path_factory.mktemp("chart-run")) as run:
        yield run


@pytest.mark.parametrize(
    ("labels", "lands_on"),
    [({"critical": "true"}, "on-demand"), ({}, "spot")],
)
def test_the_charts_scheduler_places_pods_with_the_charts_policies_and_identity(
    admin: KubeClient,
    namespace: str,
    running: Running,
    labels: dict[str, str],
    lands_on: str,
) -> None:
    binds = bind_count(running.ops_url)
    assert chart.placed_on(admin, namespace, SCHEDULER_NAME, labels) == lands_on
    # the extender bound it, as the chart's ServiceAccount (pods/binding)
    # (counted once our handler returns, a moment after the API shows the binding)
    eventually(lambda: bind_count(running.ops_url) == binds + 1)


def test_the_verbs_and_the_operations_endpoints_answer_on_their_own_ports(
    running: Running,
) -> None:
    assert http_get(f"{running.ops_url}/readyz")[0] == 200
    assert http_get(f"{running.ops_url}/policies")[0] == 200  # introspection on, here only
    for path in ("/readyz", "/metrics", "/policies"):
        assert http_get(f"{running.url}{path}")[0] == 404, path


MOST_FREE_CPU = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: most-free-cpu
spec:
  scores:
    - name: most-free-cpu
      expression: "nodeInfo.free.cpu.asApproximateFloat()"
      normalize: MinMax
"""


def _served_policies(url: str) -> list[str]:
    status, body = http_get(f"{url}/policies")
    assert status == 200
    return sorted(p["name"] for p in json.loads(body)["policies"])


def test_helm_upgrade_with_changed_policies_reloads_them_without_a_restart(
    installed: Installed, running: Running, admin: KubeClient, tmp_path: Path
) -> None:
    ns = installed.namespace
    deployment = f"/apis/apps/v1/namespaces/{ns}/deployments/{FULLNAME}"
    generation = admin.get(deployment)["metadata"]["generation"]
    assert _served_policies(running.ops_url) == ["critical-off-spot"]
    values = tmp_path / "values.yaml"
    policies = {"critical-off-spot.yaml": CRITICAL_OFF_SPOT, "most-free-cpu.yaml": MOST_FREE_CPU}
    values.write_text(yaml.safe_dump(_values(installed.watched, policies)))

    installed.run("upgrade", RELEASE, str(CHART), "--values", str(values))

    stored = admin.get(f"/api/v1/namespaces/{ns}/configmaps/{FULLNAME}-policies")["data"]
    assert sorted(stored) == sorted(policies)
    # the pod template is unchanged: a Deployment controller would restart nothing
    assert admin.get(deployment)["metadata"]["generation"] == generation
    if not installed.watched:  # the kubelet's part: the mounted files follow the ConfigMap
        for name, content in stored.items():
            (running.rules / name).write_text(content)
    upgraded = ["critical-off-spot", "most-free-cpu"]
    eventually(lambda: _served_policies(running.ops_url) == upgraded)


# --------------------------------------------------------------------------- the new defaults


def _deployment(admin: KubeClient, namespace: str) -> dict[str, Any]:
    found: dict[str, Any] = admin.get(
        f"/apis/apps/v1/namespaces/{namespace}/deployments/{FULLNAME}"
    )
    return found


def _containers(admin: KubeClient, namespace: str) -> dict[str, dict[str, Any]]:
    spec = _deployment(admin, namespace)["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec["containers"]}


def test_kube_scheduler_is_the_api_servers_version_by_default(
    installed: Installed, admin: KubeClient
) -> None:
    served = admin.get("/version")["gitVersion"]
    version = re.match(r"v[0-9]+\.[0-9]+\.[0-9]+", served)
    assert version is not None, served
    image = _containers(admin, installed.namespace)["kube-scheduler"]["image"]
    assert image == f"registry.k8s.io/kube-scheduler:{version.group(0)}"


def test_the_extender_answers_before_the_scheduler_gives_up(
    installed: Installed, admin: KubeClient
) -> None:
    ns = installed.namespace
    config = yaml.safe_load(
        admin.get(f"/api/v1/namespaces/{ns}/configmaps/{FULLNAME}-scheduler")["data"]["config.yaml"]
    )
    assert config["extenders"][0]["httpTimeout"] == "5s"
    assert "--request-deadline=3.75" in _containers(admin, ns)["extender"]["args"]


def _scrape_scheduler(port: int, token: str | None) -> int:
    """What kube-scheduler answers a scraper that does as the chart's ServiceMonitor says:
    HTTPS without checking its certificate, with a bearer token."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, context=context, timeout=PATIENCE) as response:
            body = response.read().decode()
            assert "scheduler_" in body
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def _service_account_token(admin: KubeClient, namespace: str, name: str) -> str:
    admin.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
    )
    return admin.service_account_token(namespace, name)


def test_kube_schedulers_metrics_answer_a_scraper_allowed_to_get_them(
    installed: Installed, running: Running, admin: KubeClient
) -> None:
    """The auth the chart README says the ServiceMonitor's scraper needs: a token whose
    identity may `get` the non-resource URL /metrics; anyone else is refused."""
    ns = installed.namespace
    scraper = f"scraper-{uuid.uuid4().hex[:6]}"
    allowed = _service_account_token(admin, ns, scraper)
    stranger = _service_account_token(admin, ns, f"stranger-{uuid.uuid4().hex[:6]}")
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    admin.create(
        f"{rbac}/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": scraper},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
    )
    admin.create(
        f"{rbac}/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": scraper},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": scraper,
            },
            "subjects": [{"kind": "ServiceAccount", "name": scraper, "namespace": ns}],
        },
    )
    try:
        # RBAC reaches the authorizer a moment after the binding is stored
        eventually(lambda: _scrape_scheduler(running.scheduler_port, allowed) == 200)
        assert _scrape_scheduler(running.scheduler_port, stranger) == 403
        assert _scrape_scheduler(running.scheduler_port, None) in (401, 403)
    finally:
        admin.delete(f"{rbac}/clusterrolebindings/{scraper}")
        admin.delete(f"{rbac}/clusterroles/{scraper}")


def test_an_install_without_policies_is_refused_unless_allowed(
    control_plane: ControlPlane, admin: KubeClient, tmp_path: Path
) -> None:
    helm = chart.helm()
    namespace = f"chart-empty-{uuid.uuid4().hex[:6]}"
    admin.create_namespace(namespace)
    release = Installed(namespace, helm, control_plane.admin_kubeconfig, "pe2e-empty")
    refused = subprocess.run(
        [
            str(helm),
            "install",
            "pe2e-empty",
            str(CHART),
            "--namespace",
            namespace,
            "--kubeconfig",
            str(control_plane.admin_kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode != 0
    assert "no policies" in refused.stderr
    listed = admin.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]
    assert [c for c in listed if c["metadata"]["name"].startswith("pe2e-empty")] == []

    notes = release.run("install", "pe2e-empty", str(CHART), "--set", "policies.allowEmpty=true")
    try:
        assert "WARNING: NO POLICIES" in notes
        stored = admin.get(
            f"/api/v1/namespaces/{namespace}/configmaps/pe2e-empty-policyext-policies"
        )
        assert not stored.get("data")
    finally:
        release.run("uninstall", "pe2e-empty")
