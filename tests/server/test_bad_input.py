"""Bad requests get the right 4xx and a JSON body saying what is wrong, never a stack
trace, and the server keeps answering.

This module's server takes its body limit from the environment (POLICYEXT_MAX_BODY), which
also covers the POLICYEXT_* variables of `policyext serve`.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer, Reply
from tests.server.kube import fixture_bytes
from tests.server.metrics_scrape import Scrape
from tests.waiting import PATIENCE

LIMIT = 256 * 1024
JSON = "application/json"
NAMES = fixture_bytes("filter-names.request.json").rstrip()
POD = json.dumps(json.loads(NAMES)["Pod"])


@pytest.fixture(scope="module")
def server(serve: ServerFactory) -> ExtenderServer:
    return serve(env={"POLICYEXT_MAX_BODY": str(LIMIT)})


@dataclass(frozen=True)
class Bad:
    name: str
    body: bytes | None
    status: int
    says: str  # a part of the error message
    path: str = "/filter"
    method: str = "POST"
    content_type: str | None = JSON


def _args(fields: str) -> bytes:
    return ("{" + fields + "}").encode()


def _victims(victims: str, key: str = "NodeNameToVictims") -> bytes:
    return _args(f'"Pod": {POD}, "{key}": {victims}')


BAD_REQUESTS = [
    # not JSON at all
    Bad("malformed JSON", b'{"Pod" {}}', 400, "not valid JSON"),
    Bad("truncated JSON", NAMES[: len(NAMES) // 2], 400, "not valid JSON"),
    Bad("an empty body", b"", 400, "not valid JSON"),
    Bad("a NaN literal", _args('"Pod": {}, "NodeNames": [NaN]'), 400, "not valid JSON"),
    Bad("an Infinity literal", _args('"Pod": {}, "NodeNames": [Infinity]'), 400, "not valid JSON"),
    Bad(
        "a -Infinity literal",
        _args('"Pod": {"x": -Infinity}, "NodeNames": []'),
        400,
        "not valid JSON",
    ),
    Bad("invalid UTF-8", b'{"Pod": {}, "NodeNames": ["\xff\xfe"]}', 400, "not valid JSON"),
    Bad("a lone surrogate escape", b'{"Pod": {}, "NodeNames": ["\\ud800"]}', 400, "not valid JSON"),
    Bad("a byte order mark", b"\xef\xbb\xbf" + NAMES, 400, "not valid JSON"),
    Bad("100,000 nested arrays", b"[" * 100_000, 400, "not valid JSON"),
    Bad(
        "deeply nested objects in the pod",
        _args('"Pod": ' + '{"a":' * 5000 + "1" + "}" * 5000),
        400,
        "not valid JSON",
    ),
    # JSON, but not an object
    Bad("a JSON array", b"[]", 400, "must be a JSON object"),
    Bad("a JSON string", b'"Pod"', 400, "must be a JSON object"),
    Bad("a JSON null", b"null", 400, "must be a JSON object"),
    # ExtenderArgs with fields of the wrong type
    Bad("a missing Pod", _args('"NodeNames": ["general-a"]'), 400, "Pod"),
    Bad("a null Pod", _args('"Pod": null, "NodeNames": ["general-a"]'), 400, "Pod"),
    Bad(
        "Pod a string",
        _args('"Pod": "checkout", "NodeNames": ["general-a"]'),
        400,
        "Pod: expected an object",
    ),
    Bad(
        "Pod a list", _args('"Pod": [], "NodeNames": ["general-a"]'), 400, "Pod: expected an object"
    ),
    Bad(
        "NodeNames a number", _args('"Pod": {}, "NodeNames": 3'), 400, "NodeNames: expected a list"
    ),
    Bad(
        "NodeNames an object",
        _args('"Pod": {}, "NodeNames": {"a": 1}'),
        400,
        "NodeNames: expected a list",
    ),
    Bad(
        "NodeNames[3] a number",
        _args('"Pod": {}, "NodeNames": ["a", "b", "c", 4]'),
        400,
        "NodeNames[3]: expected a string",
    ),
    Bad(
        "NodeNames[0] null",
        _args('"Pod": {}, "NodeNames": [null]'),
        400,
        "NodeNames[0]: expected a string",
    ),
    Bad("Nodes a list", _args('"Pod": {}, "Nodes": []'), 400, "Nodes: expected an object"),
    Bad(
        "Nodes a string", _args('"Pod": {}, "Nodes": "general-a"'), 400, "Nodes: expected an object"
    ),
    Bad(
        "Nodes.items not a list",
        _args('"Pod": {}, "Nodes": {"items": {"a": {}}}'),
        400,
        "Nodes.items: expected a list",
    ),
    Bad(
        "an item not an object",
        _args('"Pod": {}, "Nodes": {"items": ["general-a"]}'),
        400,
        "Nodes.items[0]: expected an object",
    ),
    Bad(
        "an item without metadata",
        _args('"Pod": {}, "Nodes": {"items": [{"metadata": {"name": "a"}}, {"spec": {}}]}'),
        400,
        "Nodes.items[1].metadata: expected an object",
    ),
    Bad(
        "an item without metadata.name",
        _args('"Pod": {}, "Nodes": {"items": [{"metadata": {"uid": "u"}}]}'),
        400,
        "Nodes.items[0].metadata.name",
    ),
    Bad(
        "an item with an empty name",
        _args('"Pod": {}, "Nodes": {"items": [{"metadata": {"name": ""}}]}'),
        400,
        "Nodes.items[0].metadata.name",
    ),
    Bad(
        "an item whose name is a number",
        _args('"Pod": {}, "Nodes": {"items": [{"metadata": {"name": 7}}]}'),
        400,
        "Nodes.items[0].metadata.name",
    ),
    Bad(
        "neither Nodes nor NodeNames",
        _args('"Pod": {}, "Nodes": null, "NodeNames": null'),
        400,
        "one of Nodes or NodeNames is required",
    ),
    Bad(
        "prioritize with NodeNames a string",
        _args('"Pod": {}, "NodeNames": "a"'),
        400,
        "NodeNames",
        path="/prioritize",
    ),
    Bad(
        "explain with Pod a number", _args('"Pod": 1, "NodeNames": []'), 400, "Pod", path="/explain"
    ),
    # ExtenderBindingArgs
    Bad(
        "bind with PodName a number",
        _args('"PodName": 1, "PodNamespace": "shop", "PodUID": "u", "Node": "a"'),
        400,
        "PodName: expected a string",
        path="/bind",
    ),
    Bad(
        "bind without Node",
        _args('"PodName": "p", "PodNamespace": "shop", "PodUID": "u"'),
        400,
        "Node: expected a string",
        path="/bind",
    ),
    Bad(
        "bind with an empty Node",
        _args('"PodName": "p", "PodNamespace": "shop", "PodUID": "u", "Node": ""'),
        400,
        "Node: must not be empty",
        path="/bind",
    ),
    Bad("bind with a JSON array", b"[]", 400, "must be a JSON object", path="/bind"),
    # ExtenderPreemptionArgs
    Bad("preempt without Pod", _args('"NodeNameToVictims": {}'), 400, "Pod", path="/preempt"),
    Bad(
        "NodeNameToVictims a list",
        _victims("[]"),
        400,
        "NodeNameToVictims: expected an object",
        path="/preempt",
    ),
    Bad(
        "a victims entry a string",
        _victims('{"general-a": "x"}'),
        400,
        "NodeNameToVictims.general-a: expected an object",
        path="/preempt",
    ),
    Bad(
        "Pods not a list",
        _victims('{"general-a": {"Pods": {"p": {}}, "NumPDBViolations": 0}}'),
        400,
        "NodeNameToVictims.general-a.Pods: expected a list",
        path="/preempt",
    ),
    Bad(
        "a victim pod a string",
        _victims('{"general-a": {"Pods": ["p"], "NumPDBViolations": 0}}'),
        400,
        "NodeNameToVictims.general-a.Pods[0]: expected an object",
        path="/preempt",
    ),
    Bad(
        "NumPDBViolations a string",
        _victims('{"general-a": {"Pods": [], "NumPDBViolations": "0"}}'),
        400,
        "NumPDBViolations: expected an integer",
        path="/preempt",
    ),
    Bad(
        "NumPDBViolations a float",
        _victims('{"general-a": {"Pods": [], "NumPDBViolations": 1.5}}'),
        400,
        "NumPDBViolations: expected an integer",
        path="/preempt",
    ),
    Bad(
        "NumPDBViolations a bool",
        _victims('{"general-a": {"Pods": [], "NumPDBViolations": true}}'),
        400,
        "NumPDBViolations: expected an integer",
        path="/preempt",
    ),
    Bad(
        "a meta victim without UID",
        _victims('{"general-a": {"Pods": [{}], "NumPDBViolations": 0}}', "NodeNameToMetaVictims"),
        400,
        "NodeNameToMetaVictims.general-a.Pods[0].UID: expected a string",
        path="/preempt",
    ),
    Bad(
        "a meta victim UID a number",
        _victims(
            '{"general-a": {"Pods": [{"UID": 5}], "NumPDBViolations": 0}}', "NodeNameToMetaVictims"
        ),
        400,
        "UID: expected a string",
        path="/preempt",
    ),
    # HTTP-level mistakes
    Bad(
        "a body over the limit",
        NAMES[:-1] + b" " * (LIMIT + 1 - len(NAMES)) + b"}",
        413,
        f"limit of {LIMIT} bytes",
    ),
    Bad("Content-Type text/plain", NAMES, 415, "got text/plain", content_type="text/plain"),
    Bad(
        "a form body",
        b"Pod=x",
        415,
        "got application/x-www-form-urlencoded",
        content_type="application/x-www-form-urlencoded",
    ),
    Bad(
        "a YAML body",
        b"Pod: {}",
        415,
        "expected Content-Type application/json",
        content_type="application/yaml",
    ),
    Bad("GET on a verb", None, 405, "method GET is not allowed", method="GET"),
    Bad("PUT on a verb", NAMES, 405, "method PUT is not allowed", method="PUT"),
    Bad("POST on /healthz", b"{}", 405, "method POST is not allowed", path="/healthz"),
    Bad(
        "DELETE on /policies",
        None,
        405,
        "method DELETE is not allowed",
        path="/policies",
        method="DELETE",
    ),
    Bad("GET on /explain", None, 405, "method GET is not allowed", path="/explain", method="GET"),
    Bad("an unknown path", NAMES, 404, "no such endpoint", path="/filters"),
    Bad("a verb with a trailing slash", NAMES, 404, "no such endpoint", path="/filter/"),
    Bad(
        "a verb below a prefix not configured",
        NAMES,
        404,
        "no such endpoint",
        path="/scheduler/filter",
    ),
    Bad("the root path", None, 404, "no such endpoint", path="/", method="GET"),
]


def _send(server: ExtenderServer, bad: Bad) -> Reply:
    headers = {} if bad.content_type is None else {"Content-Type": bad.content_type}
    return server.request(bad.method, bad.path, bad.body, headers)


def _tracebacks(server: ExtenderServer) -> int:
    return server.stderr_text().count("Traceback")


def _assert_json_error(reply: Reply, status: int, says: str) -> None:
    assert reply.status == status, reply.body
    assert reply.content_type == "application/json"
    error = reply.json()
    assert sorted(error) == ["error", "status"]
    assert error["status"] == status
    assert says in error["error"]
    assert "Traceback" not in error["error"]
    assert 'File "' not in error["error"]


@pytest.mark.parametrize("bad", BAD_REQUESTS, ids=[b.name for b in BAD_REQUESTS])
def test_a_bad_request_gets_its_4xx_and_a_json_error_and_the_server_keeps_serving(
    server: ExtenderServer, bad: Bad
) -> None:
    before = _tracebacks(server)
    _assert_json_error(_send(server, bad), bad.status, bad.says)
    assert server.get("/healthz").status == 200
    assert _tracebacks(server) == before


GOOD_CONTENT_TYPES = [
    None,
    "application/json",
    "application/json; charset=utf-8",
    "Application/JSON",
]


@pytest.mark.parametrize("content_type", GOOD_CONTENT_TYPES, ids=str)
def test_json_is_accepted_with_or_without_parameters_or_with_no_content_type_at_all(
    server: ExtenderServer, content_type: str | None
) -> None:
    assert server.post("/filter", NAMES, content_type).status == 200


def _padded(size: int) -> bytes:
    return NAMES[:-1] + b" " * (size - len(NAMES)) + b"}"


@pytest.mark.parametrize(("size", "status"), [(LIMIT - 1, 200), (LIMIT, 200), (LIMIT + 1, 413)])
def test_the_body_limit_admits_exactly_max_body_bytes(
    server: ExtenderServer, size: int, status: int
) -> None:
    body = _padded(size)
    assert len(body) == size
    assert server.post("/filter", body).status == status


@pytest.mark.parametrize(("size", "status"), [(LIMIT, 200), (LIMIT + 1, 413)])
def test_the_body_limit_holds_for_the_next_request_of_a_kept_alive_connection(
    server: ExtenderServer, size: int, status: int
) -> None:
    """A plain call that arrives whole is answered without framing it first: the limit is
    the same there, and so is the refusal a new connection gets."""
    fresh = server.post("/filter", _padded(size))
    conn = server.connection()
    try:
        replies = []
        for body in (NAMES, _padded(size)):
            conn.request("POST", "/filter", body=body, headers={"Content-Type": JSON})
            response = conn.getresponse()
            replies.append((response.status, response.read()))
    finally:
        conn.close()
    assert replies[0][0] == 200
    assert replies[1] == (status, fresh.body) == (fresh.status, fresh.body)


def _chunks(body: bytes, size: int = 16 * 1024) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def test_a_chunked_body_within_the_limit_is_answered(server: ExtenderServer) -> None:
    """One byte under the limit: Werkzeug's stream refuses a chunked body of exactly the
    limit (it cannot tell it from a longer one), where a Content-Length one is accepted."""
    conn = server.connection()
    try:
        conn.request(
            "POST",
            "/filter",
            body=_chunks(_padded(LIMIT - 1)),
            headers={"Content-Type": JSON, "Transfer-Encoding": "chunked"},
            encode_chunked=True,
        )
        response = conn.getresponse()
        assert response.status == 200
        assert json.loads(response.read())["Error"] == ""
    finally:
        conn.close()


def _chunked_head() -> bytes:
    return (
        f"POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {JSON}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()


def test_a_chunked_body_is_refused_413_when_a_chunk_would_take_it_past_the_limit(
    server: ExtenderServer,
) -> None:
    """The client sends chunks up to the limit, then announces one byte more and waits: the
    server has read every byte sent when it refuses, so the 413 reaches the client (a
    client still sending when the server closes gets a reset instead: see below)."""
    body = _padded(LIMIT)
    request = _chunked_head() + b"".join(
        b"%x\r\n%b\r\n" % (len(chunk), chunk) for chunk in _chunks(body)
    )
    with socket.create_connection((server.host, server.port), timeout=PATIENCE) as sock:
        sock.sendall(request + b"1\r\n")
        response = http.client.HTTPResponse(sock)
        response.begin()
        reply = response.read()
        assert response.status == 413
        assert json.loads(reply) == {
            "error": f"the body is larger than the limit of {LIMIT} bytes",
            "status": 413,
        }
        assert response.getheader("Connection") == "close"
        assert sock.recv(1) == b"", "the server closes the connection after the refusal"
    assert server.request("GET", "/healthz").status == 200


def test_a_client_streaming_a_chunked_body_past_the_limit_is_refused_before_the_application(
    server: ExtenderServer,
) -> None:
    """Twice the limit, sent without waiting: the server answers 413 and closes as soon as
    the limit is passed, while the client is still sending, so the client may see the 413
    or a reset (TCP resets a connection closed with bytes unread). What is certain: the
    refusal is counted once and the body never reaches the application."""
    before = Scrape(server.get("/metrics").body.decode())
    conn = server.connection()
    try:
        conn.request(
            "POST",
            "/filter",
            body=_chunks(_padded(LIMIT * 2)),
            headers={"Content-Type": JSON, "Transfer-Encoding": "chunked"},
            encode_chunked=True,
        )
        response = conn.getresponse()
        response.read()
        assert response.status == 413
    except (BrokenPipeError, ConnectionResetError):
        pass  # the reset described above; the counts below say what the server did
    finally:
        conn.close()
    after = Scrape(server.get("/metrics").body.decode())
    refused = "policyext_refused_requests_total"
    assert after.value(refused, {"code": "413"}) == before.value(refused, {"code": "413"}) + 1
    answered = "policyext_requests_total"
    assert after.total(answered, {"verb": "filter"}) == before.total(answered, {"verb": "filter"})


def test_a_405_reply_names_the_allowed_methods_in_allow(server: ExtenderServer) -> None:
    reply = server.request("GET", "/filter")
    assert reply.status == 405
    assert "POST" in reply.headers.get("allow", "")


# Objects inside a well-formed request are the Kubernetes API's business; the scheduler
# never sends them malformed, but a malformed one must not become a 500.
MALFORMED_OBJECTS = [
    (
        "a pod whose metadata is a string",
        "/filter",
        _args('"Pod": {"metadata": "x"}, "NodeNames": ["general-a"]'),
        None,
    ),
    (
        "a pod whose labels are a list",
        "/filter",
        _args('"Pod": {"metadata": {"labels": ["critical"]}}, "NodeNames": ["general-a"]'),
        None,
    ),
    (
        "a pod whose requests are numbers",
        "/filter",
        _args(
            '"Pod": {"spec": {"containers": [{"resources": {"requests": {"cpu": 2}}}]}}, "NodeNames": ["general-a"]'
        ),
        None,
    ),
    (
        "a pod whose requests are not quantities",
        "/prioritize",
        _args(
            '"Pod": {"spec": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}}, "NodeNames": ["general-a", "general-b"]'
        ),
        None,
    ),
    (
        "a node whose allocatable is a string",
        "/prioritize",
        _args(
            '"Pod": {}, "Nodes": {"items": [{"metadata": {"name": "n"}, "status": {"allocatable": "x"}}]}'
        ),
        None,
    ),
    (
        "a pod whose containers are a number",
        "/filter",
        _args('"Pod": {"spec": {"containers": 5}}, "NodeNames": ["general-a"]'),
        None,
    ),
    (
        "a pod whose initContainers are a number",
        "/filter",
        _args('"Pod": {"spec": {"initContainers": 5}}, "NodeNames": ["general-a"]'),
        None,
    ),
    (
        "a victim whose labels are a string",
        "/preempt",
        _victims(
            '{"general-a": {"Pods": [{"metadata": {"uid": "u", "labels": "ab"}}], "NumPDBViolations": 0}}'
        ),
        None,
    ),
    (
        "a victim whose namespace is a list",
        "/preempt",
        _victims(
            '{"general-a": {"Pods": [{"metadata": {"uid": "u", "namespace": []}}], "NumPDBViolations": 0}}'
        ),
        None,
    ),
]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        pytest.param(
            path, body, id=name, marks=[pytest.mark.xfail(strict=True, reason=bug)] if bug else []
        )
        for name, path, body, bug in MALFORMED_OBJECTS
    ],
)
def test_a_malformed_object_inside_a_well_formed_request_is_never_a_server_error(
    server: ExtenderServer, path: str, body: bytes
) -> None:
    before = _tracebacks(server)
    reply = server.post(path, body)
    assert reply.status in (200, 400), reply.body
    assert _tracebacks(server) == before
