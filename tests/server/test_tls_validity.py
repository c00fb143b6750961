"""Certificates outside their validity period are refused on both sides: a verifying
client refuses a server whose certificate has expired or is not valid yet, and a server
with --tls-client-ca refuses such a client certificate (and goes on serving good ones).
The other refusals (wrong CA both ways, no client certificate, TLS 1.0/1.1) are in
test_tls.py."""

from __future__ import annotations

import ssl

import pytest

pytest.importorskip("cryptography", reason="the TLS tests make certificates with cryptography")

from tests.server.certs import Pair, Pki, make_pki
from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.test_tls import REQUEST, client_context, tls_refusal


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _filter(server: ExtenderServer, context: ssl.SSLContext) -> int:
    return server.request(
        "POST", "/filter", REQUEST, {"Content-Type": "application/json"}, context=context
    ).status


def _https(serve: ServerFactory, cert: Pair) -> ExtenderServer:
    # started over plain readiness checks: the harness's own client would refuse the
    # certificate, which is what the tests below prove
    return serve(
        "--tls-cert",
        str(cert.cert),
        "--tls-key",
        str(cert.key),
        tls=_unverified(),
    )


def _unverified() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@pytest.mark.parametrize(
    "which", ["expired_server", "future_server"], ids=["expired", "not yet valid"]
)
def test_a_client_refuses_a_server_certificate_outside_its_validity(
    serve: ServerFactory, pki: Pki, which: str
) -> None:
    server = _https(serve, getattr(pki, which))
    with pytest.raises(
        ssl.SSLCertVerificationError, match=r"certificate (has expired|is not yet valid)"
    ):
        _filter(server, client_context(pki.ca))
    server.stop()


@pytest.fixture(scope="module")
def mtls_server(serve: ServerFactory, pki: Pki) -> ExtenderServer:
    return serve(
        "--tls-cert",
        str(pki.server.cert),
        "--tls-key",
        str(pki.server.key),
        "--tls-client-ca",
        str(pki.ca),
        tls=client_context(pki.ca, pki.client),
    )


@pytest.mark.parametrize(
    ("which", "alert"),
    [
        ("expired_client", "SSLV3_ALERT_CERTIFICATE_EXPIRED"),
        ("future_client", "SSLV3_ALERT_BAD_CERTIFICATE"),
        ("rogue_client", "TLSV1_ALERT_UNKNOWN_CA"),
        (None, "TLSV13_ALERT_CERTIFICATE_REQUIRED"),
    ],
    ids=["expired", "not yet valid", "signed by another CA", "no client certificate"],
)
def test_mtls_refuses_a_client_certificate_that_is_not_currently_valid(
    mtls_server: ExtenderServer, pki: Pki, which: str | None, alert: str
) -> None:
    cert = getattr(pki, which) if which else None
    assert tls_refusal(mtls_server, client_context(pki.ca, cert)) == alert
    assert _filter(mtls_server, client_context(pki.ca, pki.client)) == 200
