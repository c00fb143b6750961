"""The status and the JSON error's words of every kind of failure the application answers
(server/statuses.py), the HTTP errors no request of ours reaches included: a handler that
one day raises one is answered as the table says."""

from __future__ import annotations

import pytest
from werkzeug.exceptions import BadRequest, MethodNotAllowed, NotFound, RequestEntityTooLarge

from policyext.server import statuses, wire

FAILURES = [
    (wire.WireError("Pod: expected an object"), 400, "Pod: expected an object"),
    (
        statuses.UnsupportedMediaType("text/plain"),
        415,
        "expected Content-Type application/json, got text/plain",
    ),
    (NotFound(), 404, "no such endpoint"),
    (MethodNotAllowed(["POST"]), 405, "method PUT is not allowed here"),
    (RequestEntityTooLarge(), 413, "the body is larger than the limit of 2048 bytes"),
    (
        BadRequest("the header says one thing, the body another"),
        400,
        "the header says one thing, the body another",
    ),
    (ValueError("a bug"), 500, statuses.INTERNAL_ERROR),
]


@pytest.mark.parametrize(
    ("error", "status", "message"), FAILURES, ids=[type(f[0]).__name__ for f in FAILURES]
)
def test_a_failure_is_answered_with_its_status_and_words(
    error: BaseException, status: int, message: str
) -> None:
    assert statuses.status_of(error) == status
    assert statuses.error_message(error, "PUT", 2048) == message


def test_an_http_error_without_a_description_is_named() -> None:
    class Teapot(BadRequest):
        code = 418
        description = None

    assert statuses.status_of(Teapot()) == 418
    assert statuses.error_message(Teapot(), "GET", 1) == "I'm a teapot"  # its code's name
