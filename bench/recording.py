"""A live round of the throughput benchmark, recorded so that it can be replayed in process.

The throughput benchmark's rates move with the machine's speed by more than most changes
to the request path do. A recording keeps what the extender met in one round: the Nodes,
every call kube-scheduler made (its path, its body and the reply it got) and every pod as
the pod watch brought it once bound, in the order they happened. `python -m bench.replay`
then feeds the same calls and events to the extender's own code in process, as often as
wanted, and counts the CPU each part takes: a measure that two versions of the code can be
compared on within minutes, with the replies checked against the live ones. The machine's
own speed still drifts (a tenth from one minute to the next, seen on the benchmark's
machine), so compare versions alternating, several replays each; but no scheduler, API
server or etcd shares the cores, as they do in a live round.

`python -m bench.throughput --only "policyext, bench policy" --record FILE` records: a
proxy between kube-scheduler and the extender notes the calls, the benchmark's own watch
the bound pods.
"""

from __future__ import annotations

import http.client
import http.server
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

Json = dict[str, Any]


@dataclass
class Recording:
    """What the extender met in one round, in order: `steps` are calls and bound pods."""

    nodes: list[Json]
    steps: list[Json] = field(default_factory=list)

    def write(self, path: Path) -> None:
        """One JSON object per line: the nodes first, then each step."""
        with path.open("wb") as out:
            out.write(orjson.dumps({"nodes": self.nodes}) + b"\n")
            for step in self.steps:
                out.write(orjson.dumps(step) + b"\n")

    @classmethod
    def read(cls, path: Path) -> Recording:
        lines = path.read_bytes().splitlines()
        if not lines:
            raise ValueError(f"{path}: empty, not a recording")
        head = orjson.loads(lines[0])
        if not isinstance(head, dict) or not isinstance(head.get("nodes"), list):
            raise ValueError(f"{path}: its first line holds no nodes, not a recording")
        return cls(head["nodes"], [orjson.loads(line) for line in lines[1:] if line.strip()])


def merge(
    calls: list[tuple[float, Json]], bound: list[tuple[float, Json]], nodes: list[Json]
) -> Recording:
    """The calls (`{"path", "body", "status", "reply"}`) and the bound pods (`{"pod"}`),
    each with when it was seen, as one recording in time order (a call before a pod seen at
    the same instant: the pod was bound after the calls about it)."""
    timed = [(t, 0, step) for t, step in calls] + [(t, 1, step) for t, step in bound]
    timed.sort(key=lambda item: (item[0], item[1]))
    return Recording(nodes, [step for _, _, step in timed])


class RecordingProxy:
    """An HTTP server on the loopback that passes each POST on to `upstream` (one
    keep-alive connection per client connection) and notes the call with its reply."""

    def __init__(self, upstream: str) -> None:
        target = urlsplit(upstream)
        self.calls: list[tuple[float, Json]] = []
        lock = threading.Lock()
        calls = self.calls

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def setup(self) -> None:
                super().setup()
                self.upstream = http.client.HTTPConnection(
                    target.hostname or "127.0.0.1", target.port, timeout=60
                )
                self.upstream.connect()
                self.upstream.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def finish(self) -> None:
                super().finish()
                self.upstream.close()

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
                self.upstream.request("POST", self.path, body, headers)
                answer = self.upstream.getresponse()
                reply = answer.read()
                with lock:
                    calls.append(
                        (
                            time.monotonic(),
                            {
                                "path": self.path,
                                "body": body.decode(),
                                "status": answer.status,
                                "reply": reply.decode(),
                            },
                        )
                    )
                # the status line, headers and body in one write: in pieces, the client's
                # delayed acknowledgement would hold each reply back
                head = (
                    f"HTTP/1.1 {answer.status} {answer.reason}\r\n"
                    f"Content-Type: {answer.getheader('Content-Type') or ''}\r\n"
                    f"Content-Length: {len(reply)}\r\n\r\n"
                )
                self.wfile.write(head.encode() + reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # (the benchmark's output stays its own)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> RecordingProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
