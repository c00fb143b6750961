"""filter and prioritize answered in front of Flask: the same status, headers, body and
metrics as Flask gives, whichever of the two answers a request.

Called as WSGI applications in process: `app` is the application as served (the hot path
first), `Flask.wsgi_app` the same application without it.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from prometheus_client import CollectorRegistry

from policyext.cluster.snapshot import SnapshotSource, read_objects
from policyext.policy.compile import load_policy_set
from policyext.server.app import Options, create_app
from policyext.server.metrics import Metrics
from policyext.store import PolicyStore
from tests.server.harness import CLUSTER, RULES
from tests.server.kube import fixture_bytes

NAMES = fixture_bytes("filter-names.request.json").rstrip()
NOW = 1_780_000_000 * 1_000_000_000
LIMIT = 64 * 1024


@dataclass(frozen=True)
class Call:
    name: str
    path: str = "/filter"
    body: bytes = NAMES
    content_type: str | None = "application/json"
    length: str | None = None  # Content-Length, when not the body's
    method: str = "POST"
    broken: bool = False  # reading the body fails (the connection broke)
    chunked: bool = False  # no Content-Length: read until it ends, as gunicorn gives it


class BrokenBody(io.RawIOBase):
    def readable(self) -> bool:
        return True

    def readinto(self, _buffer: Any) -> int:
        raise ConnectionResetError("the client went away")


CALLS = [
    Call("filter"),
    Call("prioritize", path="/prioritize"),
    Call("a charset in the content type", content_type="application/json; charset=utf-8"),
    Call("no content type", content_type=None),
    Call("another content type", content_type="text/plain"),
    Call("malformed JSON", body=b'{"Pod" {}}'),
    Call("the wrong shape", body=b'{"Pod": {}, "NodeNames": 7}'),
    Call("an empty body", body=b""),
    Call("a body cut short", length=str(len(NAMES) + 10)),
    Call("a body over the limit", body=b" " * (LIMIT + 1)),
    Call("a chunked body", chunked=True),
    Call("a chunked body over the limit", body=NAMES + b" " * LIMIT, chunked=True),
    Call("a GET", method="GET", body=b""),
    Call("a path with a slash more", path="/filter/"),
    Call("a connection that breaks while the body is read", broken=True),
]


def _app() -> tuple[Flask, Metrics]:
    """An application of its own: its own policy set (so its own caches) and metrics."""
    store = PolicyStore()
    assert store.reload(lambda: load_policy_set([RULES]), "rules").ok
    metrics = Metrics(CollectorRegistry())
    source = SnapshotSource(read_objects(CLUSTER))
    return create_app(store, source, None, metrics, Options(max_body=LIMIT), lambda: NOW), metrics


@pytest.fixture
def app() -> Iterator[tuple[Flask, Metrics]]:
    yield _app()


@pytest.fixture(scope="module")
def twins() -> tuple[tuple[Flask, Metrics], tuple[Flask, Metrics]]:
    """Two applications that see the same calls in the same order: one answers them with
    Flask alone, the other as served."""
    return _app(), _app()


def _environ(call: Call) -> dict[str, Any]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": call.method,
        "PATH_INFO": call.path,
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": BrokenBody() if call.broken else io.BytesIO(call.body),
        "wsgi.errors": sys.stderr,
    }
    if call.chunked:
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
        environ["wsgi.input_terminated"] = True  # gunicorn's: the stream ends with the body
    else:
        environ["CONTENT_LENGTH"] = call.length if call.length is not None else str(len(call.body))
    if call.content_type is not None:
        environ["CONTENT_TYPE"] = call.content_type
    return environ


def _answer(wsgi: Any, call: Call) -> tuple[str, list[tuple[str, str]], bytes]:
    started: list[tuple[str, list[tuple[str, str]]]] = []
    body = b"".join(wsgi(_environ(call), lambda status, headers: started.append((status, headers))))
    [(status, headers)] = started
    return status, headers, body


def _counts(metrics: Metrics) -> dict[str, float]:
    """Every sample but the latency's (which differs from call to call)."""
    out = {}
    for family in metrics.registry.collect():
        for s in family.samples:
            if "duration" not in s.name:
                out[f"{s.name}{sorted(s.labels.items())}"] = s.value
    return out


@pytest.mark.parametrize("call", CALLS, ids=[c.name for c in CALLS])
def test_the_hot_path_answers_and_counts_exactly_as_flask_does(
    twins: tuple[tuple[Flask, Metrics], tuple[Flask, Metrics]], call: Call
) -> None:
    (flask_only, flask_metrics), (served, served_metrics) = twins
    for _ in range(2):  # the second time from the caches
        flask_answer = _answer(lambda e, s: Flask.wsgi_app(flask_only, e, s), call)
        assert _answer(served, call) == flask_answer
        assert _counts(served_metrics) == _counts(flask_metrics)


@pytest.mark.parametrize("path", ["/filter", "/prioritize"])
def test_a_plain_filter_or_prioritize_call_never_reaches_flask(
    app: tuple[Flask, Metrics], path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    flask_app, _ = app

    def no_flask(*_: object) -> None:
        raise AssertionError("Flask was asked")

    monkeypatch.setattr(flask_app, "full_dispatch_request", no_flask)
    status, headers, body = _answer(flask_app, Call(path, path=path))
    assert status == "200 OK"
    assert dict(headers)["Content-Type"] == "application/json"
    assert json.loads(body)


def test_an_unexpected_error_is_a_logged_500_with_a_json_body_as_in_flask(
    app: tuple[Flask, Metrics], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    flask_app, metrics = app

    def broken(*_: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr("policyext.server.verbs.prepare", broken)
    answers = []
    for wsgi in (lambda e, s: Flask.wsgi_app(flask_app, e, s), flask_app):
        with caplog.at_level("ERROR", "policyext.server"):
            caplog.clear()
            answers.append(_answer(wsgi, Call("filter")))
            assert "unexpected error answering POST /filter" in caplog.text
    assert answers[0] == answers[1]
    assert answers[0][0] == "500 INTERNAL SERVER ERROR"
    assert _counts(metrics)["policyext_requests_total[('code', '500'), ('verb', 'filter')]"] == 2


@pytest.mark.parametrize(
    ("size", "status"), [(LIMIT - 1, "200 OK"), (LIMIT + 1, "413 REQUEST ENTITY TOO LARGE")]
)
def test_the_application_holds_a_chunked_body_to_the_limit_itself(
    app: tuple[Flask, Metrics], size: int, status: str
) -> None:
    """Werkzeug's limit on the stream, without the worker's framing in front: a server
    that let an oversized chunked body through would still get its 413."""
    flask_app, _ = app
    body = NAMES + b" " * (size - len(NAMES))
    answered, _, reply = _answer(flask_app, Call("chunked", body=body, chunked=True))
    assert answered == status
    if size > LIMIT:
        assert json.loads(reply)["error"] == f"the body is larger than the limit of {LIMIT} bytes"
    else:
        assert json.loads(reply)["Error"] == ""


BIND = fixture_bytes("bind.request.json").rstrip()
BOUND = json.loads(BIND)


class _Binder:
    """Knows the fixture's pod (pending, the default scheduler's) and answers every bind of
    it with `message` ("": bound), or raises (a bug)."""

    def __init__(self, message: str | None) -> None:
        self.message = message

    def find_pod(self, namespace: str, name: str, uid: str) -> tuple[dict[str, Any], str]:
        meta = {"namespace": namespace, "name": name, "uid": BOUND["PodUID"]}
        return {"metadata": meta, "spec": {"schedulerName": "default-scheduler"}}, ""

    def bind(self, args: Any, pod: Any = None) -> str:
        if self.message is None:
            raise RuntimeError("a bug in the binder")
        return self.message


BIND_OUTCOMES = {
    "bound": ("", 200),
    "refused": ("pod shop/web is already bound to node general-b, not general-a", 200),
    "a bug in the binder": (None, 500),
    "a body that is not the protocol's": ("", 400),
    "a body over the limit": ("", 413),
}
BIND_BODIES = {400: b'{"PodName": 3}', 413: BIND + b" " * LIMIT}  # (else BIND)


def _bind(lane: bool, message: str | None, body: bytes) -> tuple[str, bytes, Any] | None:
    """A bind call answered by an application of its own, that binds (--bind-verb), over
    the fixtures' cluster: in the direct lane (None when the lane leaves it to Flask) or by
    Flask alone; its status line, body and counts."""
    metrics = Metrics(CollectorRegistry())
    store = PolicyStore()
    assert store.reload(lambda: load_policy_set([RULES]), "rules").ok
    source = SnapshotSource(read_objects(CLUSTER))
    flask_app = create_app(
        store, source, _Binder(message), metrics, Options(max_body=LIMIT, bind_verb=True)
    )
    assert "/bind" in flask_app.extensions["policyext.direct.threads_only"]
    if not lane:
        call = Call("bind", path="/bind", body=body)
        line, _, reply = _answer(lambda e, s: Flask.wsgi_app(flask_app, e, s), call)
        return line, reply, _counts(metrics)
    answered = flask_app.extensions["policyext.direct"]("/bind", body)
    if answered is None:
        return None
    line, reply, account = answered
    account()
    return line, reply, _counts(metrics)


@pytest.mark.parametrize("outcome", list(BIND_OUTCOMES))
def test_a_bind_in_the_direct_lane_is_answered_and_counted_as_flask_answers_it(
    outcome: str,
) -> None:
    message, status = BIND_OUTCOMES[outcome]
    body = BIND_BODIES.get(status, BIND)
    in_lane, by_flask = _bind(True, message, body), _bind(False, message, body)
    assert by_flask is not None and by_flask[0].startswith(str(status))
    if status == 200:
        assert json.loads(by_flask[1])["Error"] == message
    if status in BIND_BODIES:
        assert in_lane is None  # Flask says what is wrong with it
    else:
        assert in_lane == by_flask
