"""Where a request ends, found as its bytes arrive (server/transport/framing.py): the table gives
whole requests, fed at once and one byte at a time, and what follows them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from policyext.server.transport.framing import Complete, Framer, Refusal

HEAD = b"POST /filter HTTP/1.1\r\nHost: x\r\n"


@dataclass(frozen=True)
class Case:
    name: str
    request: bytes
    malformed: bool = False


WHOLE = [
    Case("a GET without a body", b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    Case("a Content-Length body", HEAD + b"Content-Length: 2\r\n\r\n{}"),
    Case("an empty Content-Length body", HEAD + b"Content-Length: 0\r\n\r\n"),
    Case("a chunked body", HEAD + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
    Case(
        "chunks with extensions and trailers",
        HEAD
        + b'Transfer-Encoding: chunked\r\n\r\n1;a=b\r\n{\r\n1 ;c="d"\r\n}\r\n0\r\nX-T: 1\r\n\r\n',
    ),
    Case(
        "a chunk size that is not hexadecimal",
        HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n",
        True,
    ),
    Case("a negative chunk size", HEAD + b"Transfer-Encoding: chunked\r\n\r\n-1\r\n", True),
    Case("an empty chunk size", HEAD + b"Transfer-Encoding: chunked\r\n\r\n\r\n", True),
    Case(
        "chunk data without its CRLF", HEAD + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX", True
    ),
    Case(
        "a control byte in a chunk extension",
        HEAD + b"Transfer-Encoding: chunked\r\n\r\n2;a=\x01\r\n",
        True,
    ),
    Case(
        "a length padded with thousands of zeros",
        HEAD + b"Content-Length: " + b"0" * 5000 + b"2\r\n\r\n{}",
    ),
    Case("a length that is not a number", HEAD + b"Content-Length: 1x\r\n\r\n", True),
    Case("two different lengths", HEAD + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\n", True),
    Case(
        "a length and chunked",
        HEAD + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
        True,
    ),
    Case("a transfer coding other than chunked", HEAD + b"Transfer-Encoding: gzip\r\n\r\n", True),
]
NEXT = b"GET /healthz HTTP/1.1\r\n\r\n"


@pytest.mark.parametrize("case", WHOLE, ids=[c.name for c in WHOLE])
def test_a_whole_request_ends_where_its_framing_says(case: Case) -> None:
    """A malformed one ends where its fault is seen: gunicorn reads no further."""
    buf = case.request + (b"" if case.malformed else NEXT)
    found = Framer(65536, 1 << 20).advance(buf)
    assert found == Complete(len(case.request), case.malformed)


@pytest.mark.parametrize("case", [c for c in WHOLE if not c.malformed], ids=lambda c: c.name)
def test_a_request_fed_one_byte_at_a_time_is_complete_at_its_last_byte(case: Case) -> None:
    framer = Framer(65536, 1 << 20)
    buf = bytearray()
    for i, byte in enumerate(case.request):
        buf.append(byte)
        found = framer.advance(buf)
        if i < len(case.request) - 1:
            assert found is None, f"complete after {i + 1} of {len(case.request)} bytes"
    assert found == Complete(len(case.request))


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (HEAD + b"Content-Length: 2000\r\n\r\n", 413),
        (HEAD + b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n", 413),
        (HEAD + b"Transfer-Encoding: chunked\r\n\r\n400\r\n" + b"x" * 1024 + b"\r\n400\r\n", 413),
        (HEAD + b"X: " + b"a" * 5000, 431),
    ],
    ids=[
        "a length over the limit",
        "a length thousands of digits long",
        "chunks over the limit",
        "headers with no end",
    ],
)
def test_what_is_over_a_limit_is_refused_as_soon_as_it_shows(
    request_bytes: bytes, status: int
) -> None:
    with pytest.raises(Refusal) as refused:
        Framer(4096, 1500).advance(request_bytes)
    assert refused.value.status == status


def test_expect_100_continue_is_noticed_while_the_body_is_awaited() -> None:
    framer = Framer(65536, 1 << 20)
    head = HEAD + b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n"
    assert framer.advance(head) is None
    assert framer.expects_continue
    assert framer.advance(head + b"{}") == Complete(len(head) + 2)
