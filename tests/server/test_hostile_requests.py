"""Hostile requests through a real gunicorn server: each gets its 4xx and a JSON error (or
the protocol's answer, where it has one), and the same worker process goes on serving:
no crash, no restart, no traceback in the log."""

from __future__ import annotations

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.hostile import HOSTILE, MAX_BODY, Hostile, send, worker_pids


@pytest.fixture(scope="module")
def server(serve: ServerFactory) -> ExtenderServer:
    return serve(env={"POLICYEXT_MAX_BODY": str(MAX_BODY)})


@pytest.mark.parametrize("hostile", HOSTILE, ids=[h.name for h in HOSTILE])
def test_a_hostile_request_gets_its_answer_and_the_same_worker_keeps_serving(
    server: ExtenderServer, hostile: Hostile
) -> None:
    workers = worker_pids(server)
    tracebacks = server.stderr_text().count("Traceback")
    reply = send(server, hostile)
    assert reply.status == hostile.status, reply.body[:300]
    assert reply.content_type == "application/json"
    document = reply.json()
    if hostile.status >= 400:
        assert document == {"error": document["error"], "status": hostile.status}
        assert hostile.says in document["error"]
    else:
        assert hostile.check is not None and hostile.check(document)
    assert server.get("/healthz").status == 200
    assert worker_pids(server) == workers
    assert server.stderr_text().count("Traceback") == tracebacks
