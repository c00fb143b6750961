"""The admission webhook of SchedulingPolicy objects as the chart renders it
(policies.webhook): on with policies.crd, a container of the extender's pods, a Service of
its own that publishes not-ready pods, and a ValidatingWebhookConfiguration whose caBundle
is the CA of the chart's own certificate, or cert-manager's injected."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from tests.chart.chart import CHART, FULLNAME, NAMESPACE, Chart, Json, Rendered

WEBHOOK = f"{FULLNAME}-webhook"
CRD = CHART / "ci" / "crd-values.yaml"
CERT_MANAGER = CHART / "ci" / "tls-cert-manager-values.yaml"


def _configuration(rendered: Rendered) -> Json:
    return rendered.get("ValidatingWebhookConfiguration", WEBHOOK)


def _only_hook(rendered: Rendered) -> Json:
    (hook,) = _configuration(rendered)["webhooks"]
    assert isinstance(hook, dict)
    return hook


def test_the_webhook_is_on_with_the_crd_and_refuses_what_validate_refuses(chart: Chart) -> None:
    rendered = chart.render([CRD])
    hook = _only_hook(rendered)
    assert hook["name"] == "schedulingpolicies.policyext.io"
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["clientConfig"]["service"] == {
        "name": WEBHOOK,
        "namespace": NAMESPACE,
        "path": "/validate-schedulingpolicy",
        "port": 443,
    }
    assert hook["rules"] == [
        {
            "apiGroups": ["policyext.io"],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["schedulingpolicies"],
            "scope": "Cluster",
        }
    ]
    assert (hook["failurePolicy"], hook["sideEffects"], hook["matchPolicy"]) == (
        "Fail",
        "None",
        "Equivalent",
    )
    assert hook["timeoutSeconds"] == 5


@pytest.mark.parametrize(
    ("sets", "failure_policy", "timeout"),
    [
        (["policies.webhook.failurePolicy=Ignore"], "Ignore", 5),
        (["policies.webhook.timeoutSeconds=12"], "Fail", 12),
    ],
)
def test_the_failure_policy_and_timeout_are_values(
    chart: Chart, sets: list[str], failure_policy: str, timeout: int
) -> None:
    hook = _only_hook(chart.render([CRD], sets))
    assert (hook["failurePolicy"], hook["timeoutSeconds"]) == (failure_policy, timeout)


@pytest.mark.parametrize(
    ("files", "sets"),
    [
        ([], ["policies.allowEmpty=true"]),  # the default: the ConfigMap only
        ([CRD], ["policies.webhook.enabled=false"]),
    ],
    ids=["without the crd", "turned off"],
)
def test_without_the_webhook_nothing_of_it_is_rendered(
    chart: Chart, files: list[Path], sets: list[str]
) -> None:
    rendered = chart.render(files, sets)
    assert rendered.all("ValidatingWebhookConfiguration") == []
    assert WEBHOOK not in rendered.names("Service")
    assert "webhook" not in {c["name"] for c in rendered.pod_spec["containers"]}


def test_the_chart_ca_signs_the_webhook_certificate_for_its_service(chart: Chart) -> None:
    rendered = chart.render([CRD])
    secret = rendered.get("Secret", f"{WEBHOOK}-tls")
    bundle = _only_hook(rendered)["clientConfig"]["caBundle"]
    assert bundle == secret["data"]["ca.crt"]
    ca = x509.load_pem_x509_certificate(base64.b64decode(bundle))
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    assert cert.issuer == ca.subject
    public = ca.public_key()
    assert not isinstance(public, ec.EllipticCurvePublicKey)  # Helm's genCA: RSA
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert f"{WEBHOOK}.{NAMESPACE}.svc" in names.get_values_for_type(x509.DNSName)


def test_with_cert_manager_the_ca_is_injected_from_its_certificate(chart: Chart) -> None:
    rendered = chart.render([CERT_MANAGER], ["policies.crd=true"])
    configuration = _configuration(rendered)
    assert configuration["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": f"{NAMESPACE}/{WEBHOOK}"
    }
    assert "caBundle" not in _only_hook(rendered)["clientConfig"]
    certificate = rendered.get("Certificate", WEBHOOK)
    assert certificate["spec"]["secretName"] == f"{WEBHOOK}-tls"
    assert certificate["spec"]["dnsNames"] == [f"{WEBHOOK}.{NAMESPACE}.svc"]
    assert certificate["spec"]["issuerRef"]["name"] == "cluster-ca"
    assert f"{WEBHOOK}-tls" not in rendered.names("Secret")


def test_the_webhook_service_reaches_pods_that_are_not_ready(chart: Chart) -> None:
    """A pod whose extender is not ready (no policy loaded yet) still reviews: the policy
    that would make it ready can be applied."""
    service = chart.render([CRD]).get("Service", WEBHOOK)
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["ports"] == [
        {"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}
    ]


@pytest.mark.parametrize(
    ("sets", "sources"),
    [
        (["policies.mount=false"], []),
        (["policies.mount=true"], ["--rules=/etc/policyext/rules"]),
        (
            ["policies.mount=false", "policies.watch=true"],
            ["--in-cluster", f"--rules-configmap={NAMESPACE}/{FULLNAME}-policies"],
        ),
    ],
)
def test_the_webhook_container_serves_its_certificate_and_reads_the_other_sources(
    chart: Chart, sets: list[str], sources: list[str]
) -> None:
    rendered = chart.render(
        [CRD], [*sets, "policies.allowEmpty=true", "policies.webhook.port=9443"]
    )
    container = rendered.container("webhook")
    assert container["image"] == rendered.container("extender")["image"]
    assert container["args"][:4] == [
        "webhook",
        "--bind=0.0.0.0:9443",
        "--tls-cert=/etc/policyext/webhook-tls/tls.crt",
        "--tls-key=/etc/policyext/webhook-tls/tls.key",
    ]
    assert container["args"][5:] == sources
    assert container["ports"] == [{"name": "webhook", "containerPort": 9443, "protocol": "TCP"}]
    assert container["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"
    volumes = {v["name"]: v for v in rendered.pod_spec["volumes"]}
    assert volumes["webhook-tls"]["secret"]["secretName"] == f"{WEBHOOK}-tls"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/etc/policyext/webhook-tls" in mounts
    assert ("/etc/policyext/rules" in mounts) == ("policies.mount=true" in sets)


def test_the_network_policy_lets_the_api_server_reach_the_webhook(chart: Chart) -> None:
    policy = chart.render([CRD]).get("NetworkPolicy", FULLNAME)
    rules = [r for r in policy["spec"]["ingress"] if r["ports"][0]["port"] == "webhook"]
    assert rules == [{"ports": [{"port": "webhook", "protocol": "TCP"}]}]
