"""kube-scheduler gives up on a slow extender after its httpTimeout and closes the
connection: the server finishes the work, drops the reply without a fuss, and keeps serving
every later request — same worker, no stack trace."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.kube import fixture_bytes
from tests.waiting import PATIENCE

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
CLIENT_TIMEOUT = 0.05  # the client's patience (kube-scheduler's httpTimeout), not a wait
# the abandoning clients connect from an address of their own (any 127.x.y.z is loopback
# on Linux), so that the worker's debug line for a connection it closes (the client's
# close, seen by a read after the reply, or a reply that could not be sent) is told apart
# from the other connections', which close whenever their clients do
GIVING_UP = "127.0.0.2"
LEFT = f"DEBUG policyext.server: closed the connection from {GIVING_UP}: "


@pytest.fixture(scope="module")
def slow_server(serve: ServerFactory, tmp_path_factory: pytest.TempPathFactory) -> ExtenderServer:
    rules: Path = tmp_path_factory.mktemp("slow-rules")
    (rules / "slow.yaml").write_text(SLOW, encoding="utf-8")
    return serve("--log-level", "debug", rules=[rules])


def _log(server: ExtenderServer, until: Callable[[str], bool]) -> str:
    """The server's log, read again until `until` holds (PATIENCE at most: then it is
    returned as it is, for the test to say what is missing)."""
    deadline = time.monotonic() + PATIENCE
    log = server.stderr_text()
    while not until(log) and time.monotonic() < deadline:
        time.sleep(0.05)
        log = server.stderr_text()
    return log


def _filter_calls(server: ExtenderServer) -> int:
    """The filter calls in the decision log: one line each, written once the call's reply
    is sent or could not be (the per-node lines have no `ms`)."""
    calls = 0
    for line in server.stdout_path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        calls += entry.get("verb") == "filter" and "ms" in entry
    return calls


def _abandoned_request(server: ExtenderServer, body: bytes) -> None:
    """Send a filter request and hang up before the answer, as a timed-out client does."""
    address = (server.host, server.port)
    with socket.create_connection(address, CLIENT_TIMEOUT, (GIVING_UP, 0)) as conn:
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
    left = slow_server.stderr_text().count(LEFT)
    calls = _filter_calls(slow_server)
    for _ in range(abandoned):
        _abandoned_request(slow_server, body)
    # the server finished each abandoned call (its decision line) and saw its client gone
    # (the close, or a reply that could not be sent, whose line comes just before)
    wanted = {"closes": left + abandoned, "calls": calls + abandoned}

    def seen(log: str) -> dict[str, int]:
        return {"closes": log.count(LEFT), "calls": _filter_calls(slow_server)}

    log = _log(slow_server, lambda log: all(seen(log)[k] >= n for k, n in wanted.items()))
    assert seen(log) == wanted
    assert "Traceback" not in log
    reply = slow_server.post("/filter", body)
    assert reply.status == 200
    assert reply.json()["Error"] == ""
    assert slow_server.get("/healthz").status == before.status == 200
    log = slow_server.stderr_text()
    assert "Traceback" not in log
    assert log.count("Booting worker") == 1, "the same worker, never restarted"
