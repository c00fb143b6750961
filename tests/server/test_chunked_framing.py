"""A chunked body whose framing is broken is a 400 with a JSON error saying what is wrong,
on every POST endpoint, and never a 500 or a traceback in the log.

The requests are written byte for byte on raw sockets: no HTTP client sends broken
framing, which is the point.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass

import pytest

from tests.server.harness import ExtenderServer
from tests.server.hostile import worker_pids
from tests.waiting import PATIENCE

ENDPOINTS = ["/filter", "/prioritize", "/preempt", "/bind", "/explain"]
HEAD = (
    "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    "Transfer-Encoding: chunked\r\n\r\n"
)


@dataclass(frozen=True)
class Broken:
    name: str
    body: bytes  # what follows the headers
    says: str  # a part of the error message


BROKEN = [
    Broken("a chunk size that is not hexadecimal", b"zz\r\n{}\r\n0\r\n\r\n", "chunk size"),
    Broken("a negative chunk size", b"-1\r\n{}\r\n0\r\n\r\n", "chunk size"),
    Broken("an empty chunk size", b"\r\n{}\r\n0\r\n\r\n", "chunk size"),
    Broken("chunk data without its CRLF", b"2\r\n{}XX0\r\n\r\n", "CRLF"),
    Broken("a control byte in a chunk extension", b"2;a=\x01\r\n{}\r\n0\r\n\r\n", "extension"),
    Broken("NUL in a trailer", b"2\r\n{}\r\n0\r\nX-Trailer: a\x00b\r\n\r\n", "trailer"),
]


def exchange(server: ExtenderServer, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `request`, read until the server closes or the reply's body is complete."""
    with socket.create_connection((server.host, server.port), timeout=PATIENCE) as sock:
        sock.sendall(request)
        received = b""
        while b"\r\n\r\n" not in received:
            data = sock.recv(65536)
            if not data:
                break
            received += data
        head, _, body = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            data = sock.recv(65536)
            if not data:
                break
            body += data
        return status, headers, body


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("broken", BROKEN, ids=[b.name for b in BROKEN])
def test_broken_chunked_framing_is_a_400_that_says_what_is_wrong(
    demo_server: ExtenderServer, broken: Broken, path: str
) -> None:
    tracebacks = demo_server.stderr_text().count("Traceback")
    status, headers, body = exchange(demo_server, HEAD.format(path=path).encode() + broken.body)
    assert status == 400, body
    assert headers["content-type"] == "application/json"
    error = json.loads(body)
    assert error["status"] == 400
    assert broken.says in error["error"], error
    assert "chunked body" in error["error"], error
    assert demo_server.get("/healthz").status == 200
    assert demo_server.stderr_text().count("Traceback") == tracebacks
    assert "unexpected error" not in demo_server.stderr_text()


@pytest.mark.parametrize(
    ("length", "status"),
    [("9" * 5000, 413), ("0" * 5000 + "2", 400)],
    ids=["a number thousands of digits long", "a small number padded with thousands of zeros"],
)
def test_a_content_length_thousands_of_digits_long_is_refused_by_the_same_worker(
    demo_server: ExtenderServer, length: str, status: int
) -> None:
    workers = worker_pids(demo_server)
    tracebacks = demo_server.stderr_text().count("Traceback")
    head = (
        "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    )
    answer, headers, body = exchange(demo_server, head.encode() + b"{}")
    assert answer == status, body
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["status"] == status
    assert demo_server.get("/healthz").status == 200
    assert worker_pids(demo_server) == workers
    assert demo_server.stderr_text().count("Traceback") == tracebacks
