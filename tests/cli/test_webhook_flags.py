"""`policyext webhook`'s flags: a wrong address or a ConfigMap it cannot read is a usage
error (exit 2) said before anything listens, in the words `serve` uses for the same
flags (both commands check them in one place, policyext/settings.py)."""

from __future__ import annotations

import pytest

from policyext.settings import SettingsError, WebhookSettings
from tests.cli.run import policyext

CERT = ["--tls-cert", "tls.crt", "--tls-key", "tls.key"]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--bind", "8443"], "--bind must be HOST:PORT with a port from 1 to 65535, got '8443'"),
        (["--bind", "0.0.0.0:0"], "--bind must be HOST:PORT"),
        (["--bind", "0.0.0.0:65536"], "--bind must be HOST:PORT"),
        (["--bind", "0.0.0.0:https"], "--bind must be HOST:PORT"),
        (["--rules-configmap", "kube-system/rules"], "--rules-configmap needs --kubeconfig"),
        (["--rules-configmap", "rules", "--in-cluster"], "NAMESPACE/NAME"),
    ],
    ids=[
        "a port without a host",
        "port 0",
        "a port past 65535",
        "a port by name",
        "a ConfigMap without a cluster",
        "a ConfigMap without its namespace",
    ],
)
def test_a_wrong_flag_is_a_usage_error_said_before_listening(flags: list[str], says: str) -> None:
    result = policyext("webhook", *CERT, *flags)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("given", "cluster"),
    [
        ({"bind": ":8443"}, False),
        ({"bind": "127.0.0.1:9443"}, False),
        ({"rules_configmap": "kube-system/rules", "kubeconfig": "kubeconfig"}, True),
        ({"rules_configmap": "kube-system/rules", "in_cluster": True}, True),
    ],
    ids=[
        "every address (gunicorn's reading of an empty host)",
        "one address",
        "a ConfigMap read with a kubeconfig",
        "a ConfigMap read in the cluster",
    ],
)
def test_a_right_combination_is_taken(given: dict[str, object], cluster: bool) -> None:
    settings = WebhookSettings(tls_cert="tls.crt", tls_key="tls.key", **given)  # type: ignore[arg-type]
    assert settings.connected is cluster
    configmap = settings.configmap
    assert (configmap is not None) is ("rules_configmap" in given)
    if configmap is not None:
        assert (configmap.namespace, configmap.name) == ("kube-system", "rules")


def test_the_certificate_is_required_first() -> None:
    with pytest.raises(SettingsError, match="--tls-cert and --tls-key are required") as refused:
        WebhookSettings(tls_cert="", tls_key="", bind="8443")
    assert refused.value.usage
