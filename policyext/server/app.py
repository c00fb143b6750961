"""The Flask application of one worker, put together: the verbs' views
(server/verb_views.py) and the operations' (server/operations.py), which listener answers
which (server/listeners.py), the error handlers, and the lanes that carry plain calls to
the verbs without Flask (server/lanes.py). Every verb is answered by `Verbs.answer`
(server/entrance.py), whichever way it comes; every status and error body is decided in
server/statuses.py.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from policyext.policy import LiveNodeSource
from policyext.server import statuses, wire
from policyext.server.binding import DEFAULT_SCHEDULER, Binder, BindVerb
from policyext.server.entrance import AuditSink, Verbs
from policyext.server.lanes import direct_lane, hot_paths, lane_paths, wsgi_lane
from policyext.server.listeners import Listener, current_listener, current_trusted
from policyext.server.metrics import Metrics
from policyext.server.operations import INTROSPECTION_VIEWS, OPS_VIEWS, add_operation_views
from policyext.server.verb_views import VERB_VIEWS, add_verb_views
from policyext.store import PolicyStore

DEFAULT_MAX_BODY = 64 * 1024 * 1024
DEFAULT_REQUEST_DEADLINE = 3.0
log = logging.getLogger("policyext.server")


__all__ = ["Binder", "Options", "create_app"]


@dataclass
class Options:
    url_prefix: str = ""
    max_body: int = DEFAULT_MAX_BODY
    # seconds a request may spend evaluating before what is left fails (failurePolicy
    # decides): kube-scheduler's httpTimeout is 5 s by default, and an answer beats none
    request_deadline: float = DEFAULT_REQUEST_DEADLINE
    # the operations listener's address (--ops-bind): with it, each listener answers its
    # own endpoints only (server/listeners.py), and says where the others are
    ops_bind: str | None = None
    # /explain and /policies: what the policies decide and why, for people (off: 404)
    introspection: bool = True
    # /bind binds (--bind-verb), and only the pods of these schedulers (--scheduler-name)
    bind_verb: bool = False
    scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER,)


def create_app(
    store: PolicyStore,
    source: LiveNodeSource | None = None,
    binder: Binder | None = None,
    metrics: Metrics | None = None,
    options: Options | None = None,
    clock: Callable[[], int] = time.time_ns,
    audits: AuditSink | None = None,
) -> Flask:
    """The application. `source` resolves NodeNames and knows the pods; `binder` creates
    Bindings (both come from cluster/ or a snapshot, wired by the CLI)."""
    if source is not None and not isinstance(source, LiveNodeSource):
        # checked once here: the verbs, the memo and /readyz then use it without probing
        raise TypeError(f"{type(source).__name__} is not a LiveNodeSource")
    options = options or Options()
    metrics = metrics or Metrics()
    app = Flask("policyext")
    app.config["MAX_CONTENT_LENGTH"] = options.max_body
    prefix = "/" + options.url_prefix.strip("/") if options.url_prefix.strip("/") else ""
    binding = BindVerb(
        store,
        source,
        binder,
        metrics,
        enabled=options.bind_verb,
        scheduler_names=options.scheduler_names,
        clock=clock,
        request_deadline=options.request_deadline,
    )
    verbs = Verbs(store, source, metrics, clock, prefix, options.request_deadline, audits, binding)
    add_verb_views(app, verbs, prefix)
    add_operation_views(app, store, source, metrics, clock, options.request_deadline)
    _serve_each_view_on_its_listener(app, options)
    _answer_errors(app, metrics, options)
    _carry_plain_calls_around_flask(app, verbs, prefix, options)
    # what the HTTP server refuses before the application sees it, counted in its metrics
    # (server/transport/worker.py)
    app.extensions["policyext.refused"] = metrics.count_refused
    return app


def _serve_each_view_on_its_listener(app: Flask, options: Options) -> None:
    """Refuse an endpoint of the other listener (with --ops-bind), or one of introspection
    when it is off or the client's certificate is not allowed."""

    @app.before_request
    def answered_here() -> Response | None:
        view = request.endpoint
        if view is None:
            return None  # no such path, or the wrong method: said as usual
        if view in INTROSPECTION_VIEWS:
            if not options.introspection:
                return _error(*statuses.turned_off(request.path))
            if not current_trusted():
                return _error(*statuses.needs_certificate(request.path))
        listener = current_listener()
        if listener is Listener.VERBS and view in OPS_VIEWS:
            return _error(*statuses.on_operations_listener(request.path, options.ops_bind))
        if listener is Listener.OPS and view in VERB_VIEWS:
            return _error(*statuses.on_verbs_listener(request.path))
        return None


def _answer_errors(app: Flask, metrics: Metrics, options: Options) -> None:
    """A request that failed answered with its status and JSON error body (statuses.py),
    and every response counted by its endpoint and status."""

    def failed(e: Exception) -> Response:
        return _error(
            statuses.status_of(e), statuses.error_message(e, request.method, options.max_body)
        )

    @app.errorhandler(wire.WireError)
    def bad_request(e: wire.WireError) -> Response:
        response = failed(e)
        metrics.count(_verb(), str(response.status_code))
        return response

    app.register_error_handler(statuses.UnsupportedMediaType, failed)

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException) -> Response:
        response = failed(e)
        if isinstance(e, MethodNotAllowed) and e.valid_methods:
            response.headers["Allow"] = ", ".join(e.valid_methods)
        return response

    @app.errorhandler(Exception)
    def internal_error(e: Exception) -> Response:
        log.exception("unexpected error answering %s %s", request.method, request.path)
        return failed(e)

    @app.after_request
    def count(response: Response) -> Response:
        if response.status_code != statuses.BAD_REQUEST:  # (counted by bad_request)
            metrics.count(_verb(), str(response.status_code))
        return response


def _carry_plain_calls_around_flask(
    app: Flask, verbs: Verbs, prefix: str, options: Options
) -> None:
    """The lanes in front of Flask (server/lanes.py): the WSGI lane for filter and
    prioritize, and the worker's direct lane for filter, prioritize and bind (bind waits on
    the API server: a thread's, never the event loop's)."""
    flask_only = app.wsgi_app
    with_lane = wsgi_lane(verbs, hot_paths(prefix), options.max_body, flask_only)
    if options.ops_bind is None:
        app.wsgi_app = with_lane  # type: ignore[method-assign,assignment]
    else:

        def by_listener(environ: Any, start_response: Any) -> Any:
            """The operations listener's requests go to Flask whatever their path: it says
            that a verb is not answered there."""
            if current_listener() is Listener.OPS:
                return flask_only(environ, start_response)
            return with_lane(environ, start_response)

        app.wsgi_app = by_listener  # type: ignore[method-assign]
    # the worker's direct lane (server/transport/worker.py)
    app.extensions["policyext.direct"] = direct_lane(verbs, lane_paths(prefix), options.max_body)
    app.extensions["policyext.direct.threads_only"] = frozenset((f"{prefix}/bind",))


def _error(status: int, message: str) -> Response:
    body = statuses.error_body(status, message)
    return Response(body, status=status, mimetype="application/json")


def _verb() -> str:
    """The endpoint's name for metric labels: bounded, whatever paths clients try."""
    rule = request.url_rule
    if rule is not None:
        return rule.rule.rstrip("/").rsplit("/", 1)[-1] or "root"
    if isinstance(request.routing_exception, MethodNotAllowed):  # a known path, wrong method
        return request.path.rstrip("/").rsplit("/", 1)[-1] or "root"
    return "unknown"
