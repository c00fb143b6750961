"""The event loop answers a plain call itself (server/transport/worker.py): no thread for a call
whose bytes are in memory, a thread for everything else, for a large body and for the rest
of a reply the client is slow to take.

These run one worker's event-loop steps by hand on a socket pair, with an application lane
that records what it is asked; tests/server/test_direct_lane.py checks the same lane
through a real server, byte for byte against gunicorn.
"""

from __future__ import annotations

import contextlib
import logging
import re
import selectors
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger
from gunicorn.workers.gthread import ThreadWorker

from policyext.server.transport.responses import response
from policyext.server.transport.worker import IN_LOOP_BODY, FramingThreadWorker


def call(path: str, body: bytes, extra: str = "") -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
        f"Content-Type: application/json\r\n{extra}\r\n"
    )
    return head.encode() + body


@dataclass
class Lane:
    """The application's lane entry: answers each path with `reply`, or None (declines),
    or raises; records what it was asked, and what was counted (`accounted`: the path, and
    whether the client could already read the reply when it was counted)."""

    reply: bytes | None = b'{"ok": true}'
    raises: bool = False
    client: socket.socket | None = None  # the peer: whether the reply has reached it
    asked: list[tuple[str, bytes]] = field(default_factory=list)
    accounted: list[tuple[str, bool]] = field(default_factory=list)

    def __call__(self, path: str, body: bytes) -> tuple[str, bytes, Callable[[], None]] | None:
        self.asked.append((path, body))
        if self.raises:
            raise RuntimeError("a bug in the lane")
        if self.reply is None:
            return None
        return "200 OK", self.reply, lambda: self.accounted.append((path, self._sent()))

    def _sent(self) -> bool:
        if self.client is None:
            return False
        try:
            return bool(self.client.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except BlockingIOError:
            return False


class Loop:
    """One worker with its event loop's state, serving one end of a socket pair."""

    def __init__(self, lane: Lane, **state: Any) -> None:
        cfg = Config()
        cfg.set("max_requests", 10)
        cfg.set("keepalive", 75)
        self.worker = worker = FramingThreadWorker(0, 0, [], None, 30, cfg, Logger(cfg))
        worker.poller = selectors.DefaultSelector()
        worker.method_queue.init()
        worker._lane = lane
        for key, value in state.items():
            setattr(worker, key, value)
        self.handed: list[Any] = []  # connections given to a thread
        worker.enqueue_req = self.handed.append
        ours, self.client = socket.socketpair()
        lane.client = self.client
        ours.setblocking(False)
        self.conn = worker._tconn(ours, "client", "server")
        worker._start_reading(self.conn, b"")
        worker.poller.register(ours, selectors.EVENT_READ, None)

    def close(self) -> None:
        self.client.close()
        self.conn.sock.close()
        self.worker.poller.close()
        self.worker.method_queue.close()
        self.worker.tmp.close()

    def send(self, data: bytes) -> None:
        """The client's bytes, and the loop's turns for them as they arrive."""
        view = memoryview(data)
        self.client.setblocking(False)
        try:
            while view:
                with contextlib.suppress(BlockingIOError):
                    view = view[self.client.send(view) :]
                self.worker._readable(self.conn, None)
        finally:
            self.client.setblocking(True)

    def next_turn(self) -> None:
        """What the loop was asked to do on its next turn."""
        self.worker.method_queue.run_callbacks(None)

    def received(self) -> bytes:
        self.client.setblocking(False)
        data = b""
        try:
            while chunk := self.client.recv(1 << 20):
                data += chunk
        except BlockingIOError:
            pass
        finally:
            self.client.setblocking(True)
        return data

    @property
    def reading(self) -> bool:
        """The loop waits for the connection's next request."""
        registered = self.conn.sock.fileno() in {
            key.fd for key in self.worker.poller.get_map().values()
        }
        return registered and self.conn in self.worker._reading


@pytest.fixture
def loops() -> Iterator[list[Loop]]:
    made: list[Loop] = []
    yield made
    for loop in made:
        loop.close()


def _loop(loops: list[Loop], lane: Lane, **state: Any) -> Loop:
    loop = Loop(lane, **state)
    loops.append(loop)
    return loop


UNDATED = re.compile(rb"\r\nDate: [^\r]*")


def same_reply(sent: bytes, status: str, body: bytes) -> bool:
    return UNDATED.sub(b"", sent) == UNDATED.sub(b"", response(status, body))


def test_a_plain_call_is_answered_by_the_event_loop_and_its_connection_kept_for_the_next(
    loops: list[Loop],
) -> None:
    lane = Lane()
    loop = _loop(loops, lane)
    for n in (1, 2):
        loop.send(call("/filter", b"{}"))
        assert same_reply(loop.received(), "200 OK", b'{"ok": true}')
        assert loop.handed == [], "no thread was needed"
        assert loop.reading, "the loop waits for the next request"
        assert loop.worker.nr == n, "counted towards max_requests"
    assert lane.asked == [("/filter", b"{}"), ("/filter", b"{}")]


def test_an_answer_is_counted_and_logged_once_its_reply_is_on_its_way(
    loops: list[Loop],
) -> None:
    """kube-scheduler waits for the reply, not for the metrics and the decision log."""
    lane = Lane()
    loop = _loop(loops, lane)
    loop.send(call("/filter", b"{}"))
    assert lane.accounted == [("/filter", True)]
    assert same_reply(loop.received(), "200 OK", b'{"ok": true}')


HANDED: dict[str, tuple[bytes, dict[str, Any], int]] = {
    # the request, the worker's state, how often the lane is asked (in the loop)
    "a body over IN_LOOP_BODY": (call("/filter", b" " * (IN_LOOP_BODY + 1)), {}, 0),
    "a GET": (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", {}, 0),
    "a POST that is not plain": (call("/filter", b"{}", "Connection: close\r\n"), {}, 0),
    "with the worker stopping": (call("/filter", b"{}"), {"alive": False}, 0),
    "at its last request before a restart": (call("/filter", b"{}"), {"nr": 9}, 0),
    "while a thread works on another request": (call("/filter", b"{}"), {"_working": 1}, 0),
    "a call the lane answers only in a thread": (
        call("/bind", b"{}"),
        {"_threads_only": frozenset({"/bind"})},
        0,
    ),
}


@pytest.mark.parametrize("request_bytes, state, asked", HANDED.values(), ids=list(HANDED))
def test_any_other_request_goes_to_a_thread_with_its_bytes(
    loops: list[Loop], request_bytes: bytes, state: dict[str, Any], asked: int
) -> None:
    lane = Lane()
    loop = _loop(loops, lane, **state)
    nr = loop.worker.nr
    loop.send(request_bytes)
    assert loop.handed == [loop.conn]
    assert loop.conn.request == request_bytes
    assert not loop.reading, "the thread has the connection"
    assert len(lane.asked) == asked
    assert loop.received() == b"" and loop.worker.nr == nr


def test_a_call_the_lane_answers_only_in_a_thread_is_answered_there_in_the_lane(
    loops: list[Loop], monkeypatch: pytest.MonkeyPatch
) -> None:
    """bind waits on the API server: never in the event loop, but not gunicorn's way
    either."""
    lane = Lane()
    loop = _loop(loops, lane, _threads_only=frozenset({"/bind"}))
    loop.send(call("/bind", b"{}"))
    assert loop.handed == [loop.conn] and lane.asked == []
    monkeypatch.setattr(ThreadWorker, "handle", lambda self, conn: "gunicorn's way")
    loop.conn.sock.setblocking(True)
    assert loop.worker.handle(loop.conn) is True, "answered in the lane, kept alive"
    assert lane.asked == [("/bind", b"{}")]
    assert same_reply(loop.received(), "200 OK", b'{"ok": true}')
    assert lane.accounted == [("/bind", True)]


def test_a_call_the_lane_declines_goes_to_a_thread_that_does_not_ask_the_lane_again(
    loops: list[Loop], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A body that is not the protocol's: the application answers its 400 the usual way."""
    lane = Lane(reply=None)
    loop = _loop(loops, lane)
    loop.send(call("/filter", b"{not json"))
    assert loop.handed == [loop.conn] and len(lane.asked) == 1
    monkeypatch.setattr(ThreadWorker, "handle", lambda self, conn: "gunicorn's way")
    assert loop.worker.handle(loop.conn) == "gunicorn's way"
    assert len(lane.asked) == 1, "asked once"


def test_pipelined_calls_are_answered_in_order_one_per_turn_of_the_loop(
    loops: list[Loop],
) -> None:
    lane = Lane()
    loop = _loop(loops, lane)
    loop.send(call("/filter", b"[1]") + call("/prioritize", b"[2]") + b"GET /x HTTP/1.1\r\n\r\n")
    assert len(re.findall(b"HTTP/1.1 200 OK", loop.received())) == 1
    loop.next_turn()  # after the other connections' events
    assert len(re.findall(b"HTTP/1.1 200 OK", loop.received())) == 1
    assert lane.asked == [("/filter", b"[1]"), ("/prioritize", b"[2]")]
    loop.next_turn()
    assert loop.handed == [loop.conn], "the GET goes to a thread"
    assert loop.conn.request == b"GET /x HTTP/1.1\r\n\r\n"


def test_a_reply_the_socket_does_not_take_whole_is_finished_by_a_thread(
    loops: list[Loop],
) -> None:
    body = bytes(i % 251 for i in range(3 * 1024 * 1024))
    loop = _loop(loops, Lane(reply=body))
    loop.conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    pipelined = b"GET /healthz HTTP/1.1\r\n\r\n"
    loop.send(call("/filter", b"{}") + pipelined)
    assert loop.handed == [loop.conn], "the loop does not wait for a slow reader"
    assert loop.conn.request == b""
    received: list[bytes] = []

    def read_reply() -> None:
        expected = len(response("200 OK", body))
        while sum(map(len, received)) < expected:
            received.append(loop.client.recv(65536))

    reader = threading.Thread(target=read_reply)
    reader.start()
    kept = loop.worker.handle(loop.conn)  # the thread
    reader.join(60)
    assert kept is True, "the connection goes on"
    assert same_reply(b"".join(received), "200 OK", body)
    assert loop.conn.carry == pipelined, "the next request waits for the loop"


def test_an_unexpected_error_in_the_lane_closes_that_connection_only(
    loops: list[Loop], caplog: pytest.LogCaptureFixture
) -> None:
    broken = _loop(loops, Lane(raises=True))
    fine = _loop(loops, Lane())
    with caplog.at_level(logging.ERROR, logger="policyext.server"):
        broken.send(call("/filter", b"{}"))
    assert broken.client.recv(1) == b"", "closed"
    assert "unexpected error answering POST /filter" in caplog.text
    fine.send(call("/filter", b"{}"))
    assert same_reply(fine.received(), "200 OK", b'{"ok": true}')
