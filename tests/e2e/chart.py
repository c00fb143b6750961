"""The Helm chart installed into the e2e API server, and its pod's containers run here with
what it installed (tests/e2e/test_chart.py, tests/e2e/test_chart_crd.py).

`helm install` puts the chart into the test API server; then kube-scheduler and `policyext
serve` run here, on loopback, with the chart's scheduler configuration, policies and two
ServiceAccounts' identities (kube-scheduler's and the extender's, tokens from the
TokenRequest API), so that RBAC is exactly what the chart grants each. Only what cannot be
the same outside a pod is adapted: the containers' ports, the policy directory the kubelet
would mount, and the API server's address. (No controller manager runs here, so the
extender's token Secret stays empty: its identity comes from a TokenRequest for the same
ServiceAccount.)
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.chart.chart import process
from tests.chart.helmbin import HelmUnavailable, ensure_helm
from tests.e2e.controlplane import (
    ApiError,
    Component,
    ControlPlane,
    KubeClient,
    free_port,
    pod,
)
from tests.e2e.extender import http_get, spot_and_on_demand
from tests.unavailable import skip_or_fail
from tests.waiting import PATIENCE

Json = dict[str, Any]


def helm() -> Path:
    try:
        return ensure_helm()
    except HelmUnavailable as reason:
        skip_or_fail(str(reason))


@dataclass(frozen=True)
class Installed:
    """A release of the chart in a namespace of the e2e API server."""

    namespace: str
    helm: Path
    kubeconfig: Path
    release: str

    @property
    def fullname(self) -> str:
        return f"{self.release}-policyext"

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [
                str(self.helm),
                *args,
                "--namespace",
                self.namespace,
                "--kubeconfig",
                str(self.kubeconfig),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def manifest(self) -> list[Json]:
        """The objects of the release's templates (`crds/` is not part of it)."""
        return [o for o in yaml.safe_load_all(self.run("get", "manifest", self.release)) if o]


_PLURALS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Service": "/api/v1/namespaces/{ns}/services",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "NetworkPolicy": "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "ValidatingWebhookConfiguration": (
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    ),
}


def object_path(obj: Json, namespace: str) -> str:
    """The API path of one object of a manifest (its namespace, or `namespace`)."""
    base = _PLURALS[obj["kind"]].format(ns=obj["metadata"].get("namespace", namespace))
    return f"{base}/{obj['metadata']['name']}"


def service_account_kubeconfig(
    control_plane: ControlPlane, admin: KubeClient, namespace: str, account: str, path: Path
) -> Path:
    """A kubeconfig with a token of one of the chart's ServiceAccounts: what the token its
    container mounts would be (kube-scheduler's projected one, the extender's Secret)."""
    token = admin.service_account_token(namespace, account)
    return control_plane.write_token_kubeconfig("chart", token, path)


def placed_on(admin: KubeClient, namespace: str, scheduler: str, labels: dict[str, str]) -> str:
    """The node a pod of the chart's scheduler (`scheduler`, with `labels`) is bound to,
    beside a fresh spot and on-demand node: "spot" or "on-demand" (without the pair's
    suffix), or the whole name of any other node."""
    suffix = spot_and_on_demand(admin)
    name = f"pod-{suffix}"
    admin.create(
        f"/api/v1/namespaces/{namespace}/pods", pod(name, scheduler_name=scheduler, labels=labels)
    )
    seen = admin.wait_for(
        f"/api/v1/namespaces/{namespace}/pods/{name}", lambda p: bool(p["spec"].get("nodeName"))
    )
    node: str = seen["spec"]["nodeName"]
    return node.removesuffix(f"-{suffix}")


def replace_flag(args: list[str], flag: str, value: str | None) -> list[str]:
    """`args` with `--flag=...` replaced by `--flag=value` (or dropped for None)."""
    assert any(a.startswith(f"{flag}=") or a == flag for a in args), f"{flag} not in {args}"
    out = []
    for arg in args:
        if arg == flag or arg.startswith(f"{flag}="):
            if value is not None:
                out.append(f"{flag}={value}" if "=" in arg else value)
        else:
            out.append(arg)
    return out


def local_process(container: Json, args: list[str]) -> list[str]:
    """The process of a container of the policyext image (its command, or the image's
    entrypoint), with `args` for its args, as this machine runs it: this checkout's
    policyext."""
    words = process({**container, "args": args})
    assert words[0] == "policyext", words
    return [sys.executable, "-m", "policyext.cli", *words[1:]]


def containers(admin: KubeClient, installed: Installed) -> dict[str, Json]:
    """The containers of the chart's Deployment's pod template, by name."""
    deployment = admin.get(
        f"/apis/apps/v1/namespaces/{installed.namespace}/deployments/{installed.fullname}"
    )
    return {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}


@dataclass(frozen=True)
class Running:
    url: str  # the verbs
    ops_url: str  # the operations endpoints (probes, /metrics, /policies)
    rules: Path  # the policy directory the kubelet would mount (empty unless mounted)
    scheduler_port: int


@contextmanager
def running(control_plane: ControlPlane, installed: Installed, folder: Path) -> Iterator[Running]:
    """The release's extender and kube-scheduler containers run here, each with its
    arguments as installed and its own ServiceAccount's token, until the block ends."""
    admin = control_plane.client()
    ns = installed.namespace
    fullname = installed.fullname
    kubeconfig = service_account_kubeconfig(
        control_plane, admin, ns, fullname, folder / "extender.kubeconfig"
    )
    scheduler_kubeconfig = service_account_kubeconfig(
        control_plane, admin, ns, f"{fullname}-scheduler", folder / "scheduler.kubeconfig"
    )
    pod = containers(admin, installed)

    port, ops_port = free_port(), free_port()
    extender_args = pod["extender"]["args"]
    assert "--bind=127.0.0.1:8888" in extender_args  # the verbs on loopback only
    extender_args = replace_flag(extender_args, "--in-cluster", f"--kubeconfig={kubeconfig}")
    extender_args = replace_flag(extender_args, "--bind", f"127.0.0.1:{port}")
    extender_args = replace_flag(extender_args, "--ops-bind", f"127.0.0.1:{ops_port}")
    # the policy directory the kubelet would mount from the chart's ConfigMap
    rules = folder / "rules"
    rules.mkdir()
    if "--rules=/etc/policyext/rules" in extender_args:
        configmap = f"/api/v1/namespaces/{ns}/configmaps/{fullname}-policies"
        for name, content in admin.get(configmap)["data"].items():
            (rules / name).write_text(content)
        extender_args = replace_flag(extender_args, "--rules", str(rules))
    extender = Component(
        f"{installed.release}-extender",
        local_process(pod["extender"], extender_args),
        control_plane.logdir / f"{installed.release}-extender.log",
    )

    # the scheduler configuration as installed; only the extender's port is this machine's
    config = yaml.safe_load(
        admin.get(f"/api/v1/namespaces/{ns}/configmaps/{fullname}-scheduler")["data"]["config.yaml"]
    )
    (entry,) = config["extenders"]
    assert entry["urlPrefix"] == "http://127.0.0.1:8888"
    entry["urlPrefix"] = f"http://127.0.0.1:{port}"
    # in a pod: in-cluster, with the token kube-scheduler's container mounts
    config["clientConnection"] = {"kubeconfig": str(scheduler_kubeconfig)}
    config_path = folder / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    scheduler_port = free_port()
    scheduler_args = replace_flag(pod["kube-scheduler"]["args"], "--config", str(config_path))
    scheduler_args = replace_flag(scheduler_args, "--secure-port", str(scheduler_port))
    assert control_plane.pki is not None
    scheduler = Component(
        f"{installed.release}-kube-scheduler",
        [
            str(control_plane.binaries.kube_scheduler),
            *scheduler_args,
            # in a pod these come from the in-cluster config and self-signed certificates
            f"--authentication-kubeconfig={scheduler_kubeconfig}",
            f"--authorization-kubeconfig={scheduler_kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--tls-cert-file={control_plane.pki.serving_cert}",
            f"--tls-private-key-file={control_plane.pki.serving_key}",
        ],
        control_plane.logdir / f"{installed.release}-kube-scheduler.log",
    )
    control_plane.components[extender.name] = extender
    control_plane.components[scheduler.name] = scheduler
    try:
        extender.start()
        ops_url = f"http://127.0.0.1:{ops_port}"
        extender.wait_ready(lambda: http_get(f"{ops_url}/readyz")[0] == 200, PATIENCE)
        scheduler.start()
        # it leads once it holds the Lease, which only the chart's Role lets it write
        _wait_for_leader(admin, installed, scheduler)
        yield Running(f"http://127.0.0.1:{port}", ops_url, rules, scheduler_port)
    finally:
        scheduler.stop()
        extender.stop()


def _wait_for_leader(admin: KubeClient, installed: Installed, scheduler: Component) -> None:
    path = (
        f"/apis/coordination.k8s.io/v1/namespaces/{installed.namespace}/leases/{installed.fullname}"
    )

    def leads() -> bool:
        try:
            return bool(admin.get(path)["spec"].get("holderIdentity"))
        except ApiError as error:
            if error.status == 404:
                return False
            raise

    scheduler.wait_ready(leads, timeout=PATIENCE)
