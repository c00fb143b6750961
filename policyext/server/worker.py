"""gunicorn's gthread worker, with a shorter way between two requests of one connection.

The stock worker hands a kept-alive connection back to its main thread after every request:
the thread pool's future completes, the main thread is woken through a pipe, registers the
socket with its poller, wakes again when the next request arrives and submits the
connection to the pool once more. That is two thread handoffs and four system calls per
request; on a small machine they cost more than answering a NodeNames request.

kube-scheduler sends its calls on one kept-alive connection, back to back (filter, then
prioritize for the same pod, then the next pod). This worker lets the thread that answered
a request wait a moment for the next one on the same connection and answer it directly.
It does so only while no other connection waits for a thread, and never while the worker
is stopping, so every other behaviour (keep-alive timeouts, graceful shutdown, request
timeouts, TLS) stays gunicorn's.
"""

from __future__ import annotations

import select
import threading
from typing import Any, Final

from gunicorn.workers.gthread import ThreadWorker

# how long a thread waits for the next request of its connection before handing the
# connection back to the poller: a scheduler sends its next call within this, an idle
# connection costs one blocked thread for this long
LINGER_MS: Final = 2
# consecutive requests one thread answers on one connection before it hands the connection
# back to the poller anyway (which then serves the connections in turn)
MAX_IN_A_ROW: Final = 100


class LingeringThreadWorker(ThreadWorker):  # type: ignore[misc]
    """gthread, answering a connection's next request in the same thread when it is
    already on its way and no other connection is waiting."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._queued = 0  # connections submitted to the pool, not yet picked up
        self._queued_lock = threading.Lock()

    def enqueue_req(self, conn: Any) -> None:
        with self._queued_lock:
            self._queued += 1
        super().enqueue_req(conn)

    def handle(self, conn: Any) -> Any:
        with self._queued_lock:
            self._queued -= 1
        result = super().handle(conn)
        served = 1
        while result is True and served < MAX_IN_A_ROW and self._next_request_ready(conn):
            result = super().handle(conn)
            served += 1
        return result

    def _next_request_ready(self, conn: Any) -> bool:
        """Whether the connection's next request arrives within the linger time, while
        nothing else needs this thread."""
        if not self.alive or self._queued:
            return False
        if conn.parser is None or getattr(conn, "is_http2", False):
            return False
        if conn.parser.unreader.buf.getvalue():
            return True  # read ahead already
        sock = conn.sock
        pending = getattr(sock, "pending", None)  # TLS: bytes decrypted but not read
        if pending is not None and pending():
            return True
        try:
            poller = select.poll()  # (select.select would fail past descriptor 1023)
            poller.register(sock, select.POLLIN)
            ready = poller.poll(LINGER_MS)
        except (OSError, ValueError):
            return False
        return bool(ready) and self.alive
