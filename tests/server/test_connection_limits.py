"""Bounded connections and buffers: a flood of idle connections keeps no probe from an
answer, the connection cap closes idle connections first and refuses new ones promptly when
none is idle, and stalled uploads hold at most --max-buffered bytes of a worker."""

from __future__ import annotations

import contextlib
import http.client
import json
import resource
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.hostile import worker_pids
from tests.server.kube import fixture_bytes
from tests.server.metrics_scrape import Scrape
from tests.waiting import PATIENCE, eventually

FILTER = fixture_bytes("filter-names.request.json")
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
MIB = 1024 * 1024
IDLE_FLOOD = 1000


@contextlib.contextmanager
def _open_files(needed: int) -> Iterator[None]:
    """At least `needed` open files for this process (the server started after inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        yield
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"the hard limit of open files ({hard}) is below {needed}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _connect(server: ExtenderServer, port: int = 0) -> socket.socket:
    conn = socket.create_connection((server.host, port or server.port), timeout=PATIENCE)
    return conn


def _answer(conn: socket.socket) -> tuple[int, bytes]:
    """The status and body of one whole response (Content-Length framed)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the body")
        body += chunk
    return int(head.split(b" ", 2)[1]), body


def _closed_by_server(conn: socket.socket) -> bool:
    """Whether the server has closed the connection (EOF or a reset), waiting up to PATIENCE."""
    try:
        return conn.recv(1) == b""
    except ConnectionResetError:
        return True


def _held_by_server(port: int) -> int:
    """The connections the server still holds on `port` (its side established, or closed
    by the client and not yet by the server), from the kernel's table."""
    held = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                if local_port == port and fields[3] in ("01", "08"):  # ESTABLISHED, CLOSE_WAIT
                    held += 1
    return held


def _quiet(server: ExtenderServer) -> None:
    """Wait until the server holds no connection: those of its start-up probes and of the
    tests before would otherwise count against the cap while it has not seen them close."""
    eventually(lambda: _held_by_server(server.port) == 0, what="the server holds no connection")


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def flooded(serve: ServerFactory) -> Iterator[ExtenderServer]:
    with _open_files(IDLE_FLOOD + 512):
        yield serve(ops=True)


def test_healthz_answers_on_the_operations_listener_under_1000_idle_connections(
    flooded: ExtenderServer,
) -> None:
    connections = []
    try:
        for _ in range(IDLE_FLOOD):
            connections.append(_connect(flooded))
        for _ in range(3):
            assert flooded.ops_get("/healthz").status == 200
            assert flooded.ops_get("/readyz").status == 200
        # the verbs listener too: its oldest idle connections made room
        assert flooded.post("/filter", FILTER).status == 200
    finally:
        for conn in connections:
            conn.close()


@pytest.fixture(scope="module")
def capped(serve: ServerFactory) -> ExtenderServer:
    return serve("--max-connections", "4")


def test_past_the_connection_cap_the_oldest_idle_connection_is_closed_first(
    capped: ExtenderServer,
) -> None:
    _quiet(capped)
    kept: list[socket.socket] = []
    try:
        for _ in range(4):  # each answered, then idle, the first the longest
            conn = _connect(capped)
            kept.append(conn)
            conn.sendall(HEALTHZ)
            assert _answer(conn)[0] == 200
        newcomer = _connect(capped)
        kept.append(newcomer)
        newcomer.sendall(HEALTHZ)
        assert _answer(newcomer)[0] == 200
        assert _closed_by_server(kept[0]), "the oldest idle connection is closed"
        kept[1].sendall(HEALTHZ)  # the others are still served
        assert _answer(kept[1])[0] == 200
    finally:
        for conn in kept:
            conn.close()


def test_at_the_cap_with_no_idle_connection_a_new_one_is_refused_at_once(
    serve: ServerFactory,
) -> None:
    # a server of its own, left by every other connection (see _quiet)
    capped = serve("--max-connections", "4")
    _quiet(capped)
    # four requests whose bodies are awaited (the server says so: 100 Continue), each busy
    # before the next connects: at no accept is one of them idle, to be closed for room
    busy: list[socket.socket] = []
    try:
        for _ in range(4):
            conn = _connect(capped)
            busy.append(conn)
            conn.sendall(
                b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\nExpect: 100-continue\r\n\r\n"
            )
            assert conn.recv(100).startswith(b"HTTP/1.1 100 Continue")
        with _connect(capped) as refused:  # answered at once, before it says anything
            status, body = _answer(refused)
            assert _closed_by_server(refused)
        assert (status, json.loads(body)) == (
            503,
            {
                "error": "too many connections: 4 open on this listener, none idle; try again",
                "status": 503,
            },
        )
    finally:
        for conn in busy:
            conn.close()
    eventually(lambda: _healthy(capped), what="served again once they are gone")


def _healthy(server: ExtenderServer) -> bool:
    try:
        return server.get("/healthz").status == 200
    except (OSError, http.client.HTTPException):
        return False  # (refused while the server has not seen the others close yet)


@pytest.fixture(scope="module")
def buffered(serve: ServerFactory) -> ExtenderServer:
    return serve(
        "--max-body", str(16 * MIB), "--max-buffered", str(32 * MIB), "--read-timeout", "120"
    )


def _upload_head(length: int) -> bytes:
    return (
        f"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def test_stalled_large_uploads_hold_at_most_max_buffered_bytes_of_the_worker(
    buffered: ExtenderServer,
) -> None:
    [worker] = worker_pids(buffered)
    before = _rss(worker)
    size = 15 * MIB
    stalled = []
    try:
        # two uploads of 15 MiB sent whole but their last byte: 30 of the 32 MiB
        for _ in range(2):
            conn = _connect(buffered)
            conn.sendall(_upload_head(size) + b" " * (size - 1))
            stalled.append(conn)
        eventually(
            lambda: _rss(worker) - before > 25 * MIB, what="the worker has read both uploads"
        )
        # four more: each refused as soon as its header section says how large it is
        for _ in range(4):
            conn = _connect(buffered)
            stalled.append(conn)
            conn.sendall(_upload_head(size))
            status, body = _answer(conn)
            assert (status, json.loads(body)) == (
                503,
                {
                    "error": "the server is reading too many request bytes at once "
                    f"(--max-buffered {32 * MIB}); try again",
                    "status": 503,
                },
            )
        grown = _rss(worker) - before
        # without the bound: six times 15 MiB (90 MiB) and more
        assert grown < 32 * MIB + 16 * MIB, f"the worker grew by {grown / MIB:.0f} MiB"
        scrape = Scrape(buffered.get("/metrics").body.decode())
        assert scrape.total("policyext_refused_requests_total", {"code": "503"}) == 4
        assert buffered.get("/healthz").status == 200
    finally:
        for conn in stalled:
            conn.close()
    # their bytes are given back: an upload that size is read again
    conn = _connect(buffered)
    try:
        conn.sendall(_upload_head(len(FILTER)) + FILTER)
        assert _answer(conn)[0] == 200
    finally:
        conn.close()
