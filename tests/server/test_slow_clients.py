"""Clients that send slowly hold no thread: with the default one worker of four threads,
100 connections stalled in their headers or their body leave /healthz and filter
answering, and a request that does not arrive whole in time is answered 408, closed, and
logged with the reason. Pipelined requests are answered in order.

Everything goes through a real `policyext serve` on raw sockets. No assertion is about
time: the stalled connections are checked to be still open after the other requests
were answered.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.kube import fixture_bytes
from tests.waiting import PATIENCE

NAMES = fixture_bytes("filter-names.request.json").rstrip()
STALLED = 100


def filter_request(body: bytes = NAMES, extra: str = "") -> bytes:
    head = (
        "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    )
    return head.encode() + body


def slow_headers() -> bytes:
    return filter_request()[:40]  # in the middle of the header section


def slow_body() -> bytes:
    return filter_request()[: filter_request().index(b"\r\n\r\n") + 4 + 10]  # 10 body bytes


class Replies:
    """The HTTP responses arriving on a socket, one at a time (pipelined ones included)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.received = b""

    def _more(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError(f"closed after {self.received!r}")
        self.received += data

    def next(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.received:
            self._more()
        head, _, rest = self.received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        length = int(headers.get("content-length", "0"))
        self.received = rest
        while len(self.received) < length:
            self._more()
        body, self.received = self.received[:length], self.received[length:]
        return int(lines[0].split()[1]), headers, body


def still_open(sock: socket.socket) -> bool:
    """Open, with nothing sent by the server: neither a reply nor an end of stream."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


@pytest.fixture(scope="module")
def patient(serve: ServerFactory) -> ExtenderServer:
    """The defaults (one worker, four threads), with a read timeout the test never meets."""
    return serve("--read-timeout", "3600")


@pytest.fixture(scope="module")
def strict(serve: ServerFactory) -> ExtenderServer:
    return serve("--read-timeout", "1")


def stalled_connections(server: ExtenderServer, stack: ExitStack) -> Iterator[socket.socket]:
    for i in range(STALLED):
        sock = stack.enter_context(
            socket.create_connection((server.host, server.port), timeout=PATIENCE)
        )
        sock.sendall(slow_headers() if i % 2 else slow_body())
        yield sock


def test_a_hundred_stalled_clients_leave_healthz_and_filter_answering(
    patient: ExtenderServer,
) -> None:
    expected = patient.post("/filter", NAMES).body
    with ExitStack() as stack:
        stalled = list(stalled_connections(patient, stack))
        for _ in range(3):
            health = patient.get("/healthz")
            assert health.status == 200
            reply = patient.post("/filter", NAMES)
            assert (reply.status, reply.body) == (200, expected)
        # they were answered while every stalled connection was still waiting
        assert all(still_open(sock) for sock in stalled)
        # and a slow client that finishes its request gets its answer
        slow = stalled[0]  # a slow body
        slow.sendall(filter_request()[len(slow_body()) :])
        status, _, body = Replies(slow).next()
        assert (status, body) == (200, expected)


@pytest.mark.parametrize(
    ("sent", "says"),
    [(slow_headers(), "no end of the header section"), (slow_body(), "the body not complete")],
    ids=["slow headers", "slow body"],
)
def test_a_request_not_whole_in_time_is_answered_408_and_logged(
    strict: ExtenderServer, sent: bytes, says: str
) -> None:
    with socket.create_connection((strict.host, strict.port), timeout=PATIENCE) as sock:
        sock.sendall(sent)
        status, headers, body = Replies(sock).next()  # waits for the server to give up
        assert sock.recv(1) == b"", "closed after the 408"
    assert status == 408
    assert headers["content-type"] == "application/json"
    error = json.loads(body)
    assert error["status"] == 408
    assert "the request was not complete after" in error["error"]
    assert says in error["error"]
    logged = [line for line in strict.stderr_text().splitlines() if says in line]
    assert any("refused a request from 127.0.0.1" in line for line in logged), logged
    assert "Traceback" not in strict.stderr_text()


def test_pipelined_requests_are_answered_in_order(patient: ExtenderServer) -> None:
    health = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    expected = patient.post("/filter", NAMES).body
    with socket.create_connection((patient.host, patient.port), timeout=PATIENCE) as sock:
        second = filter_request()
        # two whole requests and the start of a third in one write; the rest later
        sock.sendall(filter_request() + health + second[:50])
        arriving = Replies(sock)
        replies = [arriving.next() for _ in range(2)]
        sock.sendall(second[50:])
        replies.append(arriving.next())
        assert arriving.received == b"", "nothing more than the three replies"
    assert [r[0] for r in replies] == [200, 200, 200]
    assert replies[0][2] == expected and replies[2][2] == expected
    assert json.loads(replies[1][2]) == {"status": "ok"}
