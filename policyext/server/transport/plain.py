"""The direct lane's requests: a plain filter, prioritize or bind call, read from memory.

kube-scheduler calls filter and prioritize on its serial path, and for a call the reply
memo answers, gunicorn's per-request machinery (its parser reading again the bytes the
worker's event loop has framed, the WSGI environ, its Response object) costs more CPU than
the answer. The worker (transport/worker.py) gives every complete request to `plain_post`
first: a request that is plainly a POST of JSON to one path, with nothing that gunicorn
would refuse or treat specially, is answered by the application's lane entry
(server/lanes.py) and `responses.response` writes it as gunicorn writes that reply.
Anything else goes the usual way; when in doubt, it goes the usual way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from policyext.server.transport.framing import LENGTH_DIGITS

# the application's lane entry: (path, body) -> (status line, JSON reply, what counts and
# logs the answer: called once the reply is sent), or None when the application answers
# the request itself (another path, a body not the protocol's)
Lane = Callable[[str, bytes], tuple[str, bytes, Callable[[], None]] | None]

# a header name gunicorn maps as is: an RFC 9110 token without "_" (gunicorn drops or
# refuses those, and maps some of them onto the environ)
_NAME: Final = re.compile(rb"[!#$%&'*+.^`|~0-9A-Za-z-]+")
# a header value of printable ASCII, spaces and tabs: what every gunicorn parser accepts
_VALUE: Final = re.compile(rb"[\t\x20-\x7e]*")
# a request target that is a path and nothing else: no query, fragment or percent-escape
_PATH: Final = re.compile(rb"/[!$&-.0-9:;=@-Z_a-z~/]*")
# headers whose presence makes the request not plain: a body framed or announced otherwise,
# a protocol switch
_NOT_PLAIN: Final = frozenset((b"transfer-encoding", b"expect", b"upgrade", b"http2-settings"))


@dataclass(frozen=True, slots=True)
class HeadLimits:
    """gunicorn's limits on a request head (its limit_request_* settings), and the header
    names it reads for the scheme (secure_scheme_headers, in lower case)."""

    line: int
    fields: int
    field_size: int
    scheme_headers: frozenset[bytes]

    @classmethod
    def of(
        cls, line: int, fields: int, field_size: int, scheme_headers: Iterable[str]
    ) -> HeadLimits:
        # gunicorn's own bounds where a setting is 0 (no limit) or out of range
        line = 8190 if line <= 0 or line > 8190 else line
        fields = 32768 if fields <= 0 or fields > 32768 else fields
        field_size = 8190 if field_size <= 0 else field_size
        names = frozenset(h.lower().encode("latin-1") for h in scheme_headers)
        return cls(line, fields, field_size, names)


@dataclass(frozen=True, slots=True)
class PlainPost:
    """A plain POST of JSON at the start of a buffer: its path and its body's bounds."""

    path: str
    body_start: int
    end: int  # where the next request starts


def plain_post(data: bytes, limits: HeadLimits) -> PlainPost | None:
    """The request at the start of `data` (complete, as the event loop framed it) if it is
    `POST <path> HTTP/1.1` with `Content-Type: application/json`, one Content-Length and
    headers gunicorn accepts as they are (kept alive: no `Connection` but `keep-alive`);
    None for anything else."""
    head_end = data.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    lines = data[:head_end].split(b"\r\n")
    parts = lines[0].split(b" ")
    if (
        len(parts) != 3
        or parts[0] != b"POST"
        or parts[2] != b"HTTP/1.1"
        or len(lines[0]) > limits.line
        or not _PATH.fullmatch(parts[1])
        or len(lines) > limits.fields  # the request line and fewer headers than the limit
    ):
        return None
    length = -1
    seen: set[bytes] = set()
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or len(line) + 2 > limits.field_size or not _NAME.fullmatch(name):
            return None
        value = value.strip(b" \t")
        if not _VALUE.fullmatch(value):
            return None
        key = name.lower()
        if key in seen and key in (b"content-length", b"content-type", b"host", b"connection"):
            return None  # gunicorn refuses some repeats; none of them is plain
        seen.add(key)
        if key == b"content-length":
            if not _number(value):
                return None
            length = int(value)
        elif key == b"content-type":
            if value != b"application/json":
                return None
        elif key == b"connection":
            if value.lower() != b"keep-alive":
                return None
        elif key in _NOT_PLAIN or key in limits.scheme_headers:
            return None
    if length < 0 or b"content-type" not in seen:
        return None
    body_start = head_end + 4
    end = body_start + length
    if len(data) < end:
        return None
    return PlainPost(parts[1].decode("ascii"), body_start, end)


class PlainHeads:
    """`plain_post` for the requests of one event loop, remembering the heads it found
    plain. A client sends the same header lines on every call but for the Content-Length
    value (the Go client writes it as `Content-Length: <digits>`), and whether a head is
    plain does not depend on that value as long as it is a number within the limits: a head
    seen before but for it needs only its number read. That is a few C calls instead of a
    look at every line, for every call kube-scheduler makes on its serial path. The event
    loop and the threads share it: what one of them remembers the others may miss (a dict
    replaced whole), which only costs a look at every line again."""

    def __init__(self, limits: HeadLimits) -> None:
        self.limits = limits
        # a plain head without its Content-Length line -> its path
        self._paths: dict[bytes, str] = {}

    def find(self, data: bytes) -> PlainPost | None:
        """`plain_post(data, limits)`."""
        head_end = data.find(b"\r\n\r\n")
        at = data.find(_LENGTH_LINE, 0, head_end) if head_end >= 0 else -1
        if at < 0:
            return plain_post(data, self.limits)
        digits_at = at + len(_LENGTH_LINE)
        line_end = data.find(b"\r\n", digits_at)
        rest = data[:at] + data[line_end:head_end]
        path = self._paths.get(rest)
        digits = data[digits_at:line_end]
        # (the line is `line_end - at - 2` long, and its CRLF counts against the limit)
        if path is not None and _number(digits) and line_end - at <= self.limits.field_size:
            body_start = head_end + 4
            end = body_start + int(digits)
            return PlainPost(path, body_start, end) if len(data) >= end else None
        found = plain_post(data, self.limits)
        if found is not None:
            if len(self._paths) >= REMEMBERED_HEADS:
                self._paths = {}
            self._paths[rest] = found.path
        return found


def _number(digits: bytes) -> bool:
    """Whether a Content-Length value is a number this lane takes: digits, at most
    LENGTH_DIGITS of them (any body it takes is far shorter; a number thousands of digits
    long is not even converted by int())."""
    return len(digits) <= LENGTH_DIGITS and digits.isdigit()


# how a client that writes its headers as Go's does writes the Content-Length line
_LENGTH_LINE: Final = b"\r\nContent-Length: "
# heads remembered per event loop: one per path and client kind is the usual count
REMEMBERED_HEADS: Final = 64
