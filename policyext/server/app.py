"""The Flask application: the extender verbs, /explain, and the operational endpoints.

Status codes and error bodies are decided in statuses.py, for these views and the hot
path alike.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from flask import Flask, Response, request
from gunicorn.http import errors as http_errors
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from policyext.cel import Timestamp
from policyext.policy import LiveNodeSource, evaluation_to_dict
from policyext.server import draining, verbs, wire
from policyext.server.binding import DEFAULT_SCHEDULER, Binder, BindVerb
from policyext.server.hotpath import (
    OK_LABEL,
    OK_LINE,
    AuditSink,
    HotVerbs,
    LaneAnswer,
    unexpected_error,
)
from policyext.server.listeners import Listener, current_listener, current_trusted
from policyext.server.metrics import Metrics
from policyext.server.statuses import (
    INTERNAL_ERROR,
    UnsupportedMediaType,
    error_body,
    status_line,
    status_of,
)
from policyext.store import PolicyStore

DEFAULT_MAX_BODY = 64 * 1024 * 1024
DEFAULT_REQUEST_DEADLINE = 3.0
# what a chunked body is read in (Werkzeug checks the limit on each read)
CHUNKED_READ = 64 * 1024
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


# the views of each listener when --ops-bind splits them
VERB_VIEWS = frozenset(("filter_view", "prioritize_view", "preempt_view", "bind_view"))
OPS_VIEWS = frozenset(("healthz", "readyz", "metrics_view", "explain_view", "policies"))
INTROSPECTION_VIEWS = frozenset(("explain_view", "policies"))


def _deadline(options: Options) -> float:
    return time.perf_counter() + options.request_deadline


def _json(data: object, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status=status, mimetype="application/json")


def _error(status: int, message: str) -> Response:
    return Response(error_body(status, message), status=status, mimetype="application/json")


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
    hot = HotVerbs(
        store, source, metrics, clock, options.max_body, prefix, options.request_deadline, audits
    )

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

    def body() -> dict[str, Any]:
        return wire.decode(raw_body())

    def timed(verb: str, run: Callable[[], verbs.VerbResult]) -> Response:
        started = time.perf_counter()
        result = run()
        metrics.observe(verb, result.evaluation, result.nodes, time.perf_counter() - started)
        return Response(result.body, status=200, mimetype="application/json")

    def now() -> Timestamp:
        return Timestamp(clock())

    # what HotVerbs.wsgi leaves to Flask: other content types, chunked bodies, bad input
    @app.post(f"{prefix}/filter")
    def filter_view() -> Response:
        return Response(hot.answer("filter", raw_body()), mimetype="application/json")

    @app.post(f"{prefix}/prioritize")
    def prioritize_view() -> Response:
        return Response(hot.answer("prioritize", raw_body()), mimetype="application/json")

    @app.post(f"{prefix}/preempt")
    def preempt_view() -> Response:
        args = wire.parse_preemption_args(body())
        policies = store.current
        return timed(
            "preempt", lambda: verbs.run_preempt(policies, source, args, now(), _deadline(options))
        )

    # the one function that answers /bind, in the direct lane and in Flask alike
    bind = BindVerb(
        store,
        source,
        binder,
        metrics,
        enabled=options.bind_verb,
        scheduler_names=options.scheduler_names,
        clock=clock,
        request_deadline=options.request_deadline,
    ).answer
    bind_path = f"{prefix}/bind"

    # what the direct lane leaves to Flask: other content types, chunked bodies, bad input
    @app.post(bind_path)
    def bind_view() -> Response:
        args = wire.parse_binding_args(body())
        return timed("bind", lambda: bind(args))

    def bind_directly(data: bytes) -> LaneAnswer | None:
        """bind in the worker's direct lane (a thread's: a bind waits on the API server),
        answered, counted and timed as `bind_view` answers it; None for a body it refuses
        (Flask then says why; `HotVerbs.direct` has left one over the limit to it)."""
        try:
            args = wire.parse_binding_args(wire.decode(data))
        except wire.WireError:
            return None
        started = time.perf_counter()
        try:
            result = bind(args)
        except Exception as e:  # a bug: answered as Flask answers it (internal_error)
            status, failed = unexpected_error(metrics, "bind", bind_path, e)
            return status_line(status), failed, lambda: None  # (counted already)
        seconds = time.perf_counter() - started

        def account() -> None:
            metrics.observe("bind", result.evaluation, result.nodes, seconds)
            metrics.count("bind", OK_LABEL)

        return OK_LINE, result.body, account

    hot.others[bind_path] = bind_directly

    @app.before_request
    def answered_here() -> Response | None:
        """Refuse an endpoint of the other listener (with --ops-bind), or one of
        introspection when it is off; None lets the view answer."""
        view = request.endpoint
        if view is None:
            return None  # no such path, or the wrong method: said as usual
        if view in INTROSPECTION_VIEWS:
            if not options.introspection:
                return _error(404, f"{request.path} is turned off (--introspection off)")
            if not current_trusted():
                return _error(
                    403,
                    f"{request.path} needs an accepted client certificate (--tls-client-ca, "
                    "--tls-client-allow)",
                )
        listener = current_listener()
        if listener is Listener.VERBS and view in OPS_VIEWS:
            return _error(
                404,
                f"{request.path} is served on the operations listener ({options.ops_bind}, "
                "--ops-bind), not on this one",
            )
        if listener is Listener.OPS and view in VERB_VIEWS:
            return _error(
                404,
                f"{request.path} is served on the verbs listener (--bind), not on the "
                f"operations listener",
            )
        return None

    @app.post("/explain")
    def explain_view() -> Response:
        args = wire.parse_extender_args(body(), nodes_required=False)
        started = time.perf_counter()
        ev, unknown = verbs.run_explain(store.current, source, args, now(), _deadline(options))
        metrics.observe("explain", ev, len(ev.names), time.perf_counter() - started)
        data = evaluation_to_dict(ev)
        data["unknownNodes"] = unknown
        return _json(data)

    @app.get("/healthz")
    def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:
        ready, detail = _readiness(store, source)
        return _json(detail, 200 if ready else 503)

    @app.get("/policies")
    def policies() -> Response:
        return _json(_policies(store, source))

    @app.get("/metrics")
    def metrics_view() -> Response:
        metrics.set_policy(store.current)
        data, content_type = metrics.render()
        return Response(data, status=200, content_type=content_type)

    @app.errorhandler(wire.WireError)
    def bad_request(e: wire.WireError) -> Response:
        code = status_of(e)
        metrics.count(_verb(), str(code))
        return _error(code, str(e))

    @app.errorhandler(UnsupportedMediaType)
    def unsupported(e: UnsupportedMediaType) -> Response:
        return _error(status_of(e), f"expected Content-Type application/json, got {e.args[0]}")

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException) -> Response:
        code = status_of(e)
        messages = {
            404: "no such endpoint",
            405: f"method {request.method} is not allowed here",
            413: f"the body is larger than the limit of {options.max_body} bytes",
        }
        response = _error(code, messages.get(code, e.description or e.name))
        if isinstance(e, MethodNotAllowed) and e.valid_methods:
            response.headers["Allow"] = ", ".join(e.valid_methods)
        return response

    @app.errorhandler(Exception)
    def internal_error(e: Exception) -> Response:
        log.exception("unexpected error answering %s %s", request.method, request.path)
        return _error(status_of(e), INTERNAL_ERROR)

    @app.after_request
    def count(response: Response) -> Response:
        if response.status_code != 400:
            metrics.count(_verb(), str(response.status_code))
        return response

    flask_only = app.wsgi_app
    with_hot_verbs = hot.wsgi(flask_only)
    if options.ops_bind is None:
        app.wsgi_app = with_hot_verbs  # type: ignore[method-assign,assignment]
    else:

        def by_listener(environ: Any, start_response: Any) -> Any:
            """The operations listener's requests go to Flask whatever their path: it says
            that a verb is not answered there."""
            if current_listener() is Listener.OPS:
                return flask_only(environ, start_response)
            return with_hot_verbs(environ, start_response)

        app.wsgi_app = by_listener  # type: ignore[method-assign]
    # for what answers outside the application (the HTTP server's refusals, wsgi.py)
    app.extensions["policyext.metrics"] = metrics
    # the worker's direct lane for plain filter, prioritize and bind calls
    # (server/direct.py); bind waits on the API server: a thread's, never the event loop's
    app.extensions["policyext.direct"] = hot.direct
    app.extensions["policyext.direct.threads_only"] = frozenset((bind_path,))
    return app


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


def _verb() -> str:
    """The endpoint's name for metric labels: bounded, whatever paths clients try."""
    rule = request.url_rule
    if rule is not None:
        return rule.rule.rstrip("/").rsplit("/", 1)[-1] or "root"
    if isinstance(request.routing_exception, MethodNotAllowed):  # a known path, wrong method
        return request.path.rstrip("/").rsplit("/", 1)[-1] or "root"
    return "unknown"


def _readiness(store: PolicyStore, source: LiveNodeSource | None) -> tuple[bool, dict[str, Any]]:
    """Ready or not, and which check is not: categories only. /readyz answers anyone who
    can reach the port (the kubelet's probe has no credentials), so the policies' names,
    files and reload errors, and the node source's errors, are on /policies (introspection)
    rather than here."""
    checks: dict[str, Any] = {"policies": "loaded" if store.loaded else "not loaded"}
    ready = store.loaded
    if source is not None:
        synced = source.ready()
        checks["nodeSource"] = "synced" if synced else "not synced"
        ready = ready and synced
    status = store.status
    if status is not None and not status.ok:
        checks["lastReload"] = "failed"
    if draining.active():  # SIGTERM: out of the load balancer's rotation, still answering
        checks["shutdown"] = "draining"
        ready = False
    return ready, {"ready": ready, "policyVersion": store.current.version, "checks": checks}


def _policies(store: PolicyStore, source: LiveNodeSource | None) -> dict[str, Any]:
    current = store.current
    status = store.status
    listing: dict[str, Any] = {
        "version": current.version,
        "sources": list(current.sources),
        "policies": [
            {
                "name": p.name,
                "filters": [
                    {"name": f.rule.name, "mode": f.rule.mode, "failurePolicy": f.failure_policy}
                    for f in p.filters
                ],
                "scores": [
                    {"name": s.rule.name, "weight": s.rule.weight, "normalize": s.rule.normalize}
                    for s in p.scores
                ],
            }
            for p in current.policies
        ],
        "lastReload": None
        if status is None
        else {
            "ok": status.ok,
            "at": status.at,
            "source": status.source,
            "version": status.version,
            "errors": [str(i) for i in status.issues] + ([status.error] if status.error else []),
        },
        "reloads": {"ok": store.reloads_ok, "failed": store.reloads_failed},
    }
    if source is not None:
        synced = source.ready()
        problem = "" if synced else source.sync_problem()
        listing["nodeSource"] = {"synced": synced, "problem": problem}
    return listing
