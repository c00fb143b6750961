"""The two lanes that carry a plain call to `Verbs.answer` without Flask.

With NodeNames and a remembered reply, answering takes less time than Flask's request
context, routing and response objects, so the calls kube-scheduler makes for every pod
skip them:

- `direct_lane`: the worker's lane entry (server/transport/worker.py), for a POST of
  JSON its event loop has read whole and found plain (filter, prioritize, and bind in a
  thread only). Its answer is counted and logged once the reply is sent.
- `wsgi_lane`: a WSGI application in front of Flask, for a plain filter or prioritize
  call that reaches the application through gunicorn (the direct lane off: an access log,
  request hooks) or any other WSGI server.

Either leaves to Flask, untouched, what is not plainly one of its verbs: another path, a
body over the limit, and a body that turns out not to be the protocol's (Flask says what
is wrong with it). The answers, their headers, the metrics and the decision log are the
same whichever way a call goes.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from policyext.server import wire
from policyext.server.entrance import Verbs
from policyext.server.statuses import OK, OK_LABEL, OK_LINE, status_line
from policyext.server.transport.plain import Lane

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


def hot_paths(prefix: str) -> dict[str, str]:
    """The paths of the verbs kube-scheduler calls for every pod: path -> verb."""
    return {f"{prefix}/{verb}": verb for verb in ("filter", "prioritize")}


def lane_paths(prefix: str) -> dict[str, str]:
    """The paths of the direct lane: the hot verbs, and bind (in a thread only)."""
    return {**hot_paths(prefix), f"{prefix}/bind": "bind"}


def direct_lane(verbs: Verbs, paths: Mapping[str, str], max_body: int) -> Lane:
    """The worker's lane entry for the verbs of `paths` (path -> verb): the status line and
    JSON reply to a POST of `data` as application/json to `path`, and what counts and logs
    it, to be called once the reply is sent (after a filter call, it also works out the
    prioritize reply ahead); None when the request is Flask's to answer."""
    answer = verbs.answer
    count = verbs.metrics.count

    def lane(path: str, data: bytes) -> tuple[str, bytes, Callable[[], None]] | None:
        if len(data) > max_body:
            return None
        verb = paths.get(path)
        if verb is None:
            return None
        try:
            status, body, account = answer(verb, data, True)
        except wire.WireError:
            return None

        def count_and_account() -> None:
            count(verb, OK_LABEL if status == OK else str(status))
            account()

        return OK_LINE if status == OK else status_line(status), body, count_and_account

    return lane


def wsgi_lane(
    verbs: Verbs, paths: Mapping[str, str], max_body: int, flask_app: WSGIApplication
) -> WSGIApplication:
    """A WSGI application: the verbs of `paths` (path -> verb) answered here, everything
    else given to `flask_app`."""
    answer = verbs.answer
    count = verbs.metrics.count

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        verb = paths.get(path)
        if (
            verb is None
            or environ.get("REQUEST_METHOD") != "POST"
            or environ.get("CONTENT_TYPE") != "application/json"
        ):
            return flask_app(environ, start_response)
        length = environ.get("CONTENT_LENGTH", "")
        if not length.isdigit() or int(length) > max_body:
            return flask_app(environ, start_response)  # chunked, or 413
        try:
            data = environ["wsgi.input"].read(int(length)) if length != "0" else b""
        except Exception as e:  # the connection broke: Flask meets the same error
            environ["wsgi.input"] = _Failing(e)
            return flask_app(environ, start_response)
        try:
            if len(data) != int(length):
                raise wire.WireError("short body")  # a disconnect: Flask says 400
            status, body, account = answer(verb, data)
        except wire.WireError:
            environ["wsgi.input"] = io.BytesIO(data)
            return flask_app(environ, start_response)
        count(verb, OK_LABEL if status == OK else str(status))
        account()
        start_response(status_line(status), _headers(body))
        return [body]

    return app


class _Failing(io.RawIOBase):
    """A request body whose reading fails as it did for the WSGI lane."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def readable(self) -> bool:
        return True

    def readinto(self, _buffer: Any) -> int:
        raise self.error


def _headers(body: bytes) -> list[tuple[str, str]]:
    """What Flask's Response sends for a JSON body."""
    return [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
