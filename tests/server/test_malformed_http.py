"""HTTP that gunicorn's parser refuses (a request line or a header it cannot read, a version
other than 1.0 and 1.1, a request line or header section over the limits) is answered with
the status of its kind and the application's JSON error, and the connection is closed.

The requests are written byte for byte on raw sockets: no HTTP client sends them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from gunicorn.http import errors as http_errors

from policyext.server import statuses
from tests.server.harness import ExtenderServer
from tests.server.test_chunked_framing import exchange

HEADERS = b"Host: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"


@dataclass(frozen=True)
class Malformed:
    name: str
    request: bytes
    status: int
    reason: str  # how the error begins: the status's reason phrase
    says: str  # gunicorn's words for the fault, further on in the error


def post(request_line: bytes, extra: bytes = b"") -> bytes:
    return request_line + b"\r\n" + HEADERS + extra + b"\r\n{}"


MALFORMED = [
    Malformed(
        "a request line over the limit",
        post(b"POST /filter?" + b"a" * 9000 + b" HTTP/1.1"),
        414,
        "uri too long: ",
        "exceeds limit",
    ),
    Malformed(
        "more headers than the limit",
        post(b"POST /filter HTTP/1.1", b"".join(b"X-P-%d: a\r\n" % i for i in range(200))),
        431,
        "request header fields too large: ",
        "Number of headers",
    ),
    Malformed(
        "a header line without a colon",
        post(b"POST /filter HTTP/1.1", b"NoColonHere\r\n"),
        400,
        "bad request: ",
        "Invalid HTTP request line",
    ),
    Malformed(
        "a lowercase method",
        post(b"post /filter HTTP/1.1"),
        400,
        "bad request: ",
        "Invalid HTTP method",
    ),
    Malformed(
        "HTTP/2.0 in the request line",
        post(b"POST /filter HTTP/2.0"),
        400,
        "bad request: ",
        "Invalid HTTP Version",
    ),
    Malformed(
        "a bracket in a header name",
        post(b"POST /filter HTTP/1.1", b"Bad(Name: x\r\n"),
        400,
        "bad request: ",
        "Invalid HTTP header name",
    ),
    Malformed(
        "NUL in a header value",
        post(b"POST /filter HTTP/1.1", b"X-A: a\x00b\r\n"),
        400,
        "bad request: ",
        "Invalid HTTP Header",
    ),
    Malformed(
        "a header folded onto the next line",
        post(b"POST /filter HTTP/1.1", b"X-A: a\r\n  b\r\n"),
        400,
        "bad request: ",
        "Obsolete line folding",
    ),
]


@pytest.mark.parametrize("malformed", MALFORMED, ids=[m.name for m in MALFORMED])
def test_http_the_parser_refuses_is_its_status_with_a_json_error_and_the_connection_closed(
    demo_server: ExtenderServer, malformed: Malformed
) -> None:
    tracebacks = demo_server.stderr_text().count("Traceback")
    status, headers, body = exchange(demo_server, malformed.request)
    assert status == malformed.status, body
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    error = json.loads(body)
    assert error["status"] == malformed.status
    assert error["error"].startswith(malformed.reason), error
    assert malformed.says in error["error"], error
    assert demo_server.get("/healthz").status == 200
    assert demo_server.stderr_text().count("Traceback") == tracebacks


# what gunicorn's Python parser raises where its C parser (the one `serve` runs) says
# InvalidHeader, and the chunk errors of a body gunicorn reads itself (the worker reads
# chunked bodies before it does): no request reaches these through `serve` today, and
# should a parser raise them, they are still answered as the others. Beside them, one
# that requests do reach (above), refused with another status.
PARSER_ERRORS = [
    (http_errors.ObsoleteFolding("X-Folded"), 400, "bad request: Obsolete line folding"),
    (http_errors.InvalidChunkSize(b"zz"), 400, "bad request: Invalid chunk size"),
    (http_errors.ChunkMissingTerminator(b"xy"), 400, "bad request: Invalid chunk terminator"),
    (http_errors.LimitRequestLine(9000, 8190), 414, "uri too long: Request Line is too large"),
]


@pytest.mark.parametrize(
    ("error", "status", "begins"), PARSER_ERRORS, ids=[type(e[0]).__name__ for e in PARSER_ERRORS]
)
def test_a_parser_error_no_request_reaches_through_serve_is_still_refused_with_its_status(
    error: Exception, status: int, begins: str
) -> None:
    refused = statuses.malformed(error)

    assert refused is not None
    assert refused.status == status
    assert refused.message.startswith(begins), refused.message


def test_a_response_header_error_is_left_to_gunicorn() -> None:
    assert statuses.malformed(http_errors.InvalidResponseHeader("X-Bad")) is None
