"""`policyext config --scheduler-name` printed, saved and given to the real kube-scheduler
(v1.37.2) as is: it loads strictly, and the scheduler runs as a second scheduler next to a
cluster scheduler that holds the leader Lease, scheduling a pod through the extender.

The scheduler runs as it would in a pod: the file has no clientConnection, so kube-scheduler
uses the in-cluster connection (KUBERNETES_SERVICE_HOST/PORT and the service account files
under /var/run/secrets/kubernetes.io/serviceaccount). Those files are provided in a mount
namespace of the scheduler's own (`unshare`), which the host never sees. kube-scheduler
ignores `--kubeconfig` when `--config` is given, so no flag could stand in for them.
"""

from __future__ import annotations

import contextlib
import datetime
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.binaries import Binaries
from tests.e2e.controlplane import (
    SCHEDULER,
    ApiError,
    Component,
    ControlPlane,
    KubeClient,
    _https_ok,
    free_port,
    pod,
)
from tests.e2e.extender import (
    CRITICAL_OFF_SPOT,
    Extender,
    policyext_argv,
    spot_and_on_demand,
)
from tests.unavailable import skip_or_fail
from tests.waiting import PATIENCE

pytestmark = pytest.mark.e2e

NAME = "policy-config-e2e"
# the Lease kube-scheduler's leader election uses unless told otherwise
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"
SERVICE_ACCOUNT = "/run/secrets/kubernetes.io/serviceaccount"
# in the scheduler's own mount namespace: a private /run holding the service account files
IN_CLUSTER = (
    f'mount -t tmpfs policyext-e2e /run && mkdir -p "$(dirname {SERVICE_ACCOUNT})" && '
    f'cp -r "$0" {SERVICE_ACCOUNT} && exec "$@"'
)


def _printed_config(url: str) -> str:
    return subprocess.run(
        policyext_argv("config", "--url", url, "--scheduler-name", NAME),
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _service_account(control_plane: ControlPlane, folder: Path) -> Path:
    """The files a pod's service account mount holds, for the scheduler's identity."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "token").write_text(control_plane.identities[SCHEDULER].token)
    shutil.copy(control_plane.ca_file, folder / "ca.crt")
    (folder / "namespace").write_text("kube-system")
    return folder


def _in_cluster_scheduler(control_plane: ControlPlane, config: Path, name: str) -> Component:
    if shutil.which("unshare") is None:
        skip_or_fail("unshare (util-linux) is needed to give kube-scheduler in-cluster files")
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        skip_or_fail(f"cannot make a mount namespace: {probe.stderr.decode().strip()}")
    folder = config.parent
    accounts = _service_account(control_plane, folder / "serviceaccount")
    kubeconfig = control_plane.write_kubeconfig(SCHEDULER, folder / "kubeconfig")
    assert control_plane.pki is not None
    port = free_port()
    argv = [
        "env",
        "KUBERNETES_SERVICE_HOST=127.0.0.1",
        f"KUBERNETES_SERVICE_PORT={control_plane.api_port}",
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        IN_CLUSTER,
        str(accounts),
        str(control_plane.binaries.kube_scheduler),
        f"--config={config}",
        # the scheduler's own HTTPS endpoint (for /readyz), as the harness serves it
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={control_plane.pki.serving_cert}",
        f"--tls-private-key-file={control_plane.pki.serving_key}",
        "--v=2",
    ]
    scheduler = Component(name, argv, control_plane.logdir / f"{name}.log")
    control_plane.components[name] = scheduler
    scheduler.start()
    context = ssl.create_default_context(cafile=str(control_plane.ca_file))
    scheduler.wait_ready(lambda: _https_ok(port, "/readyz", context, None), timeout=PATIENCE)
    return scheduler


@pytest.fixture
def lease_held_elsewhere(admin: KubeClient) -> Iterator[None]:
    """The cluster's own scheduler, as leader election sees it: the Lease kube-system/
    kube-scheduler held by someone else and just renewed, for an hour."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with contextlib.suppress(ApiError):  # left by an interrupted run
        admin.delete(LEASE)
    admin.create(
        LEASE.rsplit("/", 1)[0],
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": "the-clusters-own-scheduler",
                "leaseDurationSeconds": 3600,
                "acquireTime": now,
                "renewTime": now,
            },
        },
    )
    yield
    admin.delete(LEASE)


def test_the_printed_configuration_runs_a_second_scheduler_that_calls_the_extender(
    control_plane: ControlPlane,
    policyext_kubeconfig: Path,
    admin: KubeClient,
    namespace: str,
    lease_held_elsewhere: None,
    tmp_path: Path,
) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "critical-off-spot.yaml").write_text(CRITICAL_OFF_SPOT)
    extender = Extender(control_plane, policyext_kubeconfig, [rules], name="policyext-config")
    extender.start()
    name = f"scheduler-{NAME}"
    try:
        config = tmp_path / "scheduler" / "config.yaml"
        config.parent.mkdir()
        config.write_text(_printed_config(extender.url))  # byte for byte, nothing added
        _in_cluster_scheduler(control_plane, config, name)

        suffix = spot_and_on_demand(admin)
        manifest = pod("critical", scheduler_name=NAME, labels={"critical": "true"})
        admin.create(f"/api/v1/namespaces/{namespace}/pods", manifest)
        seen = admin.wait_for(
            f"/api/v1/namespaces/{namespace}/pods/critical",
            lambda p: bool(p["spec"].get("nodeName")),
        )
        # the roomy spot node wins without the extender; its policy keeps critical pods off
        assert seen["spec"]["nodeName"] == f"on-demand-{suffix}"
        filters = extender.metric("policyext_requests_total", {"code": "200", "verb": "filter"})
        assert filters is not None and filters >= 1
    finally:
        if name in control_plane.components:
            control_plane.stop_component(name)
        extender.stop()


def test_kube_scheduler_refuses_a_configuration_with_a_field_it_does_not_know(
    e2e_binaries: Binaries, tmp_path: Path
) -> None:
    """The loading is strict, so the test above would catch a field we print wrongly."""
    document = yaml.safe_load(_printed_config("http://127.0.0.1:8888"))
    document["extenders"][0]["httpTimeOut"] = "5s"  # a wrong case is a different field
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(document, sort_keys=False))
    done = subprocess.run(
        [str(e2e_binaries.kube_scheduler), f"--config={config}"],
        capture_output=True,
        text=True,
        timeout=120,  # it stops while reading the file; a hang is a failure
        check=False,
    )
    assert done.returncode != 0
    assert "strict decoding error: unknown field" in done.stderr, done.stderr[-2000:]
    assert "extenders[0].httpTimeOut" in done.stderr
