"""kube-scheduler gives up on a slow extender after its httpTimeout and closes the
connection: the server finishes the work, drops the reply without a fuss, and keeps serving
every later request — same worker, no stack trace."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.kube import fixture_bytes

NUMBERS = ", ".join(str(i) for i in range(200))
# 40,000 steps per node: about 0.1 s a node, far beyond the client's patience below; it
# reads `now`, so that no result is kept for the next request (each one is slow)
SLOW = f"""\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: slow
spec:
  filters:
    - name: slow
      expression: "[{NUMBERS}].all(i, [{NUMBERS}].all(j, node.metadata.name.size() + i + j + now.getSeconds() * 0 >= 0))"
"""
CLIENT_TIMEOUT = 0.05


@pytest.fixture(scope="module")
def slow_server(serve: ServerFactory, tmp_path_factory: pytest.TempPathFactory) -> ExtenderServer:
    rules: Path = tmp_path_factory.mktemp("slow-rules")
    (rules / "slow.yaml").write_text(SLOW, encoding="utf-8")
    return serve(rules=[rules])


def _abandoned_request(server: ExtenderServer, body: bytes) -> None:
    """Send a filter request and hang up before the answer, as a timed-out client does."""
    with socket.create_connection((server.host, server.port), timeout=CLIENT_TIMEOUT) as conn:
        head = (
            f"POST /filter HTTP/1.1\r\nHost: {server.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        conn.sendall(head.encode() + body)
        with pytest.raises(TimeoutError):
            conn.recv(1)


@pytest.mark.parametrize("abandoned", [1, 5], ids=["one request", "five in a row"])
def test_a_client_that_gives_up_mid_request_leaves_the_server_serving(
    slow_server: ExtenderServer, abandoned: int
) -> None:
    body = fixture_bytes("filter-nodes.request.json")
    before = slow_server.get("/healthz")
    for _ in range(abandoned):
        _abandoned_request(slow_server, body)
    reply = slow_server.post("/filter", body)
    assert reply.status == 200
    assert reply.json()["Error"] == ""
    assert slow_server.get("/healthz").status == before.status == 200
    time.sleep(0.2)
    log = slow_server.stderr_text()
    assert "Traceback" not in log
    assert log.count("Booting worker") == 1, "the same worker, never restarted"
