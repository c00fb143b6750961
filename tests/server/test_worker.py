"""The gunicorn worker: a kept-alive connection carries call after call, answered in the
event loop or by a thread, without keeping other connections waiting or the server from
stopping."""

from __future__ import annotations

import statistics
import threading
import time

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer, send
from tests.server.kube import fixture_bytes
from tests.waiting import PATIENCE

NAMES = fixture_bytes("filter-names.request.json").rstrip()
JSON = {"Content-Type": "application/json"}
CALLS = {
    "filter": ("POST", "/filter", NAMES),
    "prioritize": ("POST", "/prioritize", NAMES),
    "healthz": ("GET", "/healthz", None),
}


@pytest.fixture(scope="module")
def one_thread(serve: ServerFactory) -> ExtenderServer:
    """One worker with one thread: any waiting shows."""
    return serve("--workers", "1", "--threads", "1")


@pytest.mark.parametrize(
    "sequence",
    [["filter"], ["filter", "prioritize"], ["healthz", "filter", "healthz"]],
    ids=["filter", "filter then prioritize", "health checks between"],
)
def test_one_kept_alive_connection_carries_many_calls_back_to_back(
    one_thread: ExtenderServer, sequence: list[str]
) -> None:
    conn = one_thread.connection()
    try:
        statuses = []
        for i in range(60):
            method, path, body = CALLS[sequence[i % len(sequence)]]
            statuses.append(send(conn, method, path, body, JSON).status)
            if i == 0:
                first_socket = conn.sock
            assert conn.sock is first_socket  # never closed and reopened
        assert set(statuses) == {200}
    finally:
        conn.close()


def test_a_busy_connection_does_not_keep_another_one_waiting(one_thread: ExtenderServer) -> None:
    stop = threading.Event()
    busy_calls = [0]

    def hammer() -> None:
        conn = one_thread.connection()
        try:
            while not stop.is_set():
                send(conn, "POST", "/filter", NAMES, JSON)
                busy_calls[0] += 1
        finally:
            conn.close()

    worker = threading.Thread(target=hammer)
    worker.start()
    try:
        while busy_calls[0] < 5:  # the busy connection is being served back to back
            time.sleep(0.01)
        other = one_thread.connection()
        waited = []  # the busy connection's calls answered while one health check waited
        for _ in range(10):
            before = busy_calls[0]
            assert send(other, "GET", "/healthz").status == 200
            waited.append(busy_calls[0] - before)
        other.close()
    finally:
        stop.set()
        worker.join()
    # the busy connection's calls are answered in the event loop, the health check by a
    # thread: it gets the interpreter when the loop next lets go of it (at the latest after
    # the interpreter's switch interval), within a few of the busy calls, not after a run
    assert statistics.median(waited) <= 10, waited


def test_stopping_closes_an_idle_kept_alive_connection_and_exits_cleanly(
    serve: ServerFactory,
) -> None:
    """The worker keeps an idle kept-alive connection a moment for a request already on
    its way (gunicorn's STOP_KEEPALIVE_LINGER), then closes it rather than wait out its
    keepalive timeout (75 s)."""
    server = serve("--workers", "1", "--threads", "2")
    conn = server.connection(timeout=PATIENCE)
    assert send(conn, "POST", "/filter", NAMES, JSON).status == 200
    assert server.stop() == 0
    assert conn.sock.recv(1) == b"", "the server closed the kept-alive connection"
    conn.close()


def test_requests_are_parsed_by_gunicorns_c_parser() -> None:
    """The pure-Python parser costs more CPU per request than answering a NodeNames call:
    the dependency must be installed and gunicorn must pick it."""
    from gunicorn.http.message import _check_fast_parser

    from policyext.settings import Settings
    from policyext.wsgi import Server

    assert _check_fast_parser(Server(Settings(rules=["rules"])).cfg)
