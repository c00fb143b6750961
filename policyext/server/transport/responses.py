"""The direct lane's replies, written as gunicorn writes the reply to a plain POST it keeps
alive, byte for byte: its status line and headers (Server, Date, Connection), then the
application's (Content-Type, Content-Length), then the body."""

from __future__ import annotations

import time
from ssl import SSLSocket
from typing import Any, Final

from gunicorn import SERVER
from gunicorn.util import http_date


def response(status: str, body: bytes) -> bytes:
    """The whole response to a plain POST that gunicorn keeps alive, as gunicorn writes the
    hot path's reply: its status line and headers (Server, Date, Connection), then the
    application's (Content-Type, Content-Length), then the body."""
    return response_head(status, body) + body


def response_head(status: str, body: bytes) -> bytes:
    """`response` without the body."""
    head = (
        f"HTTP/1.1 {status}\r\nServer: {SERVER}\r\nDate: {_date()}\r\n"
        f"Connection: keep-alive\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1")


# a reply body from this size on is sent apart from its head rather than copied behind it
# (a NodeList reply is megabytes: a copy that large costs its pages afresh)
LARGE_REPLY: Final = 64 * 1024


def send_response(sock: Any, status: str, body: bytes) -> None:
    """Send `response(status, body)` on a blocking socket."""
    if len(body) < LARGE_REPLY or not hasattr(sock, "sendmsg") or isinstance(sock, SSLSocket):
        sock.sendall(response(status, body))
        return
    parts = [memoryview(response_head(status, body)), memoryview(body)]
    while parts:
        sent = sock.sendmsg(parts)
        while sent:
            if sent >= len(parts[0]):
                sent -= len(parts.pop(0))
            else:
                parts[0], sent = parts[0][sent:], 0


class _HttpDate:
    """gunicorn's Date value, formatted once a second (its resolution is a second)."""

    def __init__(self) -> None:
        self._last: tuple[int, str] = (0, "")  # replaced whole: threads read it unlocked

    def __call__(self) -> str:
        second = int(time.time())
        last = self._last
        if last[0] != second:
            last = self._last = (second, http_date(second))
        return last[1]


_date: Final = _HttpDate()
