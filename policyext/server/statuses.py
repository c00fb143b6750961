"""HTTP status codes and error bodies, decided in one place for Flask's views and the hot
path alike: 200 for every protocol answer (a filter that finds no node is still a 200 with
FailedNodes), 400 for a body that is not the protocol's shape, 413 over the size limit,
415 for a non-JSON body, 404/405 for other paths and methods, 500 for a bug (logged), and
a JSON error body with each."""

from __future__ import annotations

from http import HTTPStatus
from typing import Final

import orjson
from werkzeug.exceptions import HTTPException

from policyext.server import wire

OK: Final = 200
INTERNAL_ERROR: Final = "internal error (logged by the extender)"


class UnsupportedMediaType(Exception):
    """A body whose Content-Type is not JSON; `args[0]` is the type."""


def status_of(error: BaseException) -> int:
    """The status of a request that failed with `error`."""
    if isinstance(error, wire.WireError):
        return 400
    if isinstance(error, UnsupportedMediaType):
        return 415
    if isinstance(error, HTTPException):
        return error.code or 500
    return 500


def status_line(status: int) -> str:
    """`500 INTERNAL SERVER ERROR`, as Flask writes it."""
    return f"{status} {HTTPStatus(status).phrase.upper()}"


def error_body(status: int, message: str) -> bytes:
    return orjson.dumps({"error": message, "status": status})
