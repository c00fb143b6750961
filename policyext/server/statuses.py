"""Every HTTP status the extender answers with, and every JSON error body, decided here.

What the application answers (Flask's views and the lanes in front of it alike): 200 for
every protocol answer (a filter that finds no node is still a 200 with FailedNodes), 400
for a body that is not the protocol's shape, 413 over the size limit, 415 for a non-JSON
body, 404/405 for other paths and methods, 404 for an endpoint of the other listener or
one turned off, 403 for introspection without an allowed client certificate, 503 from
/readyz while not ready, 500 for a bug (logged).

What the HTTP transport refuses on its own, before the application sees the request (a
whole response, the connection closed after it: `Refused`): 408 for a request not whole in
time, 431 and 413 over the limits, 503 over the bytes or connections a worker holds, 403
for a client certificate not allowed, and gunicorn's refusals of malformed HTTP (400, 414,
431).

Every error body is `error_body`'s: {"error": what is wrong, "status": the status}.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Final

import orjson
from gunicorn.http import errors as http_errors
from werkzeug.exceptions import (
    HTTPException,
    MethodNotAllowed,
    NotFound,
    RequestEntityTooLarge,
)

from policyext.server import wire

OK: Final = 200
BAD_REQUEST: Final = 400
FORBIDDEN: Final = 403
NOT_FOUND: Final = 404
NOT_READY: Final = 503
INTERNAL_ERROR: Final = "internal error (logged by the extender)"


def status_line(status: int) -> str:
    """`500 INTERNAL SERVER ERROR`, as Flask writes it."""
    return f"{status} {HTTPStatus(status).phrase.upper()}"


# the label and status line of a protocol answer, made once (every call kube-scheduler makes)
OK_LABEL: Final = str(OK)
OK_LINE: Final = status_line(OK)


def error_body(status: int, message: str) -> bytes:
    """The JSON body of every error the extender answers."""
    return orjson.dumps({"error": message, "status": status})


# -- what the application answers


class UnsupportedMediaType(Exception):
    """A body whose Content-Type is not JSON; `args[0]` is the type."""


def status_of(error: BaseException) -> int:
    """The status of a request that failed with `error`."""
    if isinstance(error, wire.WireError):
        return BAD_REQUEST
    if isinstance(error, UnsupportedMediaType):
        return 415
    if isinstance(error, HTTPException):
        return error.code or 500
    return 500


def error_message(error: BaseException, method: str, max_body: int) -> str:
    """What the error body says of a request that failed with `error` (its status is
    `status_of(error)`)."""
    if isinstance(error, wire.WireError):
        return str(error)
    if isinstance(error, UnsupportedMediaType):
        return f"expected Content-Type application/json, got {error.args[0]}"
    if isinstance(error, NotFound):
        return "no such endpoint"
    if isinstance(error, MethodNotAllowed):
        return f"method {method} is not allowed here"
    if isinstance(error, RequestEntityTooLarge):
        return body_too_large(max_body).message
    if isinstance(error, HTTPException):
        return error.description or error.name
    return INTERNAL_ERROR


def readiness(ready: bool) -> int:
    """/readyz's status: a load balancer or the kubelet reads only that."""
    return OK if ready else NOT_READY


def turned_off(path: str) -> tuple[int, str]:
    """An introspection endpoint with --introspection off."""
    return NOT_FOUND, f"{path} is turned off (--introspection off)"


def needs_certificate(path: str) -> tuple[int, str]:
    """An introspection endpoint asked on a connection without an allowed client
    certificate."""
    return (
        FORBIDDEN,
        f"{path} needs an accepted client certificate (--tls-client-ca, --tls-client-allow)",
    )


def on_operations_listener(path: str, ops_bind: str | None) -> tuple[int, str]:
    """An operations endpoint asked on the verbs listener (--ops-bind)."""
    return (
        NOT_FOUND,
        f"{path} is served on the operations listener ({ops_bind}, --ops-bind), not on this one",
    )


def on_verbs_listener(path: str) -> tuple[int, str]:
    """A verb asked on the operations listener (--ops-bind)."""
    return (
        NOT_FOUND,
        f"{path} is served on the verbs listener (--bind), not on the operations listener",
    )


# -- what the transport refuses on its own

# the reason phrases of the transport's refusals (413's as RFC 9110 names it)
REASONS: Final = {
    400: "Bad Request",
    403: "Forbidden",
    408: "Request Timeout",
    413: "Content Too Large",
    414: "URI Too Long",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}
# the interim response to `Expect: 100-continue`, once the header section is accepted
CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"


@dataclass(frozen=True, slots=True)
class Refused:
    """A request the transport answers itself, then closes the connection."""

    status: int
    message: str

    @property
    def reason(self) -> str:
        return REASONS[self.status]

    def response(self) -> bytes:
        """The whole HTTP response, with the application's JSON error body."""
        body = error_body(self.status, self.message)
        head = (
            f"HTTP/1.1 {self.status} {self.reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        return head.encode("latin-1") + body


def head_too_large(max_head: int) -> Refused:
    return Refused(
        431,
        f"request header fields too large: no end of the header section in {max_head} bytes",
    )


def body_too_large(limit: int) -> Refused:
    return Refused(413, f"the body is larger than the limit of {limit} bytes")


def not_whole_in_time(seconds: float, progress: str) -> Refused:
    return Refused(408, f"the request was not complete after {seconds:.1f} s ({progress})")


def too_many_bytes(max_buffered: int) -> Refused:
    return Refused(
        503,
        f"the server is reading too many request bytes at once (--max-buffered "
        f"{max_buffered}); try again",
    )


def too_many_connections(cap: int) -> Refused:
    return Refused(503, f"too many connections: {cap} open on this listener, none idle; try again")


def certificate_not_allowed(names: str) -> Refused:
    return Refused(
        FORBIDDEN, f"the client certificate's names ({names}) are not in --tls-client-allow"
    )


# requests gunicorn's parser refuses before the application sees them, and the status of each
_MALFORMED: Final[tuple[tuple[type[Exception], int], ...]] = (
    (http_errors.LimitRequestLine, 414),
    (http_errors.LimitRequestHeaders, 431),
    (http_errors.InvalidRequestLine, 400),
    (http_errors.InvalidRequestMethod, 400),
    (http_errors.InvalidHTTPVersion, 400),
    (http_errors.InvalidHeaderName, 400),
    (http_errors.InvalidHeader, 400),
    (http_errors.ObsoleteFolding, 400),
    (http_errors.InvalidChunkSize, 400),
    (http_errors.ChunkMissingTerminator, 400),
)


def malformed(error: BaseException) -> Refused | None:
    """The refusal of a request gunicorn could not parse, as a JSON error like the
    application's; None for an error that is gunicorn's to answer (its HTML page)."""
    if isinstance(error, http_errors.InvalidResponseHeader):
        return None
    status = next((s for kind, s in _MALFORMED if isinstance(error, kind)), None)
    if status is None:
        return None
    return Refused(status, f"{REASONS[status].lower()}: {error}")
