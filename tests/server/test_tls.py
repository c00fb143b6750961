"""HTTPS with --tls-cert/--tls-key, and mutual TLS with --tls-client-ca, against real TLS
clients (ssl + http.client) holding certificates made for the occasion."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("cryptography", reason="the TLS tests make certificates with cryptography")

from tests.server.certs import Pair, Pki, make_pki
from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.kube import fixture_bytes
from tests.waiting import PATIENCE

# the refusal tests need a client that still offers the versions Python deprecates
pytestmark = pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1:DeprecationWarning")
REQUEST = fixture_bytes("filter-names.request.json")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def client_context(
    ca: Path, cert: Pair | None = None, *, maximum: ssl.TLSVersion | None = None
) -> ssl.SSLContext:
    """A verifying client, as kube-scheduler's with tlsConfig.caFile (and certFile/keyFile)."""
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert.cert), str(cert.key))
    if maximum is not None:
        context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        context.maximum_version = maximum
        context.set_ciphers("DEFAULT:@SECLEVEL=0")  # let OpenSSL offer the old versions at all
    return context


@pytest.fixture(scope="module")
def https_server(serve: ServerFactory, pki: Pki) -> ExtenderServer:
    return serve(
        "--tls-cert",
        str(pki.server.cert),
        "--tls-key",
        str(pki.server.key),
        tls=client_context(pki.ca),
    )


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


def _filter(server: ExtenderServer, context: ssl.SSLContext) -> int:
    return server.request(
        "POST", "/filter", REQUEST, {"Content-Type": "application/json"}, context=context
    ).status


def test_https_serves_the_verbs_to_a_client_that_verifies_the_server(
    https_server: ExtenderServer, pki: Pki
) -> None:
    assert _filter(https_server, client_context(pki.ca)) == 200


def tls_refusal(server: ExtenderServer, context: ssl.SSLContext) -> str:
    """The TLS alert the server refuses this client with (OpenSSL's name for it), or `EOF`
    when it closes the connection without one. The client sends nothing after its side of
    the handshake: in TLS 1.3 the server checks a client certificate after the client is
    done, and its verdict is then the next thing to read (no request of ours left unread on
    the server, which would make its close a reset). A connection that stays open past
    PATIENCE is a hang, and a failure."""
    with socket.create_connection((server.host, server.port), timeout=PATIENCE) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                data = tls.recv(1)
        except ssl.SSLEOFError:
            return "EOF"
        except ssl.SSLError as e:
            return str(e.reason)
        except TimeoutError:
            pytest.fail(f"no alert and no close in {PATIENCE:.0f} s: a hang, not a refusal")
    assert data == b"", f"the server sent {data!r} instead of refusing"
    return "EOF"


def test_plain_http_gets_no_answer_from_an_https_server(
    https_server: ExtenderServer, pki: Pki
) -> None:
    """The server reads a TLS handshake and finds a request line: it closes the connection
    with the request unread, which TCP turns into a reset. No byte of a reply comes first."""
    received = b""
    with socket.create_connection((https_server.host, https_server.port), timeout=PATIENCE) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        try:
            while chunk := s.recv(4096):
                received += chunk
        except ConnectionResetError:
            pass
        except TimeoutError:
            pytest.fail(f"the connection was still open after {PATIENCE:.0f} s")
    assert received == b""
    assert _filter(https_server, client_context(pki.ca)) == 200  # and it goes on serving


def test_a_client_trusting_another_ca_refuses_the_servers_certificate(
    https_server: ExtenderServer, pki: Pki
) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        _filter(https_server, client_context(pki.other_ca))


@pytest.mark.parametrize(
    "version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["TLS 1.2", "TLS 1.3"]
)
def test_tls_1_2_and_1_3_are_accepted(
    https_server: ExtenderServer, pki: Pki, version: ssl.TLSVersion
) -> None:
    context = client_context(pki.ca)
    context.minimum_version = context.maximum_version = version
    assert _filter(https_server, context) == 200


@pytest.fixture(scope="module")
def old_tls_client_works(pki: Pki) -> Iterator[None]:
    """Proves that this machine's OpenSSL can speak TLS 1.1 at all: a local server that
    allows it accepts the same client the extender must refuse. Else the refusal would
    prove nothing."""
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        server_context.minimum_version = ssl.TLSVersion.TLSv1
        server_context.maximum_version = ssl.TLSVersion.TLSv1_1
        server_context.set_ciphers("DEFAULT:@SECLEVEL=0")
        server_context.load_cert_chain(str(pki.server.cert), str(pki.server.key))
    except (ssl.SSLError, ValueError) as e:
        pytest.skip(f"this OpenSSL cannot serve TLS 1.1: {e}")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept_one() -> None:
        conn, _ = listener.accept()
        try:
            with server_context.wrap_socket(conn, server_side=True):
                pass
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=accept_one, daemon=True)
    thread.start()
    client = client_context(pki.ca, maximum=ssl.TLSVersion.TLSv1_1)
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=PATIENCE) as raw,
            client.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            negotiated = tls.version()
    except (ssl.SSLError, OSError) as e:
        pytest.skip(f"this OpenSSL cannot speak TLS 1.1 as a client: {e}")
    finally:
        thread.join(5)
        listener.close()
    assert negotiated == "TLSv1.1"
    yield


@pytest.mark.parametrize(
    "version", [ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1], ids=["TLS 1.0", "TLS 1.1"]
)
def test_tls_1_1_and_older_are_refused(
    https_server: ExtenderServer, pki: Pki, old_tls_client_works: None, version: ssl.TLSVersion
) -> None:
    assert tls_refusal(https_server, client_context(pki.ca, maximum=version)) == (
        "TLSV1_ALERT_PROTOCOL_VERSION"
    )


# -- mutual TLS ----------------------------------------------------------------------------
def test_mtls_serves_a_client_whose_certificate_the_client_ca_signed(
    mtls_server: ExtenderServer, pki: Pki
) -> None:
    assert _filter(mtls_server, client_context(pki.ca, pki.client)) == 200


@pytest.mark.parametrize(
    ("client_cert", "version", "alert"),
    [
        (None, ssl.TLSVersion.TLSv1_3, "TLSV13_ALERT_CERTIFICATE_REQUIRED"),
        (None, ssl.TLSVersion.TLSv1_2, "SSLV3_ALERT_HANDSHAKE_FAILURE"),
        ("rogue", ssl.TLSVersion.TLSv1_3, "TLSV1_ALERT_UNKNOWN_CA"),
        ("rogue", ssl.TLSVersion.TLSv1_2, "TLSV1_ALERT_UNKNOWN_CA"),
    ],
    ids=[
        "a client without a certificate, TLS 1.3",
        "a client without a certificate, TLS 1.2",
        "a client whose certificate another CA signed, TLS 1.3",
        "a client whose certificate another CA signed, TLS 1.2",
    ],
)
def test_mtls_refuses_clients_without_a_certificate_the_client_ca_signed(
    mtls_server: ExtenderServer,
    pki: Pki,
    client_cert: str | None,
    version: ssl.TLSVersion,
    alert: str,
) -> None:
    context = client_context(pki.ca, pki.rogue_client if client_cert else None)
    context.maximum_version = version
    assert tls_refusal(mtls_server, context) == alert
    # and the server goes on serving the good client
    assert _filter(mtls_server, client_context(pki.ca, pki.client)) == 200


def test_an_https_server_without_a_client_ca_asks_for_no_client_certificate(
    https_server: ExtenderServer, pki: Pki
) -> None:
    # a client certificate from anywhere is neither needed nor checked without --tls-client-ca
    assert _filter(https_server, client_context(pki.ca, pki.rogue_client)) == 200
