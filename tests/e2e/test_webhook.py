"""`policyext webhook` called by the real kube-apiserver over TLS (a
ValidatingWebhookConfiguration with a url and a caBundle, as the chart's has a Service):
`kubectl apply` of a broken SchedulingPolicy fails with validate's problem by field path, a
good one with an unguarded read is applied with kubectl's warning, and with the webhook
gone the broken object forced in is refused by the watch instead (status Ready=False, the
last good generation still serving)."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.run import RULES, policyext
from tests.e2e.controlplane import ApiError, ControlPlane, KubeClient
from tests.e2e.extender import Extender
from tests.e2e.test_crd import POLICIES, STRICT, crd, policies  # noqa: F401 - fixtures
from tests.server.harness import ExtenderServer
from tests.server.metrics_scrape import Scrape
from tests.server.webhook_server import PATH, start_webhook
from tests.waiting import PATIENCE, eventually

pytestmark = pytest.mark.e2e

Json = dict[str, Any]
CONFIGS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
CONFIG = "policyext-e2e"
WEBHOOK = "schedulingpolicies.policyext.io"
TYPO = "node.metadata.labelz.size() == 0"
PROBLEM = (
    "spec.filters[0].expression: 1:15: no field 'labelz' in ObjectMeta; did you mean 'labels'?"
)


@pytest.fixture
def webhook(control_plane: ControlPlane, tmp_path: Path) -> Iterator[ExtenderServer]:
    """`policyext webhook` on loopback with the control plane's serving certificate (its
    SANs hold 127.0.0.1; its CA is the caBundle)."""
    pki = control_plane.pki
    assert pki is not None
    tls = ssl.create_default_context(cafile=str(pki.ca_cert))
    server = start_webhook(tmp_path, pki.serving_cert, pki.serving_key, tls)
    yield server
    server.stop()


def _configuration(control_plane: ControlPlane, port: int) -> Json:
    """What the chart's template makes, with a url in place of its Service."""
    assert control_plane.pki is not None
    bundle = base64.b64encode(control_plane.pki.ca_cert.read_bytes()).decode()
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": CONFIG},
        "webhooks": [
            {
                "name": WEBHOOK,
                "clientConfig": {"url": f"https://127.0.0.1:{port}{PATH}", "caBundle": bundle},
                "rules": [
                    {
                        "apiGroups": ["policyext.io"],
                        "apiVersions": ["v1alpha1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["schedulingpolicies"],
                        "scope": "Cluster",
                    }
                ],
                "failurePolicy": "Fail",
                "matchPolicy": "Equivalent",
                "sideEffects": "None",
                "timeoutSeconds": 10,
                "admissionReviewVersions": ["v1"],
            }
        ],
    }


@pytest.fixture
def registered(
    policies: KubeClient,  # noqa: F811 - the fixture imported above
    control_plane: ControlPlane,
    webhook: ExtenderServer,
) -> Iterator[KubeClient]:
    """The webhook registered, and in effect (the API server reads the configurations
    through an informer: a dry run of a broken policy is refused once it is)."""
    policies.create(CONFIGS, _configuration(control_plane, webhook.port))

    def refused() -> bool:
        try:
            policies.request("POST", POLICIES, _broken("probe"), query={"dryRun": "All"})
        except ApiError as e:
            return e.status == 422 and PROBLEM in str(e.body.get("message"))
        return False

    eventually(refused)
    yield policies
    try:
        policies.delete(f"{CONFIGS}/{CONFIG}")
    except ApiError as e:
        if e.status != 404:
            raise


def _spot(name: str = "critical-off-spot") -> Json:
    policy: Json = yaml.safe_load((RULES / "critical-off-spot.yaml").read_text())
    policy["metadata"]["name"] = name
    return policy


def _broken(name: str = "critical-off-spot") -> Json:
    policy = _spot(name)
    policy["spec"]["filters"][0]["expression"] = TYPO
    return policy


def _kubectl(
    control_plane: ControlPlane, tmp_path: Path, *args: str, policy: Json | None = None
) -> subprocess.CompletedProcess[str]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    command = [kubectl, "--kubeconfig", str(control_plane.admin_kubeconfig), *args]
    if policy is not None:
        path = tmp_path / f"{policy['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(policy))
        command += ["-f", str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=PATIENCE, check=False)


def _reviews(webhook: ExtenderServer) -> Counter[tuple[str, str]]:
    """policyext_webhook_reviews_total by (operation, result), as /metrics says it."""
    reply = webhook.request("GET", "/metrics")
    assert reply.status == 200
    scrape = Scrape(reply.body.decode())
    counts: Counter[tuple[str, str]] = Counter()
    for (name, labels), value in scrape.samples.items():
        if name == "policyext_webhook_reviews_total":
            found = dict(labels)
            counts[(found["operation"], found["result"])] += int(value)
    return counts


def test_kubectl_apply_of_a_broken_policy_is_refused_through_the_webhook_with_validates_problem(
    registered: KubeClient, control_plane: ControlPlane, webhook: ExtenderServer, tmp_path: Path
) -> None:
    reviews_before = _reviews(webhook)
    created = _kubectl(control_plane, tmp_path, "apply", policy=_broken())
    assert created.returncode != 0
    assert f'admission webhook "{WEBHOOK}" denied the request: {PROBLEM}' in created.stderr
    # the API server's call, counted in the webhook's metrics (the probes were dry runs
    # before the fixture returned)
    refused = _reviews(webhook) - reviews_before
    assert refused[("CREATE", "refused")] == 1 and refused[("CREATE", "allowed")] == 0
    with pytest.raises(ApiError) as absent:
        registered.get(f"{POLICIES}/critical-off-spot")
    assert absent.value.status == 404

    # an update too: the good generation stays the object's generation
    good = _kubectl(control_plane, tmp_path, "apply", policy=_spot())
    assert good.returncode == 0, good.stderr
    assert "Warning" not in good.stderr
    generation = registered.get(f"{POLICIES}/critical-off-spot")["metadata"]["generation"]
    updated = _kubectl(control_plane, tmp_path, "apply", policy=_broken())
    assert updated.returncode != 0 and PROBLEM in updated.stderr
    stored = registered.get(f"{POLICIES}/critical-off-spot")
    assert stored["metadata"]["generation"] == generation
    assert stored["spec"] == _spot()["spec"]


def test_a_policy_with_an_unguarded_read_is_applied_with_kubectls_warning(
    registered: KubeClient, control_plane: ControlPlane, tmp_path: Path
) -> None:
    policy = _spot("gpu-labels")
    policy["spec"]["filters"][0]["expression"] = "node.metadata.labels['gpu'] == 'true'"
    applied = _kubectl(control_plane, tmp_path, "apply", policy=policy)
    assert applied.returncode == 0, applied.stderr
    assert "Warning: spec.filters[0].expression: " in applied.stderr, applied.stderr
    assert registered.get(f"{POLICIES}/gpu-labels")["spec"] == policy["spec"]


def test_with_the_webhook_down_failure_policy_fail_refuses_and_without_it_the_watch_refuses(
    registered: KubeClient, control_plane: ControlPlane, webhook: ExtenderServer, tmp_path: Path
) -> None:
    """failurePolicy Fail: policyext's webhook down, no SchedulingPolicy is written. The
    configuration deleted (the webhook bypassed), the broken generation is written; the
    watch refuses to serve it: Ready False with the problem the webhook would have given,
    the last good generation still serving, as `validate` reads it."""
    applied = _kubectl(control_plane, tmp_path, "apply", policy=_spot())
    assert applied.returncode == 0, applied.stderr
    extender = Extender(
        control_plane, control_plane.admin_kubeconfig, [], name="policyext-wh", args=["--rules-crd"]
    )
    extender.start()
    try:
        path = f"{POLICIES}/critical-off-spot"
        served = registered.wait_for(path, lambda o: _ready(o) == "True")
        version = _version(extender)
        from_file = policyext("validate", RULES / "critical-off-spot.yaml", "-o", "json")
        assert version == json.loads(from_file.stdout)["version"]

        webhook.stop()
        down = _kubectl(control_plane, tmp_path, "apply", policy=_broken())
        assert down.returncode != 0
        assert f'failed calling webhook "{WEBHOOK}"' in down.stderr, down.stderr

        registered.delete(f"{CONFIGS}/{CONFIG}")

        def written() -> bool:
            current = registered.get(path)["metadata"]
            try:
                registered.request("PUT", path, _broken() | {"metadata": current}, query=STRICT)
            except ApiError as e:
                if e.status in (409, 500) or "webhook" in str(e.body.get("message")):
                    return False  # the API server still calls the webhook (or a conflict)
                raise
            return True

        eventually(written)
        refused = registered.wait_for(
            path,
            lambda o: (
                _ready(o) == "False"
                and o["status"]["observedGeneration"] == o["metadata"]["generation"]
            ),
        )
        condition = next(c for c in refused["status"]["conditions"] if c["type"] == "Ready")
        first = served["metadata"]["generation"]
        assert condition["reason"] == "Invalid"
        assert condition["message"].endswith(f"(generation {first} keeps serving): {PROBLEM}")
        assert _version(extender) == version  # decisions from the last good generation
    finally:
        extender.stop()


def _ready(obj: Json) -> str:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return str(condition["status"])
    return ""


def _version(extender: Extender) -> str:
    status, body = extender.get("/policies")
    assert status == 200 and isinstance(body, dict), body
    return str(body["version"])
