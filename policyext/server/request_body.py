"""The body of a request Flask answers, read whole and held to the limit."""

from __future__ import annotations

from typing import Any, Final

from flask import request
from gunicorn.http import errors as http_errors

from policyext.server import wire
from policyext.server.statuses import UnsupportedMediaType

# what a chunked body is read in (Werkzeug checks the limit on each read)
CHUNKED_READ: Final = 64 * 1024


def raw_body() -> bytes:
    """The body. Werkzeug holds it to `max_body` (MAX_CONTENT_LENGTH): a Content-Length
    over it before reading, a chunked body by raising 413 on a read past it (gunicorn
    sets wsgi.input_terminated); and the worker's framing refuses either before the
    application sees it."""
    mimetype = request.mimetype
    if mimetype and mimetype != "application/json":
        raise UnsupportedMediaType(mimetype)
    if request.content_length is not None:
        return request.get_data(cache=False)
    # a chunked body is read until it ends, never in one read(): Werkzeug's readall
    # stops at the limit and returns what it has, where a read past it answers 413
    chunks: list[bytes] = []
    while True:
        try:
            chunk = request.stream.read(CHUNKED_READ)
        except (http_errors.ParseException, http_errors.NoMoreData) as e:
            raise wire.WireError(chunked_framing_error(e)) from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def json_body() -> dict[str, Any]:
    return wire.decode(raw_body())


def chunked_framing_error(e: Exception) -> str:
    """What is wrong with a chunked body gunicorn could not read, in the client's terms
    (gunicorn closes the connection after it: where the next request starts is unknown)."""
    if isinstance(e, http_errors.InvalidChunkSize):
        what = f"invalid chunk size {_shown(e.data)}"
    elif isinstance(e, http_errors.ChunkMissingTerminator):
        what = (
            f"chunk data not followed by CRLF (found {_shown(e.term)})"
            if e.term
            else "the body ended before its last chunk and its CRLF"
        )
    elif isinstance(e, http_errors.InvalidChunkExtension):
        reason = str(e.reason)
        what = "invalid chunk extension" + ("" if "chunk extension" in reason else f" ({reason})")
    elif isinstance(e, (http_errors.InvalidHeader, http_errors.InvalidHeaderName)):
        what = f"invalid trailer ({e})"
    elif isinstance(e, http_errors.LimitRequestHeaders):
        what = f"trailer section too large ({e})"
    elif isinstance(e, http_errors.NoMoreData):
        what = "the body ended before its last chunk"
    else:
        what = str(e)
    return f"the chunked body is malformed: {what}"


def _shown(data: object) -> str:
    """Bytes from the wire as the client can read them: printable ASCII, escapes for
    the rest, at most 40 bytes."""
    raw = data if isinstance(data, bytes) else str(data).encode()
    return repr(raw[:40].decode("latin-1"))
