"""The Helm chart in CRD mode (`policies.crd: true`, its admission webhook on by `auto`)
against the real API server and kube-scheduler.

What `helm install` puts in is accepted (the CRD of crds/ created by helm, or left as it was
when another module made it first). `policyext serve` runs here with the extender
container's arguments and its ServiceAccount's token (tests/e2e/chart.py says what is
adapted): a SchedulingPolicy created through the API is served, its status gets this
replica's entry, written with the chart's RBAC, and the chart's scheduler places pods by
it. `policyext webhook` runs with the webhook container's process and the chart's Secret,
and the API server calls it through the chart's ValidatingWebhookConfiguration and Service:
a broken policy is refused with `policyext validate`'s problem, a good one admitted.

No kube-proxy runs here, so a Service's ClusterIP leads nowhere. The e2e kube-apiserver
runs with --enable-aggregator-routing: it then calls a webhook's Service at a ready address
of the Service's EndpointSlices (those labelled kubernetes.io/service-name, the port named
as the Service's port), still with the TLS server name NAME.NAMESPACE.svc, which the
chart's certificate holds. No controller writes EndpointSlices here either: the test
writes the one the EndpointSlice controller would, for an address of this machine that is
not loopback (an endpoint may not be), where the webhook listens.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import socket
import ssl
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.chart.chart import CHART
from tests.e2e import chart
from tests.e2e.chart import Installed, Running
from tests.e2e.controlplane import (
    ApiError,
    Component,
    ControlPlane,
    KubeClient,
    free_port,
    host_address,
)
from tests.e2e.extender import CRITICAL_OFF_SPOT, http_get
from tests.e2e.rbac import can
from tests.e2e.test_crd import CRD_NAME, CRDS, PLURAL, POLICIES, STRICT
from tests.e2e.test_webhook import PROBLEM, TYPO, WEBHOOK
from tests.unavailable import skip_or_fail
from tests.waiting import PATIENCE, eventually

pytestmark = pytest.mark.e2e

Json = dict[str, Any]
RELEASE = "pe2e-crd"
SCHEDULER_NAME = "chart-crd-scheduler"
GROUP = "policyext.io"
# the objects alone: no policy ConfigMap, mounted or watched
VALUES: Json = {
    "scheduler": {"name": SCHEDULER_NAME},
    "extender": {"introspection": True},  # /policies on the operations port
    "policies": {"crd": True, "mount": False},
}


@pytest.fixture(scope="module")
def installed(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Installed]:
    helm = chart.helm()
    admin = control_plane.client()
    namespace = f"chart-crd-{uuid.uuid4().hex[:6]}"
    admin.create_namespace(namespace)
    values = tmp_path_factory.mktemp("chart-crd") / "values.yaml"
    values.write_text(yaml.safe_dump(VALUES))
    release = Installed(namespace, helm, control_plane.admin_kubeconfig, RELEASE)
    try:
        release.run("install", RELEASE, str(CHART), "--values", str(values))
        yield release
    finally:
        # its webhook configuration (failurePolicy Fail) would refuse every later module's
        # SchedulingPolicy once the webhook is gone
        release.run("uninstall", RELEASE)


def test_the_api_server_accepts_everything_the_chart_installs_in_crd_mode(
    installed: Installed, admin: KubeClient
) -> None:
    manifest = installed.manifest()
    kinds = {o["kind"] for o in manifest}

    assert {
        "Deployment",
        "ClusterRole",
        "ClusterRoleBinding",
        "Service",
        "Secret",
        "ValidatingWebhookConfiguration",
    } <= kinds
    for obj in manifest:
        stored = admin.get(chart.object_path(obj, installed.namespace))
        assert stored["metadata"]["name"] == obj["metadata"]["name"]
    # the objects are the policies: the extender reads neither a folder nor a ConfigMap
    args = chart.containers(admin, installed)["extender"]["args"]
    assert {"--rules-crd", f"--replica-namespace={installed.namespace}"} <= set(args)
    assert not [a for a in args if a.startswith(("--rules=", "--rules-configmap"))]
    # crds/: created by helm, or left as it was
    crd = admin.get(f"{CRDS}/{CRD_NAME}")
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions["Established"] == "True"
    assert [v["name"] for v in crd["spec"]["versions"] if v["served"]] == ["v1alpha1"]


def test_the_webhook_configuration_trusts_the_charts_ca_for_its_service(
    installed: Installed, admin: KubeClient
) -> None:
    ns, name = installed.namespace, f"{installed.fullname}-webhook"
    configs = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    (hook,) = admin.get(f"{configs}/{name}")["webhooks"]
    secret = admin.get(f"/api/v1/namespaces/{ns}/secrets/{name}-tls")
    service = admin.get(f"/api/v1/namespaces/{ns}/services/{name}")

    assert hook["name"] == WEBHOOK
    assert hook["failurePolicy"] == "Fail"
    assert hook["clientConfig"]["service"] == {
        "name": name,
        "namespace": ns,
        "path": "/validate-schedulingpolicy",
        "port": 443,
    }
    assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    assert service["spec"]["type"] == "ClusterIP"
    assert [p["port"] for p in service["spec"]["ports"]] == [443]


# --------------------------------------------------------------------------- the webhook


@dataclass(frozen=True)
class Webhook:
    """`policyext webhook` listening at `address`:`port`, and its Service's EndpointSlice."""

    service: str
    namespace: str
    address: str
    port: int
    port_name: str  # the Service port's: the name the API server looks for in a slice

    @property
    def slices(self) -> str:
        return f"/apis/discovery.k8s.io/v1/namespaces/{self.namespace}/endpointslices"

    @property
    def slice_path(self) -> str:
        return f"{self.slices}/{self.service}-e2e"

    def endpoint_slice(self) -> Json:
        """What the EndpointSlice controller would write for one ready pod at `address`."""
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{self.service}-e2e",
                "labels": {
                    "kubernetes.io/service-name": self.service,
                    "endpointslice.kubernetes.io/managed-by": "e2e.policyext.io",
                },
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [self.address], "conditions": {"ready": True}}],
            "ports": [{"name": self.port_name, "port": self.port, "protocol": "TCP"}],
        }


def _broken(name: str) -> Json:
    policy: Json = yaml.safe_load(CRITICAL_OFF_SPOT)
    policy["metadata"]["name"] = name
    policy["spec"]["filters"][0]["expression"] = TYPO
    return policy


def _refusal(admin: KubeClient, words: str) -> str | None:
    """The API server's message refusing a dry run of a broken policy, when it holds
    `words`; None while it says something else or admits it."""
    try:
        admin.request("POST", POLICIES, _broken("probe"), query={"dryRun": "All", **STRICT})
    except ApiError as e:
        message = str(e.body.get("message"))
        return message if words in message else None
    return None


def _publish(admin: KubeClient, webhook: Webhook) -> None:
    """The EndpointSlice written, and in effect: the API server has it in its informer
    once a dry run of a broken policy comes back with the webhook's problem."""
    admin.create(webhook.slices, webhook.endpoint_slice())
    eventually(lambda: _refusal(admin, PROBLEM))


def _healthz(address: str, port: int, tls: ssl.SSLContext, server_name: str) -> bool:
    """/healthz answered over TLS verified as the API server verifies it: the chart's CA,
    the server name NAME.NAMESPACE.svc (a certificate error raises, a port not yet open
    is "not yet")."""
    try:
        with (
            socket.create_connection((address, port), timeout=PATIENCE) as raw,
            tls.wrap_socket(raw, server_hostname=server_name) as conn,
        ):
            conn.sendall(
                f"GET /healthz HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n\r\n".encode()
            )
            return conn.recv(64).startswith(b"HTTP/1.1 200")
    except ConnectionError:
        return False


@pytest.fixture(scope="module")
def webhook(
    control_plane: ControlPlane,
    installed: Installed,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Webhook]:
    """The webhook container's process, with the chart's Secret as the pod mounts it,
    listening where the Service's EndpointSlice says (the port its targetPort names)."""
    address = host_address()
    if address is None:
        skip_or_fail("no IPv4 address but loopback here: a Service's endpoint cannot be one")
    admin = control_plane.client()
    ns, name = installed.namespace, f"{installed.fullname}-webhook"
    (service_port,) = admin.get(f"/api/v1/namespaces/{ns}/services/{name}")["spec"]["ports"]
    container = chart.containers(admin, installed)["webhook"]
    (target,) = [p for p in container["ports"] if p["name"] == service_port["targetPort"]]
    assert f"--bind=0.0.0.0:{target['containerPort']}" in container["args"]
    folder = tmp_path_factory.mktemp("chart-webhook")
    secret = admin.get(f"/api/v1/namespaces/{ns}/secrets/{name}-tls")["data"]
    for key in ("tls.crt", "tls.key", "ca.crt"):
        (folder / key).write_bytes(base64.b64decode(secret[key]))
        (folder / key).chmod(0o600)
    port = free_port(address)
    args = chart.replace_flag(container["args"], "--bind", f"{address}:{port}")
    args = chart.replace_flag(args, "--tls-cert", str(folder / "tls.crt"))
    args = chart.replace_flag(args, "--tls-key", str(folder / "tls.key"))
    server = Component(
        f"{RELEASE}-webhook",
        chart.local_process(container, args),
        control_plane.logdir / f"{RELEASE}-webhook.log",
    )
    control_plane.components[server.name] = server
    found = Webhook(name, ns, address, port, service_port["name"])
    tls = ssl.create_default_context(cafile=str(folder / "ca.crt"))
    try:
        server.start()
        server.wait_ready(lambda: _healthz(address, port, tls, f"{name}.{ns}.svc"), PATIENCE)
        _publish(admin, found)
        yield found
    finally:
        server.stop()
        with contextlib.suppress(ApiError):
            admin.delete(found.slice_path)


def test_the_api_server_calls_the_charts_webhook_through_its_service(
    webhook: Webhook, admin: KubeClient
) -> None:
    name = f"chart-crd-{uuid.uuid4().hex[:6]}"
    with pytest.raises(ApiError) as refused:
        admin.request("POST", POLICIES, _broken(name), query=STRICT)
    assert refused.value.status == 422
    message = str(refused.value.body.get("message"))
    assert f'admission webhook "{WEBHOOK}" denied the request: {PROBLEM}' in message
    with pytest.raises(ApiError) as absent:
        admin.get(f"{POLICIES}/{name}")
    assert absent.value.status == 404

    good = yaml.safe_load(CRITICAL_OFF_SPOT)
    good["metadata"]["name"] = name
    admin.request("POST", POLICIES, good, query=STRICT)
    try:
        assert admin.get(f"{POLICIES}/{name}")["spec"] == good["spec"]
    finally:
        admin.delete(f"{POLICIES}/{name}")


def test_a_webhook_service_without_endpoints_refuses_every_write_by_failure_policy_fail(
    webhook: Webhook, admin: KubeClient
) -> None:
    """The API server looks the Service's address up in its EndpointSlices (the ClusterIP
    resolver would not say "no endpoints"); with none, the call fails, and so the write."""
    admin.delete(webhook.slice_path)
    try:
        message = eventually(lambda: _refusal(admin, "no endpoints available"))
        assert f'failed calling webhook "{WEBHOOK}"' in message
        assert f'no endpoints available for service "{webhook.service}"' in message
    finally:
        _publish(admin, webhook)


# --------------------------------------------------------------------------- the extender


@pytest.fixture(scope="module")
def running(
    control_plane: ControlPlane,
    installed: Installed,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Running]:
    with chart.running(control_plane, installed, tmp_path_factory.mktemp("chart-crd-run")) as run:
        yield run


@pytest.fixture(scope="module")
def served(control_plane: ControlPlane, webhook: Webhook, running: Running) -> Iterator[Json]:
    """critical-off-spot created through the API (reviewed by the webhook), as served."""
    admin = control_plane.client()
    policy = yaml.safe_load(CRITICAL_OFF_SPOT)
    policy["metadata"]["name"] = f"chart-crd-{policy['metadata']['name']}"
    created = admin.request("POST", POLICIES, policy, query=STRICT)
    name = created["metadata"]["name"]
    try:
        eventually(lambda: name in _served_policies(running.ops_url))
        yield created
    finally:
        admin.delete(f"{POLICIES}/{name}")


def _served_policies(url: str) -> list[str]:
    status, body = http_get(f"{url}/policies")
    assert status == 200
    return sorted(p["name"] for p in json.loads(body)["policies"])


def _entry(obj: Json, replica: str) -> Json:
    entries = (obj.get("status") or {}).get("byPod") or []
    return next((dict(e) for e in entries if e["pod"] == replica), {})


def test_a_policy_created_through_the_api_is_served_and_its_status_has_this_replicas_entry(
    installed: Installed, served: Json, running: Running, admin: KubeClient
) -> None:
    name = served["metadata"]["name"]
    generation = served["metadata"]["generation"]
    replica = socket.gethostname()  # in a pod: the pod's name
    seen = admin.wait_for(
        f"{POLICIES}/{name}",
        lambda o: _entry(o, replica).get("servingGeneration") == generation,
    )

    entry = _entry(seen, replica)
    assert (entry["status"], entry["observedGeneration"]) == ("True", generation)
    ready = next(c for c in seen["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "Served")
    assert f"policyext/{replica}" in {f["manager"] for f in seen["metadata"]["managedFields"]}
    # written with the chart's ServiceAccount, which may write the status and not the spec
    extender = KubeClient(
        admin.port,
        admin.service_account_token(installed.namespace, installed.fullname),
        admin.context,
    )
    assert can(extender, "patch", PLURAL, subresource="status", group=GROUP)
    assert not can(extender, "update", PLURAL, group=GROUP)
    assert not can(extender, "patch", PLURAL, group=GROUP)


@pytest.mark.parametrize(
    ("labels", "lands_on"),
    [({"critical": "true"}, "on-demand"), ({}, "spot")],
)
def test_the_charts_scheduler_places_pods_by_the_policy_created_through_the_api(
    admin: KubeClient,
    namespace: str,
    served: Json,
    labels: dict[str, str],
    lands_on: str,
) -> None:
    assert chart.placed_on(admin, namespace, SCHEDULER_NAME, labels) == lands_on


def test_an_update_the_webhook_refuses_leaves_the_served_generation(
    served: Json, running: Running, admin: KubeClient
) -> None:
    path = f"{POLICIES}/{served['metadata']['name']}"
    broken = copy.deepcopy(served)
    broken["spec"]["filters"][0]["expression"] = TYPO
    with pytest.raises(ApiError) as refused:
        admin.replace(path, {k: broken[k] for k in ("apiVersion", "kind", "spec")}, **STRICT)
    assert refused.value.status == 422 and PROBLEM in str(refused.value.body.get("message"))
    assert admin.get(path)["metadata"]["generation"] == served["metadata"]["generation"]
    assert served["metadata"]["name"] in _served_policies(running.ops_url)
