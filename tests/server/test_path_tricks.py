"""Paths written to slip past the routing reach a verb exactly when they mean its path,
and are otherwise a JSON 404 (or gunicorn's JSON 400): never a 500, never a traceback.

Sent byte for byte on raw sockets: an HTTP client would normalise most of them."""

from __future__ import annotations

import json
import socket

import pytest

from tests.server.harness import ExtenderServer
from tests.server.kube import fixture_bytes
from tests.server.test_slow_clients import Replies
from tests.waiting import PATIENCE

NAMES = fixture_bytes("filter-names.request.json").rstrip()
FILTER = 200  # answered as /filter
TRICKS = [
    ("//filter", FILTER),  # an empty first segment: the same path
    ("/filter?x=1", FILTER),  # a query string
    ("/%66ilter", FILTER),  # a percent-encoded letter: the same path once decoded
    ("http://x/filter", FILTER),  # the absolute form (RFC 9112 3.2.2)
    ("/filter/", 404),
    ("/./filter", 404),
    ("/a/../filter", 404),
    ("/../filter", 404),
    ("/FILTER", 404),
    ("/filter%00", 404),
    ("/filter%2F", 404),
    ("/filter;x", 404),
    ("*", 400),
]


@pytest.mark.parametrize(("path", "status"), TRICKS, ids=[p for p, _ in TRICKS])
def test_a_path_trick_is_the_verb_or_a_json_refusal(
    demo_server: ExtenderServer, path: str, status: int
) -> None:
    tracebacks = demo_server.stderr_text().count("Traceback")
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(NAMES)}\r\n\r\n"
    )
    with socket.create_connection((demo_server.host, demo_server.port), timeout=PATIENCE) as sock:
        sock.sendall(head.encode() + NAMES)
        got, headers, body = Replies(sock).next()
    assert got == status, body
    assert headers["content-type"] == "application/json"
    reply = json.loads(body)
    if status == FILTER:
        assert reply == demo_server.post("/filter", NAMES).json()
    else:
        assert reply["status"] == status and reply["error"]
    assert demo_server.stderr_text().count("Traceback") == tracebacks
