"""A loopback TCP relay between the extender and the API server, to cut its connections.

TLS passes through untouched (the serving certificate names 127.0.0.1, which the relay
also is), so the extender talks to the real API server; the test can close every open
connection mid-stream (`cut`) and refuse new ones for a while (`down`/`up`), which is what
a network partition or a load balancer dropping idle watches looks like from the client.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

from tests.e2e.controlplane import free_port
from tests.waiting import PATIENCE

CHUNK = 64 * 1024


class Relay:
    """Listens on a loopback port (while up) and pipes each connection to `upstream`."""

    def __init__(self, upstream_port: int, port: int = 0) -> None:
        self.upstream_port = upstream_port
        self.port = port or free_port()
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.connections = 0

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def __enter__(self) -> Relay:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.down()

    def up(self) -> None:
        """Start accepting (a client that connects before this is refused)."""
        if self._listener is not None:
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        """Stop accepting and cut every open connection: the API server is unreachable."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        self.cut()

    def cut(self) -> int:
        """Close every open connection in both directions; returns how many there were."""
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        return len(sockets) // 2

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by down()
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), PATIENCE)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open.update((client, upstream))
                self.connections += 1
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(CHUNK):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open.discard(source)
                self._open.discard(sink)
            source.close()  # each direction's thread closes the socket it reads
