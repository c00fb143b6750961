"""Where an HTTP/1.1 request ends, found as its bytes arrive.

The worker (transport/worker.py) reads every request whole in its event loop before a thread
sees it, so that a client sending slowly holds no thread. This module says, for the bytes
of a connection read so far, whether the first request in them is complete and where it
ends: after the header section, after Content-Length bytes of body, or after the last
chunk and the trailer section of a chunked body. It is fed the growing buffer and
resumes where it stopped, so a body arriving in a thousand pieces is scanned once.

It frames, it does not judge: gunicorn parses the request afterwards and refuses what is
malformed with its own precise error. Where the framing itself is broken (a chunk size that
is not hexadecimal, chunk data without its CRLF, headers that make the length ambiguous),
the request is reported complete as `malformed`: gunicorn then finds the same fault in the
same bytes, and the connection is read no further. Only what gunicorn would never see the
end of is refused here: a header section or body over the limits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum, auto
from typing import Final

from policyext.server import statuses

# a chunk-size line: hexadecimal digits, then optional extensions (RFC 9112 7.1.1); a
# line that does not match is handed to gunicorn, which says what is wrong with it
_TOKEN: Final = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_QUOTED: Final = rb'"([\t !#-\[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"'
_CHUNK_LINE: Final = re.compile(
    rb"[0-9A-Fa-f]+[ \t]*(;[ \t]*"
    + _TOKEN
    + rb"([ \t]*=[ \t]*("
    + _TOKEN
    + rb"|"
    + _QUOTED
    + rb"))?)*"
)
# longest chunk-size line looked for: gunicorn refuses longer ones by their first bytes
MAX_CHUNK_LINE: Final = 8192


class Refusal(Exception):
    """The request cannot be read whole: answered with `refused` and closed."""

    def __init__(self, refused: statuses.Refused) -> None:
        super().__init__(refused.message)
        self.refused = refused
        self.status = refused.status


@dataclass(frozen=True, slots=True)
class Complete:
    """The first request of the buffer ends at `end`. `malformed`: its framing is broken,
    nothing after it can be trusted to be the next request."""

    end: int
    malformed: bool = False


class _State(Enum):
    HEAD = auto()
    BODY = auto()  # Content-Length bytes
    CHUNK_LINE = auto()
    CHUNK_DATA = auto()
    TRAILERS = auto()


class Framer:
    """The framing of the request at the start of one connection's buffer."""

    def __init__(self, max_head: int, max_body: int) -> None:
        self.max_head = max_head
        self.max_body = max_body
        self._state = _State.HEAD
        self._pos = 0  # bytes of the buffer understood
        self._left = 0  # of the body (BODY) or of the chunk (CHUNK_DATA)
        self._body = 0  # chunk bytes so far
        self.expects_continue = False  # `Expect: 100-continue` and a body still to come
        self.body_started = False  # the header section is complete

    @property
    def announced(self) -> int:
        """The bytes the request takes whole as its header section says (the header section
        and its Content-Length body), once that section is read; 0 before it, or for a
        chunked body (whose size shows only as it arrives)."""
        return self._pos + self._left if self._state is _State.BODY else 0

    def advance(self, buf: bytes | bytearray) -> Complete | None:
        """Where the request ends, or None while more bytes are needed; Refusal when it is
        over a limit. `buf` starts with the request and only grows between calls."""
        while True:
            state = self._state
            if state is _State.HEAD:
                done = self._head(buf)
                if isinstance(done, Complete) or not done:
                    return done or None
            elif state is _State.BODY:
                if len(buf) - self._pos < self._left:
                    return None
                return Complete(self._pos + self._left)
            elif state is _State.CHUNK_LINE:
                done = self._chunk_line(buf)
                if isinstance(done, Complete) or not done:
                    return done or None
            elif state is _State.CHUNK_DATA:
                need = self._pos + self._left + 2
                if len(buf) < need:
                    return None
                if buf[need - 2 : need] != b"\r\n":
                    return Complete(len(buf), malformed=True)
                self._pos = need
                self._state = _State.CHUNK_LINE
            else:
                return self._trailers(buf)

    def _head(self, buf: bytes | bytearray) -> Complete | bool:
        end = buf.find(b"\r\n\r\n", max(0, self._pos - 3))
        if end < 0:
            if len(buf) > self.max_head:
                raise Refusal(statuses.head_too_large(self.max_head))
            self._pos = len(buf)
            return False
        self._pos = end + 4
        self.body_started = True
        length, chunked, ambiguous, expect = _framing_headers(bytes(buf[:end]))
        if ambiguous:
            return Complete(self._pos, malformed=True)  # gunicorn refuses the headers
        if chunked:
            self._state = _State.CHUNK_LINE
        else:
            if length > self.max_body:
                raise Refusal(statuses.body_too_large(self.max_body))
            self._state = _State.BODY
            self._left = length
        self.expects_continue = expect and (chunked or length > 0)
        return True

    def _chunk_line(self, buf: bytes | bytearray) -> Complete | bool:
        end = buf.find(b"\r\n", self._pos)
        if end < 0:
            if len(buf) - self._pos > MAX_CHUNK_LINE:
                return Complete(len(buf), malformed=True)
            return False
        line = bytes(buf[self._pos : end])
        if not _CHUNK_LINE.fullmatch(line):
            return Complete(len(buf), malformed=True)
        size = int(line.split(b";", 1)[0].strip(b" \t"), 16)
        self._pos = end + 2
        if size == 0:
            self._state = _State.TRAILERS
            return True
        self._body += size
        if self._body > self.max_body:
            raise Refusal(statuses.body_too_large(self.max_body))
        self._left = size
        self._state = _State.CHUNK_DATA
        return True

    def _trailers(self, buf: bytes | bytearray) -> Complete | None:
        if len(buf) - self._pos < 2:
            return None
        if buf[self._pos : self._pos + 2] == b"\r\n":
            return Complete(self._pos + 2)
        end = buf.find(b"\r\n\r\n", self._pos)
        if end >= 0:
            return Complete(end + 4)
        if len(buf) - self._pos > self.max_head:
            return Complete(len(buf), malformed=True)  # gunicorn: trailers too large
        return None


def _framing_headers(head: bytes) -> tuple[int, bool, bool, bool]:
    """(Content-Length, chunked, ambiguous, Expect: 100-continue) of a header section.
    Ambiguous: a length that is not a number, two different lengths, a length with a
    transfer coding, or a transfer coding that does not end with chunked."""
    lengths: set[bytes] = set()
    codings: list[bytes] = []
    expect = False
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            continue  # gunicorn refuses the line; the framing is the header section's
        key = name.strip().lower()
        if key == b"content-length":
            lengths.update(v.strip() for v in value.split(b","))
        elif key == b"transfer-encoding":
            codings.extend(c.strip().lower() for c in value.split(b",") if c.strip())
        elif key == b"expect":
            expect = value.strip().lower() == b"100-continue"
    version = head.split(b"\r\n", 1)[0].rsplit(b" ", 1)[-1]
    expect = expect and version == b"HTTP/1.1"
    if codings:
        chunked = codings[-1] == b"chunked"
        return 0, chunked, bool(lengths) or not chunked, expect
    if not lengths:
        return 0, False, False, expect
    if len(lengths) > 1 or not all(v.isdigit() for v in lengths):
        return 0, False, True, expect
    return _length(lengths.pop()), False, False, expect


def _length(digits: bytes) -> int:
    """A Content-Length's value; past LENGTH_DIGITS significant digits, a number as large
    (beyond any body limit) in its place: int() refuses one thousands of digits long, and
    the event loop must not fail on what a client sends."""
    significant = digits.lstrip(b"0")
    return int(significant or b"0") if len(significant) <= LENGTH_DIGITS else 10**LENGTH_DIGITS


# significant digits of a Content-Length read as they are (10^18 bytes is beyond any body
# limit)
LENGTH_DIGITS: Final = 18
