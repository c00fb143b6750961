"""One entrance per verb (server/entrance.py): whichever way a call comes (the worker's
direct lane, the WSGI lane in front of Flask, Flask's view), it is answered by
`Verbs.answer`, once, and the reply is what that function gave.

Called in process: the direct lane's entry as the worker calls it, the application as
served (the WSGI lane first) and the same application without its lane (Flask alone).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from prometheus_client import CollectorRegistry

from policyext.cluster.snapshot import SnapshotSource, read_objects
from policyext.policy.compile import load_policy_set
from policyext.server.app import Options, create_app
from policyext.server.entrance import Answer, Verbs
from policyext.server.metrics import Metrics
from policyext.store import PolicyStore
from tests.server.harness import CLUSTER, RULES
from tests.server.kube import fixture_bytes

NOW = 1_780_000_000 * 1_000_000_000
BODIES = {
    "filter": fixture_bytes("filter-names.request.json").rstrip(),
    "prioritize": fixture_bytes("prioritize-names.request.json").rstrip(),
    "preempt": fixture_bytes("preempt-victims.request.json").rstrip(),
    "bind": fixture_bytes("bind.request.json").rstrip(),
}
# the verbs each way carries (preempt only through Flask; bind not in the WSGI lane)
WAYS = {
    "the direct lane": ("filter", "prioritize", "bind"),
    "the WSGI lane": ("filter", "prioritize"),
    "Flask's view": ("filter", "prioritize", "preempt", "bind"),
}


@pytest.fixture
def entered(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, bytes]]]:
    """The calls of `Verbs.answer`: the verb and the body of the reply it gave."""
    calls: list[tuple[str, bytes]] = []
    answer = Verbs.answer

    def recorded(self: Verbs, verb: str, data: bytes, sent_first: bool = False) -> Answer:
        given = answer(self, verb, data, sent_first)
        calls.append((verb, given[1]))
        return given

    monkeypatch.setattr(Verbs, "answer", recorded)
    yield calls


def _app() -> Flask:
    store = PolicyStore()
    assert store.reload(lambda: load_policy_set([RULES]), "rules").ok
    source = SnapshotSource(read_objects(CLUSTER))
    metrics = Metrics(CollectorRegistry())
    return create_app(store, source, None, metrics, Options(), lambda: NOW)


def _wsgi(app: Callable[..., Any], verb: str) -> bytes:
    body = BODIES[verb]
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": f"/{verb}",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": "application/json",
    }
    statuses: list[str] = []
    reply = b"".join(app(environ, lambda status, _headers: statuses.append(status)))
    assert statuses[0].startswith("200")
    return reply


def _direct(app: Flask, verb: str) -> bytes:
    answered = app.extensions["policyext.direct"](f"/{verb}", BODIES[verb])
    assert answered is not None
    status, reply, account = answered
    account()
    assert status.startswith("200")
    return reply


def _flask_alone(app: Flask, verb: str) -> bytes:
    return _wsgi(lambda e, s: Flask.wsgi_app(app, e, s), verb)


CARRY: dict[str, Callable[[Flask, str], bytes]] = {
    "the direct lane": _direct,
    "the WSGI lane": _wsgi,
    "Flask's view": _flask_alone,
}


@pytest.mark.parametrize(
    ("way", "verb"), [(way, verb) for way, verbs in WAYS.items() for verb in verbs]
)
def test_every_way_a_call_comes_reaches_the_verbs_one_entrance_once(
    entered: list[tuple[str, bytes]], way: str, verb: str
) -> None:
    reply = CARRY[way](_app(), verb)
    assert entered == [(verb, reply)]


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_the_lanes_and_flask_give_the_same_reply_to_the_same_call(verb: str) -> None:
    replies = {way: CARRY[way](_app(), verb) for way in CARRY}
    assert len(set(replies.values())) == 1, replies
