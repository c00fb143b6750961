"""The extender verbs as Flask views: what the lanes leave to Flask (another Content-Type,
a chunked body, a body that is not the protocol's), and preempt. Each view reads the body
and sends what `Verbs.answer` gives (server/entrance.py); Flask's error handlers answer a
body it cannot read (server/app.py), and its `after_request` counts the status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from flask import Flask, Response

from policyext.server.entrance import VERBS, Verbs
from policyext.server.request_body import raw_body

# the views' names (Flask's endpoints), for the listener each is served on
VERB_VIEWS: Final = frozenset(f"{verb}_view" for verb in VERBS)


def add_verb_views(app: Flask, verbs: Verbs, prefix: str) -> None:
    """POST <prefix>/<verb> for each of the four verbs."""
    for verb in VERBS:
        app.add_url_rule(f"{prefix}/{verb}", f"{verb}_view", _view(verbs, verb), methods=["POST"])


def _view(verbs: Verbs, verb: str) -> Callable[[], Response]:
    def view() -> Response:
        status, body, account = verbs.answer(verb, raw_body())
        account()
        return Response(body, status=status, mimetype="application/json")

    return view
