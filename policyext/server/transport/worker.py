"""gunicorn's gthread worker, reading every request whole before a thread sees it.

The stock worker gives a connection to a thread as soon as it is accepted or shows a
byte, and the thread then blocks reading the rest of the request. A client that sends
its headers or its body slowly holds that thread for as long as it likes; four such
clients (one worker of four threads) stopped every other request, /healthz included.

Here the worker's event loop (its main thread, which already waits on every socket) reads
each request itself, without blocking: the bytes of each connection are gathered and
`transport/framing.py` says when the request is complete (headers, then Content-Length
bytes or every chunk). Only a complete request goes to a thread, which parses it from
memory and never waits for the client. A connection whose request is not complete within
`read_timeout` of its first byte is answered 408 and closed, with the reason in the log;
a header section or body over the limits is answered 431 or 413 as soon as it shows.
Idle kept-alive connections wait in the loop as before (gunicorn's keepalive timeout).
Every refusal's status and JSON body is decided in server/statuses.py, gunicorn's own
refusals of malformed HTTP included (`JsonErrorWorker`).

The direct lane: since the requests are read whole, a plain filter or prioritize call
(`transport/plain.py` says which) is answered without gunicorn's parser, WSGI environ and
Response: its body goes to the application's lane entry
(`app.extensions["policyext.direct"]`, server/lanes.py) and the response, written as
gunicorn writes that reply, goes out with one send (bind too, but only in a thread:
`policyext.direct.threads_only`, a bind waits on the API server). A filter or prioritize
call with a body up to `IN_LOOP_BODY` is answered by the event loop itself, the moment it
is whole: no thread, no handoff. kube-scheduler calls filter and prioritize one at a time
on its serial path, and for a NodeNames call handing the request to a thread and the
connection back to the loop cost more than the answer (measured on 500 nodes, per pod: 3.2
against 2.1 ms of worker CPU, 2.0 against 1.4 ms for the filter reply to reach the client).
It does so while no thread is working: when one is (a NodeList call, a bind waiting on the
API server, a scrape), the call goes to a thread too, so that the threads share the
interpreter as gunicorn shares it rather than wait for the loop's answers (50 concurrent
clients: NodeList calls waited up to 1.5 s, against 0.3 s with the threads sharing). The
loop only answers what is in memory already and never waits for a client: a reply the
socket does not take whole goes to a thread to send. A larger body (a NodeList of hundreds
of nodes) goes to a thread like any other request, so that the loop goes on accepting and
reading meanwhile; there the lane answers it the same way. Requests pipelined behind a call
are framed on the loop's next turn, after the other connections' events.

Connections and the bytes held are bounded per worker. Each listener has a cap on its open
connections (`max_connections` on the verbs listener, `OPS_MAX_CONNECTIONS` on the
operations listener of `--ops-bind`, counted apart): a connection past it closes the
listener's oldest idle one (no byte of a request yet, a TLS handshake under way included),
or, when none is idle, is refused at once (closed; a 503 on plain HTTP). gunicorn's own
cap (`worker_connections`, which stops every listener at once) is set above their sum and
never reached, so a flood of idle connections on one listener never keeps the other from
being served. The bytes of requests
in flight (read by the loop and not complete, or handed to a thread and not answered) are
bounded by `max_buffered`: a request whose header section announces more than is left, or
whose chunks grow past it, is answered 503 and closed as soon as that shows. Both are
counted per connection event (accept, close, a request incomplete after a read, a hand-over
to a thread), never on the direct lane's in-loop answer.

With `tls_allow`, a verbs connection whose verified client certificate carries none of the
names (subject CN, DNS or URI SAN) is answered 403 to its first request and closed; on the
operations listener a client certificate is optional (the kubelet's probes have none) and
the application refuses introspection to a connection without an allowed one.

The lane is taken only where gunicorn would keep the connection alive and call nothing but
the application: not when the worker is stopping or at its last request before a restart
(max_requests, counted in `self.nr` either way), nor with an access log, request hooks, the
PROXY protocol or HTTP/2 configured. Everything else goes gunicorn's way unchanged. The
event loop keeps notifying the arbiter each turn (at least every second, whatever the
threads do).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import selectors
import signal
import socket
import ssl
import threading
import time
from collections.abc import Callable
from functools import partial
from logging import DEBUG
from typing import Any, Final, Literal, cast

from gunicorn import http
from gunicorn.sock import ssl_context
from gunicorn.util import write_nonblock
from gunicorn.workers.gthread import STOP_KEEPALIVE_LINGER, TConn, ThreadWorker

from policyext.server import draining, statuses, tls
from policyext.server.listeners import Listener, entered
from policyext.server.statuses import Refused
from policyext.server.transport.framing import Complete, Framer, Refusal
from policyext.server.transport.plain import HeadLimits, Lane, PlainHeads, PlainPost
from policyext.server.transport.responses import response, send_response

log = logging.getLogger("policyext.server")

# how long a request may take to arrive whole, from its first byte (or from the accept,
# for a TLS handshake): kube-scheduler gives a call 5 s in all (its httpTimeout)
READ_TIMEOUT: Final = 10.0
# one read from a connection. Below the allocator's threshold for mapping memory apart
# (128 KiB): a read allocates a buffer of this size first, and a mapped one costs its pages
# afresh on every read (measured: 27 against 5 us for a 25 KB request)
READ_SIZE: Final = 64 * 1024
# reads of one connection per wake of the loop (8 MiB), so that one large body does not
# keep the loop from the other connections
MAX_READS_PER_WAKE: Final = 128
# the largest body of a plain call the event loop answers itself: a NodeNames call at
# 50,000 nodes. Past it (NodeList bodies) a thread answers, and the loop keeps serving
# the other connections while it does
IN_LOOP_BODY: Final = 1024 * 1024
# open connections per worker on the operations listener (--ops-bind): probes open one
# each, Prometheus keeps one; the same idle-first rule as the verbs listener's cap
OPS_MAX_CONNECTIONS: Final = 64
# at most one warning a second about connections or requests turned away
WARN_EVERY: Final = 1.0


class _Reading:
    """A connection's request being gathered by the event loop."""

    __slots__ = (
        "buffer",
        "continued",
        "counted",
        "deadline",
        "first_look",
        "framer",
        "handshaking",
        "idle",
        "started",
    )

    def __init__(self, framer: Framer, data: bytes, deadline: float) -> None:
        self.framer = framer
        self.buffer = bytearray(data)
        self.idle = not data  # no byte of the next request yet
        self.deadline = deadline
        self.started = time.monotonic()
        self.handshaking = False
        self.continued = False  # `100 Continue` sent
        self.first_look = True  # not yet looked at as a plain call
        self.counted = 0  # bytes of `max_buffered` this request holds


class _Conn(TConn):  # type: ignore[misc]
    """A connection of this worker: which listener accepted it, whether its client
    certificate is one of `tls_allow`, and the bytes it holds in a thread. `closed` is
    told once when it closes, whichever path closes it."""

    def __init__(
        self,
        cfg: Any,
        sock: socket.socket,
        client: Any,
        server: Any,
        listener: Listener,
        closed: Callable[[_Conn], None],
    ) -> None:
        super().__init__(cfg, sock, client, server)  # non-blocking from here
        self.data_ready = True  # the stock worker's wait for a first byte: not needed
        self.listener = listener
        self.trusted = True  # no allow-list, or an allowed certificate
        self.held = 0
        self._closed: Callable[[_Conn], None] | None = closed

    def close(self, graceful: bool = False) -> None:
        closed, self._closed = self._closed, None
        if closed is not None:
            closed(self)
        super().close(graceful)


class FramingThreadWorker(ThreadWorker):  # type: ignore[misc]
    """gthread, with requests read whole in the event loop (see the module's doc)."""

    # set per server by policyext.wsgi (a subclass per configuration)
    read_timeout: float = READ_TIMEOUT
    max_body: int = 64 * 1024 * 1024
    max_buffered: int = 4 * 64 * 1024 * 1024
    max_connections: int = 256
    ops_address: Any = None  # the --ops-bind address as gunicorn parses it
    tls_allow: frozenset[str] = frozenset()
    # the operations listener's TLS context (a client certificate optional)
    ops_tls: Callable[[], ssl.SSLContext] | None = None
    # the shutdown's state shared with the arbiter, and its drain window (--shutdown-delay;
    # server/draining.py)
    drain_flag: draining.DrainFlag | None = None
    shutdown_delay: float = 0.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lane: Lane | None = None  # set once the application is loaded
        # the lane's paths whose answers wait on something else (bind: the API server):
        # answered by a thread, never by the event loop
        self._threads_only: frozenset[str] = frozenset()
        self._reading: dict[Any, _Reading] = {}  # TConn -> its request so far
        # connections given to the threads and not yet back (counted by the event loop,
        # which both gives them and takes them back)
        self._working = 0
        self._stopping_at: float | None = None
        # the listeners of --ops-bind (by file descriptor), and the open connections of each
        # kind of listener
        self._ops_fds = frozenset(
            s.fileno()
            for s in self.sockets
            if self.ops_address is not None and s.cfg_addr == self.ops_address
        )
        self._open = {Listener.BOTH: 0, Listener.VERBS: 0, Listener.OPS: 0}
        self._buffered = 0  # bytes of requests in flight (see the module's doc)
        self._warned_at = 0.0
        cfg = self.cfg
        # past this without the end of the header section, gunicorn would have refused it
        self.max_head = max(
            65536,
            cfg.limit_request_line + cfg.limit_request_fields * (cfg.limit_request_field_size + 2),
        )
        self._heads = PlainHeads(
            HeadLimits.of(
                cfg.limit_request_line,
                cfg.limit_request_fields,
                cfg.limit_request_field_size,
                cfg.secure_scheme_headers,
            )
        )

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self._lane = self._direct_lane()
        self._threads_only = self._lane_paths_for_threads()

    def _lane_paths_for_threads(self) -> frozenset[str]:
        """The lane's paths the application wants answered by a thread only."""
        extensions = getattr(self.wsgi, "extensions", {})
        return frozenset(extensions.get("policyext.direct.threads_only", ()))

    def _direct_lane(self) -> Lane | None:
        """The application's lane entry, when nothing in gunicorn's configuration would
        make it answer a plain call otherwise: no access log or request hooks to call, no
        PROXY protocol or SCRIPT_NAME to apply, HTTP/1.1 only, keep-alive on."""
        lane = getattr(self.wsgi, "extensions", {}).get("policyext.direct")
        cfg = self.cfg
        if (
            not callable(lane)
            or _access_log_enabled(self.log, cfg)
            or cfg.settings["pre_request"].value is not cfg.settings["pre_request"].default
            or cfg.settings["post_request"].value is not cfg.settings["post_request"].default
            or cfg.proxy_protocol not in ("off", False, None)
            or "h2" in cfg.http_protocols
            or not cfg.keepalive
            or os.environ.get("SCRIPT_NAME")
        ):
            return None
        return cast(Lane, lane)

    # -- draining (server/draining.py)

    def init_signals(self) -> None:
        super().init_signals()
        signal.signal(draining.DRAIN_SIGNAL, self._drain)
        signal.siginterrupt(draining.DRAIN_SIGNAL, False)
        if self.drain_flag is not None and self.drain_flag.draining:  # forked in the window
            self._drain()

    def handle_exit(self, sig: int, frame: Any) -> None:
        """SIGTERM: stop, when the arbiter's drain window is over (or there is none);
        sent by anyone else before that (the whole process group signalled, a SIGHUP's
        replacement of the workers), drain for the window on this worker's own clock
        first."""
        flag = self.drain_flag
        if self.shutdown_delay <= 0 or flag is None or flag.stopping:
            super().handle_exit(sig, frame)
            return
        if draining.active():
            return  # the arbiter, or the timer of an earlier SIGTERM, ends the window
        self._drain()
        timer = threading.Timer(self.shutdown_delay, self._stop_draining)
        timer.daemon = True
        timer.start()

    def _stop_draining(self) -> None:
        self.alive = False  # (the event loop sees it within its 1 s turn)

    def _drain(self, _signum: int = 0, _frame: Any = None) -> None:
        """Drain from now on: /readyz answers 503, and every answer closes its connection
        (gunicorn's own path, which closes when no more connections may stay alive), so
        that a client that keeps its connection reconnects through the load balancer to a
        ready replica. Nothing on the scheduling call's path looks at a flag: the lane is
        closed by replacing its gate."""
        if draining.active():
            return
        draining.start()
        self.max_keepalived = 0
        self._lane_open = _lane_closed  # type: ignore[method-assign]
        log.info("draining: not ready, answering every call with Connection: close")

    # -- the event loop (main thread)

    def accept(self, listener: socket.socket) -> None:
        if "h2" in self.cfg.http_protocols:
            super().accept(listener)  # HTTP/2 is multiplexed: gunicorn's own handling
            return
        try:
            client, addr = listener.accept()
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE):  # out of descriptors: make room
                self._warn("cannot accept a connection: %s", e)
                if not self._close_oldest_idle(Listener.VERBS):
                    self._close_oldest_idle(Listener.BOTH)
                return
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        if self.ops_address is None:
            kind, cap = Listener.BOTH, self.max_connections
        elif listener.fileno() in self._ops_fds:
            kind, cap = Listener.OPS, OPS_MAX_CONNECTIONS
        else:
            kind, cap = Listener.VERBS, self.max_connections
        if self._open[kind] >= cap and not self._close_oldest_idle(kind):
            self._turn_away(client, addr, cap)
            return
        self._open[kind] += 1
        self.nr_conns += 1
        conn = self._tconn(client, addr, listener.getsockname(), kind)
        reading = self._start_reading(conn, b"")
        if kind is Listener.OPS:
            reading.first_look = False  # the verbs are not answered here (see finish_request)
        if self.cfg.is_ssl:
            context = self.ops_tls() if kind is Listener.OPS and self.ops_tls else None
            try:
                conn.sock = (context or ssl_context(self.cfg)).wrap_socket(
                    conn.sock,
                    server_side=True,
                    do_handshake_on_connect=False,
                    suppress_ragged_eofs=self.cfg.suppress_ragged_eofs,
                )
            except (OSError, ssl.SSLError) as e:
                self._drop(conn, f"TLS setup failed: {e}", logging.DEBUG)
                return
            reading.handshaking = True
            reading.idle = False  # a handshake not done in time is logged
            reading.deadline = time.monotonic() + self.read_timeout
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))

    def _tconn(
        self, client: socket.socket, addr: Any, server: Any, kind: Listener = Listener.BOTH
    ) -> _Conn:
        return _Conn(self.cfg, client, addr, server, kind, self._closed)

    def _closed(self, conn: _Conn) -> None:
        """A connection is closed (told once, by `_Conn.close`)."""
        self._open[conn.listener] -= 1
        self._buffered -= conn.held
        conn.held = 0

    def _close_oldest_idle(self, kind: Listener) -> bool:
        """Close the listener's connection idle the longest (kept alive after a request,
        accepted and silent since, or still in its TLS handshake: no request under way);
        False when none is. Called at the cap only."""
        idle = [
            (reading.started, conn)
            for conn, reading in self._reading.items()
            if (reading.idle or reading.handshaking) and conn.listener is kind
        ]
        if not idle:
            return False
        _, oldest = min(idle, key=lambda pair: pair[0])
        log.debug("closed the idle connection from %s: at the connection cap", _peer(oldest))
        self._close(oldest)
        return True

    def _turn_away(self, client: socket.socket, addr: Any, cap: int) -> None:
        """Refuse a new connection at once: the listener has `cap` open, none idle."""
        refused = statuses.too_many_connections(cap)
        count_refused(self.wsgi, refused.status)
        self._warn("refused a connection from %s: %s", _peer_address(addr), refused.message)
        with contextlib.suppress(OSError):
            if not self.cfg.is_ssl:  # (before a TLS handshake nothing can be said)
                client.setblocking(False)
                client.send(refused.response())
            client.close()

    def _warn(self, message: str, *args: object) -> None:
        """A warning, at most one every WARN_EVERY seconds (a flood would fill the log)."""
        now = time.monotonic()
        if now - self._warned_at >= WARN_EVERY:
            self._warned_at = now
            log.warning(message, *args)
        else:
            log.debug(message, *args)

    def _within_budget(self, conn: Any, reading: _Reading) -> bool:
        """Count an incomplete request's bytes (read, or announced by its Content-Length)
        against `max_buffered`; refuse it (503, closed) when they do not fit."""
        need = max(len(reading.buffer), reading.framer.announced)
        more = need - reading.counted
        if more <= 0:
            return True
        if self._buffered + more > self.max_buffered:
            self._refuse(conn, statuses.too_many_bytes(self.max_buffered), warn=self._warn)
            return False
        self._buffered += more
        reading.counted = need
        return True

    def _start_reading(self, conn: Any, data: bytes) -> _Reading:
        idle_for = self.cfg.keepalive if data == b"" else self.read_timeout
        deadline = time.monotonic() + idle_for
        if self._stopping_at is not None and not data:
            deadline = min(deadline, self._stopping_at + STOP_KEEPALIVE_LINGER)
        reading = _Reading(Framer(self.max_head, self.max_body), data, deadline)
        self._reading[conn] = reading
        return reading

    def _readable(self, conn: Any, _sock: Any) -> None:
        reading = self._reading.get(conn)
        if reading is None:
            return
        if reading.handshaking and not self._handshake(conn, reading):
            return
        closed = False
        # everything the socket holds, up to a bound: each wake of the loop costs a turn
        # for the GIL among the busy threads, so a large body is not read a piece per wake
        for _ in range(MAX_READS_PER_WAKE):
            try:
                data = conn.sock.recv(READ_SIZE)
            except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            except (OSError, ssl.SSLError) as e:
                self._drop(conn, f"reading failed: {e}", logging.DEBUG)
                return
            if not data:
                closed = True
                break
            reading.buffer += data
            if len(data) < READ_SIZE and not _tls_pending(conn.sock):
                break  # all there was: the next read would only say so
        if reading.buffer and reading.idle:
            reading.idle = False
            reading.started = time.monotonic()
            reading.deadline = reading.started + self.read_timeout
        self._frame(conn, reading, closed)

    def _frame(self, conn: Any, reading: _Reading, closed: bool = False) -> None:
        """Answer the request or hand it to a thread once it is complete; refuse it over a
        limit. A plain call that arrived whole at once (kube-scheduler's, nearly always)
        needs no framing: `plain_post` has found where it ends."""
        if reading.first_look:
            reading.first_look = False
            found = self._plain_call(reading.buffer, None)
            if found is not None:
                self._answer_in_loop(conn, *found)
                return
        try:
            done = reading.framer.advance(reading.buffer)
        except Refusal as r:
            self._refuse(conn, r.refused)
            return
        if done is not None:
            if reading.counted:  # (held by the thread from here, or answered)
                self._buffered -= reading.counted
                reading.counted = 0
            # (never on the operations listener, whose first look is skipped at its accept)
            lane = not done.malformed and conn.listener is not Listener.OPS
            found = self._plain_call(reading.buffer, done.end) if lane else None
            if found is not None:
                self._answer_in_loop(conn, *found)
            else:
                self._dispatch(conn, reading, done)
            return
        if closed:
            level = logging.INFO if reading.buffer else logging.DEBUG
            what = f"after {len(reading.buffer)} bytes of a request" if reading.buffer else ""
            self._drop(conn, f"the client closed the connection {what}".strip(), level)
            return
        if not self._within_budget(conn, reading):
            return
        if reading.framer.expects_continue and not reading.continued:
            reading.continued = True  # the client waits for it before sending the body
            self._send(conn, statuses.CONTINUE)

    def _plain_call(self, buffer: bytearray, end: int | None) -> tuple[bytes, PlainPost] | None:
        """The request's bytes and its call, when it is a complete plain call for the lane
        to be answered in the loop (see the module's doc): within the limits and
        `IN_LOOP_BODY`, ending at `end` where the framer has found its end."""
        if self._working or not buffer.startswith(b"POST ") or not self._lane_open():
            return None  # (while threads work, they share the interpreter with this call)
        data = bytes(buffer)
        call = self._heads.find(data)
        if (
            call is None
            or call.path in self._threads_only
            or (end is not None and call.end != end)
            or call.body_start > self.max_head
            or call.end - call.body_start > min(IN_LOOP_BODY, self.max_body)
        ):
            return None
        return data, call

    def _answer_in_loop(self, conn: Any, data: bytes, call: PlainPost) -> None:
        """Answer a complete plain call here, in the event loop (see the module's doc), and
        count and log it once the reply is sent. One the lane declines goes to a thread,
        marked so that it does not ask again."""
        answer = self._lane_answer(call, data)
        if answer is None:
            conn.declined = True
            conn.continued = False
            self._hand_over(conn, data, malformed=False)
            return
        if answer is False:
            self._close(conn)
            return
        status, body, account = answer
        reply = response(status, body)
        try:
            sent = conn.sock.send(reply)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            sent = 0  # (TLS: the same bytes are written again, as OpenSSL requires)
        except (OSError, ssl.SSLError) as e:  # the client is gone: as gunicorn, quietly
            self._drop(conn, f"the reply to POST {call.path} could not be sent: {e}", DEBUG)
            _account(account, call.path)
            return
        leftover = data[call.end :]
        if sent < len(reply):  # a client reading slowly: a thread waits for it, not the loop
            conn.unsent = reply[sent:]
            conn.carry = leftover
            self._hand_over(conn, b"", malformed=False)
        else:
            reading = self._start_reading(conn, leftover)
            if leftover:  # a pipelined request: on the next turn, after the other connections
                self.method_queue.defer(self._frame_again, conn, reading)
        _account(account, call.path)

    def _frame_again(self, conn: Any, reading: _Reading) -> None:
        if self._reading.get(conn) is reading:  # (not closed or refused meanwhile)
            self._frame(conn, reading)

    def _handshake(self, conn: Any, reading: _Reading) -> bool:
        """Advance the TLS handshake; True once it is done."""
        try:
            conn.sock.do_handshake()
        except ssl.SSLWantReadError:
            self.poller.modify(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))
            return False
        except ssl.SSLWantWriteError:
            self.poller.modify(conn.sock, selectors.EVENT_WRITE, partial(self._readable, conn))
            return False
        except (OSError, ssl.SSLError) as e:
            self._drop(conn, f"TLS handshake failed: {e}", logging.DEBUG)
            return False
        reading.handshaking = False
        reading.idle = True
        reading.deadline = time.monotonic() + self.cfg.keepalive
        checked = self.tls_allow or (self.ops_tls is not None and conn.listener is Listener.OPS)
        if checked and not self._identity_allowed(conn, reading):
            return False
        self.poller.modify(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))
        return True

    def _identity_allowed(self, conn: Any, reading: _Reading) -> bool:
        """Whether the client presented a verified certificate carrying a name of
        `tls_allow` (any name without it). On the operations listener, where a certificate
        is optional, the answer only marks the connection (the application refuses
        introspection to it); on the verbs listener its first request is answered 403."""
        peer = conn.sock.getpeercert()
        if peer and (not self.tls_allow or tls.allowed(peer, self.tls_allow)):
            return True
        names = ", ".join(tls.identities(peer)) or "no client certificate"
        if conn.listener is Listener.OPS:
            conn.trusted = False
            return True
        refused = statuses.certificate_not_allowed(names)
        reading.idle = False  # answered when its request comes, else 408 as any other
        reading.deadline = time.monotonic() + self.read_timeout
        self.poller.modify(conn.sock, selectors.EVENT_READ, partial(self._deny, conn, refused))
        return False

    def _deny(self, conn: Any, refused: Refused, _sock: Any) -> None:
        """Answer 403 to a client whose certificate is not allowed, once it has sent its
        request (read first, so that closing does not reset the connection under the
        reply)."""
        with contextlib.suppress(OSError, ssl.SSLError):
            conn.sock.recv(READ_SIZE)
        self._refuse(conn, refused)

    def _dispatch(self, conn: Any, reading: _Reading, done: Complete) -> None:
        conn.continued = reading.continued
        if done.malformed:
            # gunicorn refuses what it reads; it must not wait for bytes that never come
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RD)
        self._hand_over(conn, bytes(reading.buffer), done.malformed)

    def _hand_over(self, conn: Any, request: bytes, malformed: bool) -> None:
        """Give the connection to a thread, with the bytes read of its request."""
        del self._reading[conn]
        self.poller.unregister(conn.sock)
        conn.initialized = True  # (gunicorn's TConn.init: the loop has done its part)
        conn.request = request
        conn.held = len(request)  # (counted until the thread is done: finish_request)
        self._buffered += conn.held
        conn.malformed = malformed
        conn.sock.setblocking(True)
        self.enqueue_req(conn)

    def _refuse(self, conn: Any, refused: Refused, warn: Callable[..., None] = log.warning) -> None:
        warn("refused a request from %s: %s", _peer(conn), refused.message)
        count_refused(self.wsgi, refused.status)
        self._send(conn, refused.response())
        self._close(conn)

    def _drop(self, conn: Any, why: str, level: int) -> None:
        log.log(level, "closed the connection from %s: %s", _peer(conn), why)
        self._close(conn)

    def _send(self, conn: Any, data: bytes) -> None:
        """Best effort, never blocking: a refusal is small, a client that reads nothing
        gets nothing."""
        with contextlib.suppress(OSError, ssl.SSLError):
            conn.sock.send(data)

    def _close(self, conn: Any) -> None:
        self._forget(conn)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(conn.sock)
        self.nr_conns -= 1
        conn.close()

    def _forget(self, conn: Any) -> None:
        """Stop reading the connection's request; its bytes no longer count."""
        reading = self._reading.pop(conn, None)
        if reading is not None and reading.counted:
            self._buffered -= reading.counted

    def murder_pending(self) -> None:
        """Called by the loop every turn: also end the requests past their deadline."""
        super().murder_pending()
        if not self.alive and self._stopping_at is None:
            self._stopping_at = time.monotonic()
            linger = self._stopping_at + STOP_KEEPALIVE_LINGER
            for reading in self._reading.values():
                if reading.idle:  # a request may be on its way: answered, then closed
                    reading.deadline = min(reading.deadline, linger)
        now = time.monotonic()
        for conn, reading in [(c, r) for c, r in self._reading.items() if r.deadline <= now]:
            if reading.idle:
                self._close(conn)  # a kept-alive connection that sent nothing more
                continue
            refused = statuses.not_whole_in_time(now - reading.started, _progress(reading))
            self._refuse(conn, refused)

    def enqueue_req(self, conn: Any) -> None:
        self._working += 1
        super().enqueue_req(conn)

    def finish_request(self, conn: Any, fs: Any) -> None:
        """A thread is done with the connection: read its next request in the loop."""
        self._working -= 1
        self._buffered -= getattr(conn, "held", 0)
        conn.held = 0
        try:
            result = fs.result() if not fs.cancelled() else False
        except Exception:
            result = False
        if result is not True or conn.is_http2:
            super().finish_request(conn, fs)
            return
        try:
            leftover = _read_ahead(conn)
            conn.sock.setblocking(False)
            reading = self._start_reading(conn, leftover)
            if getattr(conn, "listener", None) is Listener.OPS:
                reading.first_look = False
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))
            if leftover:
                self._frame(conn, reading)  # a pipelined request may be complete already
        except Exception:
            self._forget(conn)
            self.nr_conns -= 1
            conn.close()

    # -- the threads

    def handle(self, conn: Any) -> Any:
        """Answer the connection's request (or send the rest of a reply the event loop
        began): in the direct lane when it is a plain call, else gunicorn's way. True to
        keep the connection, as gunicorn's handle says."""
        unsent = getattr(conn, "unsent", b"")
        if unsent:
            conn.unsent = b""
            try:
                conn.sock.sendall(unsent)
            except (OSError, ssl.SSLError) as e:
                log.debug("the rest of a reply could not be sent: %s", e)
                return False
            return True
        data = getattr(conn, "request", b"")  # (none for a connection gunicorn accepted)
        declined = getattr(conn, "declined", False)
        conn.request = b""
        conn.declined = False
        listener = getattr(conn, "listener", Listener.BOTH)
        if (
            data
            and not getattr(conn, "malformed", False)
            and not declined
            and listener is not Listener.OPS
        ):
            answered = self._answer_directly(conn, data)
            if answered is not None:
                return answered
        if data:
            if conn.parser is None:
                conn.parser = _parser(self.cfg, conn.sock, conn.client)
            conn.parser.unreader.unread(data)
        return super().handle(conn)

    def _answer_directly(self, conn: Any, data: bytes) -> bool | None:
        """Answer a plain call (transport/plain.py) with one send; None when gunicorn must
        answer it: not a plain call, or gunicorn would close the connection after it."""
        if not data.startswith(b"POST ") or not self._lane_open():
            return None
        call = self._heads.find(data)
        if call is None:
            return None
        answer = self._lane_answer(call, data)
        if answer is None or answer is False:
            return answer
        status, body, account = answer
        conn.carry = data[call.end :]  # a pipelined request, for the next turn
        try:
            send_response(conn.sock, status, body)
        except (OSError, ssl.SSLError) as e:  # the client is gone: as gunicorn, quietly
            log.debug("the reply to POST %s could not be sent: %s", call.path, e)
            return False
        finally:
            _account(account, call.path)
        return True

    # -- the lane, from the loop or a thread

    def _lane_open(self) -> bool:
        """Whether gunicorn would keep the connection alive after the next request and
        call nothing but the application for it."""
        return self._lane is not None and self.alive and self.nr + 1 < self.max_requests

    def _lane_answer(
        self, call: PlainPost, data: bytes
    ) -> tuple[str, bytes, Callable[[], None]] | Literal[False] | None:
        """The lane's status line and reply to the call (counted in `nr`), and what counts
        and logs it once it is sent (`_account`); None when the application answers it the
        usual way (another path, a body not the protocol's); False after an unexpected
        error (a bug: logged, the connection is to be closed)."""
        assert self._lane is not None
        try:
            answer = self._lane(call.path, data[call.body_start : call.end])
        except Exception:  # the application answers its own errors: this is a bug here
            log.exception("unexpected error answering POST %s in the direct lane", call.path)
            return False
        if answer is None:
            return None
        self.nr += 1
        if log.isEnabledFor(DEBUG):
            log.debug("POST %s answered in the direct lane", call.path)
        return answer

    def handle_request(self, req: Any, conn: Any) -> Any:
        # which listener, for the application (server/listeners.py)
        entered(getattr(conn, "listener", Listener.BOTH), getattr(conn, "trusted", True))
        if getattr(conn, "continued", False):
            req._expected_100_continue = False  # the event loop has sent it
            conn.continued = False
        return super().handle_request(req, conn)


def count_refused(app: object, status: int) -> None:
    """One request the HTTP server refused before the application saw it (the framing, a
    limit, gunicorn's parser), counted by the application when it says how
    (`app.extensions["policyext.refused"]`, its metrics)."""
    count = getattr(app, "extensions", {}).get("policyext.refused")
    if callable(count):
        count(status)


def _lane_closed() -> bool:
    """The lane's gate while the worker drains: closed (gunicorn's path closes each
    connection after its answer)."""
    return False


def _access_log_enabled(logger: Any, cfg: Any) -> bool:
    """Whether gunicorn writes an access log line per request (asked of its logger where
    it can say, else judged from the settings as it does)."""
    enabled = getattr(logger, "access_log_enabled", None)
    if enabled is not None:
        return bool(enabled)
    settings = ("accesslog", "logconfig", "logconfig_dict", "logconfig_json", "syslog")
    return any(getattr(cfg, name, None) for name in settings)


def _read_ahead(conn: Any) -> bytes:
    """The bytes read from the connection beyond the requests answered, taken: left by the
    direct lane or a thread (`carry`), or read ahead by gunicorn's parser."""
    data: bytes = getattr(conn, "carry", b"")
    conn.carry = b""
    if conn.parser is not None:
        data += conn.parser.unreader.take_buffered()
    return data


def _account(account: Callable[[], None], path: str) -> None:
    """Count and log an answer that has been sent (the metrics, the decision log)."""
    try:
        account()
    except Exception:  # the application's own bookkeeping: a bug, not the client's
        log.exception("unexpected error counting the answer to POST %s", path)


def _tls_pending(sock: Any) -> bool:
    """Whether the TLS layer holds bytes already decrypted (a plain socket holds none)."""
    pending = getattr(sock, "pending", None)
    return pending is not None and pending() > 0


def _parser(cfg: Any, sock: Any, client: Any) -> Any:
    return http.get_parser(cfg, sock, client)


def _peer(conn: Any) -> str:
    return _peer_address(conn.client)


def _peer_address(client: Any) -> str:
    return str(client[0]) if isinstance(client, tuple) and client else str(client)


def _progress(reading: _Reading) -> str:
    size = len(reading.buffer)
    if reading.handshaking:
        return "the TLS handshake was not done"
    if not reading.framer.body_started:
        return f"{size} bytes of headers, no end of the header section"
    return f"{size} bytes read, the body not complete"


class JsonErrorWorker(FramingThreadWorker):
    """The worker `serve` runs: requests read whole in the event loop, and gunicorn's
    refusals of malformed HTTP (a request line or headers over the limits, a bad header)
    answered with a JSON error like the application's (server/statuses.py), not gunicorn's
    HTML page."""

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        refused = statuses.malformed(exc)
        if refused is None:
            super().handle_error(req, client, addr, exc)
            return
        count_refused(self.wsgi, refused.status)
        self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        try:
            write_nonblock(client, refused.response())
        except OSError:
            self.log.debug("Failed to send error message.")
