"""Leaving without refusing a call (server/draining.py): on SIGTERM the server turns
unready at once, keeps accepting and answering for --shutdown-delay seconds (closing each
connection after its answer, so that a client reconnects through its load balancer), then
stops; a delay of 0 is gunicorn's own SIGTERM."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import RULES, ExtenderServer, Reply, policyext_command, send
from tests.server.kube import fixture_bytes
from tests.waiting import PATIENCE, eventually

FILTER = fixture_bytes("filter-names.request.json")
JSON = {"Content-Type": "application/json"}
# long enough never to end during a test: the tests end it with SIGINT
FOREVER = "600"


def readyz(server: ExtenderServer) -> Reply:
    return server.request("GET", "/readyz", port=server.probe_port)


def filter_call(conn: http.client.HTTPConnection) -> Reply:
    return send(conn, "POST", "/filter", FILTER, JSON)


@pytest.fixture
def draining(serve: ServerFactory) -> Iterator[ExtenderServer]:
    """Two workers behind --ops-bind, sent SIGTERM with a window that outlasts the test,
    then stopped with SIGINT (at once)."""
    server = serve("--workers", "2", "--shutdown-delay", FOREVER, ops=True)
    yield server
    if server.process.poll() is None:
        os.kill(server.process.pid, signal.SIGINT)
        server.process.wait(PATIENCE)


def wait_unready(server: ExtenderServer) -> None:
    eventually(lambda: readyz(server).status == 503)


def test_on_sigterm_readyz_answers_503_in_every_worker_saying_it_drains(
    draining: ExtenderServer,
) -> None:
    assert readyz(draining).status == 200
    os.kill(draining.process.pid, signal.SIGTERM)  # the arbiter only, as the kubelet does
    wait_unready(draining)
    # a connection each: the two workers take turns accepting them
    replies = [readyz(draining) for _ in range(20)]
    assert {r.status for r in replies} == {503}
    assert {r.json()["checks"]["shutdown"] for r in replies} == {"draining"}


def test_while_draining_calls_on_kept_connections_and_new_ones_are_answered_then_closed(
    draining: ExtenderServer,
) -> None:
    kept = draining.connection()
    before = filter_call(kept)
    assert before.status == 200
    assert before.headers.get("connection", "keep-alive").lower() != "close"
    os.kill(draining.process.pid, signal.SIGTERM)
    wait_unready(draining)
    during = filter_call(kept)
    assert during.status == 200
    assert during.json() == before.json()
    assert during.headers["connection"].lower() == "close"
    for _ in range(10):
        conn = draining.connection()
        try:
            reply = filter_call(conn)
        finally:
            conn.close()
        assert reply.status == 200
        assert reply.headers["connection"].lower() == "close"
        assert reply.json() == before.json()


def test_a_sigterm_to_the_whole_process_group_drains_the_workers_too(
    draining: ExtenderServer,
) -> None:
    os.killpg(draining.process.pid, signal.SIGTERM)  # as systemd signals a service's cgroup
    wait_unready(draining)
    conn = draining.connection()
    try:
        assert filter_call(conn).status == 200
    finally:
        conn.close()
    assert draining.process.poll() is None


def test_the_drain_window_ends_by_itself_and_the_server_exits_0(serve: ServerFactory) -> None:
    server = serve("--shutdown-delay", "0.5", ops=True)
    os.kill(server.process.pid, signal.SIGTERM)
    assert server.process.wait(PATIENCE) == 0
    log = server.stderr_text()
    assert "draining for 0.5 s" in log
    assert "the drain window is over: stopping" in log


def test_without_a_shutdown_delay_sigterm_stops_at_once(serve: ServerFactory) -> None:
    server = serve("--shutdown-delay", "0")
    os.kill(server.process.pid, signal.SIGTERM)
    assert server.process.wait(PATIENCE) == 0
    assert "draining" not in server.stderr_text()


@pytest.mark.parametrize("delay", ["-1", "soon", "inf"])
def test_a_shutdown_delay_that_is_not_a_duration_is_a_usage_error(
    delay: str, tmp_path: Path
) -> None:
    result = subprocess.run(
        [*policyext_command(), "serve", "--rules", str(RULES), "--shutdown-delay", delay],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=PATIENCE,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "--shutdown-delay must be" in result.stderr
    assert delay in result.stderr


def _workers(server: ExtenderServer) -> set[int]:
    """The pids of the arbiter's children (its workers)."""
    pid = server.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return {int(child) for child in children}


def test_a_worker_that_replaces_a_dead_one_during_the_window_drains_too(
    draining: ExtenderServer,
) -> None:
    if not Path(f"/proc/{draining.process.pid}/task").is_dir():
        pytest.skip("needs /proc to find the workers")
    os.kill(draining.process.pid, signal.SIGTERM)
    wait_unready(draining)
    dead = _workers(draining)
    for pid in dead:
        os.kill(pid, signal.SIGKILL)
    replacements = eventually(lambda: _workers(draining) - dead)
    assert replacements
    replies = [readyz(draining) for _ in range(10)]  # answered by the replacements only
    assert {r.status for r in replies} == {503}
    assert {r.json()["checks"]["shutdown"] for r in replies} == {"draining"}
    conn = draining.connection()
    try:
        reply = filter_call(conn)
    finally:
        conn.close()
    assert reply.status == 200
    assert reply.headers["connection"].lower() == "close"
