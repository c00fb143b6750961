"""Who can call what: with --ops-bind the verbs and the operations endpoints have a
listener each, and each refuses the other's endpoints saying where they are; with
--introspection off, /explain and /policies answer 404; /readyz says categories only."""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.kube import fixture_bytes

FILTER = fixture_bytes("filter-names.request.json")
JSON = {"Content-Type": "application/json"}
VERBS = [
    ("POST", "/filter", FILTER),
    ("POST", "/prioritize", FILTER),
    ("POST", "/preempt", b'{"Pod": {}, "NodeNameToMetaVictims": {}}'),
    ("POST", "/bind", b'{"PodName": "p", "PodNamespace": "n", "PodUID": "u", "Node": "x"}'),
]
OPERATIONS = [
    ("GET", "/healthz", None),
    ("GET", "/readyz", None),
    ("GET", "/metrics", None),
    ("GET", "/policies", None),
    ("POST", "/explain", FILTER),
]


@pytest.fixture(scope="module")
def split(serve: ServerFactory) -> ExtenderServer:
    """The verbs on --bind, the operations endpoints on --ops-bind."""
    return serve(ops=True)


@pytest.fixture(scope="module")
def closed(serve: ServerFactory) -> ExtenderServer:
    return serve("--introspection", "off")


@pytest.mark.parametrize(("method", "path", "body"), OPERATIONS, ids=[p for _, p, _ in OPERATIONS])
def test_the_verbs_listener_refuses_the_operations_endpoints_and_says_where_they_are(
    split: ExtenderServer, method: str, path: str, body: bytes | None
) -> None:
    reply = split.request(method, path, body, JSON)
    assert reply.status == 404
    assert reply.content_type == "application/json"
    assert reply.json() == {
        "error": f"{path} is served on the operations listener "
        f"(127.0.0.1:{split.ops_port}, --ops-bind), not on this one",
        "status": 404,
    }


@pytest.mark.parametrize(("method", "path", "body"), VERBS, ids=[p for _, p, _ in VERBS])
def test_the_operations_listener_refuses_the_verbs(
    split: ExtenderServer, method: str, path: str, body: bytes
) -> None:
    # twice: the first request of a connection and a later one take different paths in
    # the worker (a plain call is looked at as it arrives)
    conn = split.connection(port=split.ops_port)
    try:
        for _ in range(2):
            conn.request(method, path, body=body, headers=JSON)
            response = conn.getresponse()
            assert response.status == 404
            assert json.loads(response.read()) == {
                "error": f"{path} is served on the verbs listener (--bind), not on the "
                "operations listener",
                "status": 404,
            }
    finally:
        conn.close()


def test_each_listener_answers_its_own_endpoints(
    split: ExtenderServer, demo_server: ExtenderServer
) -> None:
    assert split.post("/filter", FILTER).body == demo_server.post("/filter", FILTER).body
    for method, path, body in OPERATIONS:
        reply = split.request(method, path, body, JSON, port=split.ops_port)
        assert reply.status == 200, (path, reply.body)
    assert split.request("GET", "/nowhere", port=split.ops_port).json() == {
        "error": "no such endpoint",
        "status": 404,
    }


@pytest.mark.parametrize(("method", "path"), [("POST", "/explain"), ("GET", "/policies")])
def test_introspection_off_answers_404_saying_so(
    closed: ExtenderServer, method: str, path: str
) -> None:
    reply = closed.request(method, path, FILTER if method == "POST" else None, JSON)
    assert reply.status == 404
    assert reply.json() == {"error": f"{path} is turned off (--introspection off)", "status": 404}


def test_introspection_off_leaves_the_verbs_and_probes_alone(closed: ExtenderServer) -> None:
    assert closed.post("/filter", FILTER).status == 200
    assert closed.get("/healthz").status == closed.get("/readyz").status == 200
    assert closed.get("/metrics").status == 200


def test_readyz_names_no_policy_and_no_file(demo_server: ExtenderServer) -> None:
    body = demo_server.get("/readyz").body.decode()
    listing = demo_server.get("/policies").json()
    for policy in listing["policies"]:
        assert policy["name"] not in body
    assert "rules" not in body and ".yaml" not in body


def test_policies_says_whether_the_node_source_is_synced(demo_server: ExtenderServer) -> None:
    assert demo_server.get("/policies").json()["nodeSource"] == {"synced": True, "problem": ""}
