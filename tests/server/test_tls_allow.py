"""--tls-client-allow: of the client certificates the CA signed, only those naming an
allowed identity (subject CN, DNS or URI SAN) may call; the others are answered 403. With
--ops-bind the operations listener asks for no certificate (the kubelet's probes have
none), and keeps /explain and /policies for allowed clients."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("cryptography", reason="the TLS tests make certificates with cryptography")

from tests.server.certs import SPIFFE_ID, Pki
from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.kube import fixture_bytes
from tests.server.test_tls import client_context, pki  # noqa: F401 - the module's PKI
from tests.waiting import PATIENCE

FILTER = fixture_bytes("filter-names.request.json")
JSON = {"Content-Type": "application/json"}


def _tls_flags(pki: Pki) -> list[str]:  # noqa: F811 - the fixture's value
    return [
        "--tls-cert",
        str(pki.server.cert),
        "--tls-key",
        str(pki.server.key),
        "--tls-client-ca",
        str(pki.ca),
        "--tls-client-allow",
        f"kube-scheduler,{SPIFFE_ID}",
    ]


@pytest.fixture(scope="module")
def allowing(serve: ServerFactory, pki: Pki) -> ExtenderServer:  # noqa: F811
    return serve(*_tls_flags(pki), tls=client_context(pki.ca, pki.client))


@pytest.fixture(scope="module")
def split(serve: ServerFactory, pki: Pki) -> ExtenderServer:  # noqa: F811
    return serve(*_tls_flags(pki), tls=client_context(pki.ca, pki.client), ops=True)


def test_a_client_certificate_with_an_allowed_common_name_may_call(
    allowing: ExtenderServer, demo_server: ExtenderServer
) -> None:
    reply = allowing.request("POST", "/filter", FILTER, JSON)
    assert (reply.status, reply.body) == (200, demo_server.post("/filter", FILTER).body)


def test_a_client_certificate_with_an_allowed_uri_san_may_call(
    allowing: ExtenderServer,
    pki: Pki,  # noqa: F811
) -> None:
    context = client_context(pki.ca, pki.uri_client)
    assert allowing.request("POST", "/filter", FILTER, JSON, context=context).status == 200


def test_another_certificate_of_the_same_ca_is_refused_with_403(
    allowing: ExtenderServer,
    pki: Pki,  # noqa: F811
) -> None:
    context = client_context(pki.ca, pki.other_client)
    for method, path, body in (("POST", "/filter", FILTER), ("GET", "/healthz", None)):
        reply = allowing.request(method, path, body, JSON, context=context)
        assert reply.status == 403
        assert reply.json() == {
            "error": "the client certificate's names (other-client) are not in --tls-client-allow",
            "status": 403,
        }
    assert allowing.request("GET", "/healthz").status == 200  # the allowed one still is


def test_the_server_warns_when_any_certificate_of_the_ca_may_call(
    serve: ServerFactory,
    pki: Pki,  # noqa: F811
) -> None:
    flags = _tls_flags(pki)[:-2]  # without --tls-client-allow
    server = serve(*flags, tls=client_context(pki.ca, pki.other_client))
    assert server.request("POST", "/filter", FILTER, JSON).status == 200
    assert "--tls-client-ca without --tls-client-allow" in server.stderr_text()
    assert "--tls-client-ca without --tls-client-allow" not in _stderr_of(serve, pki)


def _stderr_of(serve: ServerFactory, pki: Pki) -> str:  # noqa: F811
    return serve(*_tls_flags(pki), tls=client_context(pki.ca, pki.client)).stderr_text()


def test_the_operations_listener_answers_probes_without_a_client_certificate(
    split: ExtenderServer,
    pki: Pki,  # noqa: F811
) -> None:
    anonymous = client_context(pki.ca)
    for path in ("/healthz", "/readyz", "/metrics"):
        reply = split.request("GET", path, context=anonymous, port=split.ops_port)
        assert reply.status == 200, path


@pytest.mark.parametrize("who", ["no certificate", "another certificate of the CA"])
def test_the_operations_listener_keeps_introspection_for_allowed_clients(
    split: ExtenderServer,
    pki: Pki,  # noqa: F811
    who: str,
) -> None:
    context = client_context(pki.ca, None if who == "no certificate" else pki.other_client)
    reply = split.request("GET", "/policies", context=context, port=split.ops_port)
    assert reply.status == 403
    assert reply.json() == {
        "error": "/policies needs an accepted client certificate (--tls-client-ca, "
        "--tls-client-allow)",
        "status": 403,
    }
    allowed = split.request("GET", "/policies", port=split.ops_port)
    assert allowed.status == 200


def test_without_an_allow_list_the_operations_listener_keeps_introspection_for_the_ca(
    serve: ServerFactory,
    pki: Pki,  # noqa: F811
) -> None:
    server = serve(*_tls_flags(pki)[:-2], tls=client_context(pki.ca, pki.other_client), ops=True)
    anonymous = client_context(pki.ca)
    assert server.request("GET", "/healthz", context=anonymous, port=server.ops_port).status == 200
    assert server.request("GET", "/policies", context=anonymous, port=server.ops_port).status == 403
    assert server.request("GET", "/policies", port=server.ops_port).status == 200


def test_connections_that_never_begin_their_handshake_make_room_at_the_cap(
    serve: ServerFactory,
    pki: Pki,  # noqa: F811
) -> None:
    server = serve(
        *_tls_flags(pki), "--max-connections", "4", tls=client_context(pki.ca, pki.client)
    )
    silent = [
        socket.create_connection((server.host, server.port), timeout=PATIENCE) for _ in range(8)
    ]
    try:
        reply = server.request("POST", "/filter", FILTER, JSON)
        assert reply.status == 200
        # the oldest silent ones were closed to make room
        assert silent[0].recv(1) == b""
    finally:
        for conn in silent:
            conn.close()
