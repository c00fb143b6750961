"""filter and prioritize: the calls kube-scheduler makes for every pod, answered in front
of Flask.

With NodeNames and a remembered reply, answering takes less time than Flask's request
context, routing and response objects. `HotVerbs` answers both verbs (the Flask views call
it too); `HotVerbs.wsgi` takes a plain request to one of them (POST, `Content-Type:
application/json`, a Content-Length within the limit) straight to it, and gives everything
else to Flask untouched, including any request whose body turns out to be malformed: the
answers, their headers, the metrics and the decision log are the same either way.
`HotVerbs.direct` is the same answer for the worker's direct lane (server/direct.py),
which reads a plain call to one of them without gunicorn's parser and WSGI.
"""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson

from policyext.cel import Timestamp
from policyext.policy import Evaluation, LiveNodeSource, PolicySet
from policyext.server import verbs, wire
from policyext.server.fastwire import decode_fast
from policyext.server.metrics import Metrics
from policyext.server.names import NamesApart
from policyext.server.statuses import INTERNAL_ERROR, OK, error_body, status_line, status_of
from policyext.store import PolicyStore

OK_LABEL: Final = str(OK)
OK_LINE: Final = status_line(OK)
decision_log = logging.getLogger("policyext.decisions")
log = logging.getLogger("policyext.server")

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
Source = LiveNodeSource | None
# what the direct lane answers a call: its status line, its JSON reply, and what counts and
# logs it once the reply is sent
LaneAnswer = tuple[str, bytes, Callable[[], None]]
Runner = Callable[
    [PolicySet, Source, wire.ExtenderArgs, Timestamp, verbs.Memo | None, float | None],
    verbs.VerbResult,
]
RUNNERS: Final[dict[str, Runner]] = {
    "filter": verbs.run_filter,
    "prioritize": verbs.run_prioritize,
}


def extender_args(
    policies: PolicySet, data: bytes, verb: str = "", names: NamesApart | None = None
) -> wire.ExtenderArgs:
    """filter's and prioritize's arguments; a node named twice is found by the verbs.
    `names`: where the last NodeNames of each verb are kept (server/names.py)."""
    fast = decode_fast(data, policies.node_fields, check_repeats=False)
    if fast is not None:
        return fast
    apart = names.split(verb, data) if names is not None else None
    if apart is not None:
        return wire.names_args(*apart)
    return wire.parse_extender_args(wire.decode(data), check_repeats=False)


class AuditSink(Protocol):
    """Where filter answers go to become Events on their pods (cluster.audit_events):
    `offer` must return at once."""

    def offer(self, pod: Mapping[str, Any], ev: Evaluation) -> None: ...


class HotVerbs:
    """filter and prioritize over one store, node source, reply memo and metrics."""

    def __init__(
        self,
        store: PolicyStore,
        source: LiveNodeSource | None,
        metrics: Metrics,
        clock: Callable[[], int],
        max_body: int,
        prefix: str,
        request_deadline: float | None = None,
        audits: AuditSink | None = None,
    ) -> None:
        self.store = store
        self.audits = audits
        self.source = source
        self.metrics = metrics
        self.clock = clock
        self.max_body = max_body
        self.request_deadline = request_deadline
        self.memo: verbs.Memo = verbs.Memo()  # the replies the verbs remember
        self.names = NamesApart()  # the last NodeNames of each verb, decoded
        self.ahead: verbs.Ahead = verbs.Ahead()  # the prioritize reply worked out ahead
        self.paths = {f"{prefix}/{verb}": verb for verb in RUNNERS}
        # the direct lane's other paths (bind: server/app.py), each answered by its own entry
        self.others: dict[str, Callable[[bytes], LaneAnswer | None]] = {}

    def answer(self, verb: str, data: bytes) -> bytes:
        """The reply body, counted and logged; WireError for a body that is not the
        protocol's."""
        body, account = self.decide(verb, data)
        account()
        return body

    def decide(
        self, verb: str, data: bytes, ahead: bool = False
    ) -> tuple[bytes, Callable[[], None]]:
        """The reply body, and what counts and logs the decision (the metrics, the decision
        log, the audit trail): the worker's event loop sends the reply before calling it,
        so that kube-scheduler, waiting on its serial path, does not wait for them too.
        `ahead`: the caller calls it once the reply is sent, so that it may also work out
        the prioritize reply kube-scheduler asks next (remembered.Ahead). WireError for a
        body that is not the protocol's."""
        policies = self.store.current  # once: the request sees exactly one version
        started = time.perf_counter()
        known = self.ahead.answer(policies, data) if verb == "prioritize" else None
        if known is not None:
            result, pod = known, None
        else:
            args = extender_args(policies, data, verb, self.names)
            started = time.perf_counter()
            limit = self.request_deadline
            deadline = started + limit if limit is not None else None
            result = RUNNERS[verb](
                policies, self.source, args, Timestamp(self.clock()), self.memo, deadline
            )
            pod = args.pod
        seconds = time.perf_counter() - started
        passed = result.passed
        if passed is not None:
            self.names.expect("prioritize", *passed)

        def account() -> None:
            self.metrics.observe(verb, result.evaluation, result.nodes, seconds)
            log_decision(verb, self.store, result, seconds)
            audits, ev = self.audits, result.evaluation
            if audits is not None and verb == "filter" and pod is not None and ev is not None:
                audits.offer(pod, ev)
            if ahead and passed is not None and pod is not None:
                self._score_ahead(policies, data, pod, passed, result)

        return result.body, account

    def _score_ahead(
        self,
        policies: PolicySet,
        data: bytes,
        pod: wire.Json,
        passed: verbs.Passed,
        filtered: verbs.VerbResult,
    ) -> None:
        """Work out the prioritize reply to the call kube-scheduler makes after this filter
        call of `data` (remembered.Ahead), when it may come and its answer cannot change
        with the time: from what the filter call found (`filtered`, its answer)."""
        encoded, names = passed
        # (kube-scheduler scores no single node; a score reading the time may differ by
        # then; a scheduler that did not call prioritize after the last filter may not now)
        if len(names) < 2 or policies.scores_read_time or not self.ahead.wanted():
            return
        request = self.names.asking_about("filter", data, encoded)
        if request is None:
            return
        limit = self.request_deadline
        deadline = time.perf_counter() + limit if limit is not None else None
        now = Timestamp(self.clock())
        made = verbs.prioritize_ahead(policies, self.source, pod, names, now, deadline, filtered)
        if made is not None:
            self.ahead.keep(policies, request, *made)

    def reply(self, verb: str, path: str, data: bytes) -> tuple[int, bytes]:
        """The status and JSON body of a hot call, counted in the metrics; the 500 of an
        unexpected error is logged here. WireError for a body that is not the protocol's:
        what is wrong with it, and how that is answered and counted, is Flask's to say."""
        status, body, account = self._reply(verb, path, data)
        account()
        return status, body

    def _reply(
        self, verb: str, path: str, data: bytes, ahead: bool = False
    ) -> tuple[int, bytes, Callable[[], None]]:
        """`reply`, with what counts and logs it still to be called (`decide`'s `ahead`)."""
        try:
            body, account = self.decide(verb, data, ahead)
        except wire.WireError:
            raise
        except Exception as e:
            status, failed = unexpected_error(self.metrics, verb, path, e)
            return status, failed, _nothing
        count = self.metrics.count

        def count_and_account() -> None:
            count(verb, OK_LABEL)
            account()

        return OK, body, count_and_account

    def direct(self, path: str, data: bytes) -> LaneAnswer | None:
        """The worker's direct lane (server/direct.py): the status line and JSON reply to a
        POST of `data` as application/json to `path`, and what counts and logs it (to be
        called once the reply is sent; after a filter call, it also works out the
        prioritize reply ahead: `decide`), or None when the request is for Flask to answer
        (another path, a body over the limit or not the protocol's). The paths of `others`
        go to their own entries."""
        if len(data) > self.max_body:
            return None
        verb = self.paths.get(path)
        if verb is None:
            other = self.others.get(path)
            return other(data) if other is not None else None
        try:
            status, body, account = self._reply(verb, path, data, ahead=True)
        except wire.WireError:
            return None
        return OK_LINE if status == OK else status_line(status), body, account

    def wsgi(self, flask_app: WSGIApplication) -> WSGIApplication:
        """A WSGI application: the hot verbs here, everything else to `flask_app`."""

        def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
            path = environ.get("PATH_INFO", "")
            verb = self.paths.get(path)
            if (
                verb is None
                or environ.get("REQUEST_METHOD") != "POST"
                or environ.get("CONTENT_TYPE") != "application/json"
            ):
                return flask_app(environ, start_response)
            length = environ.get("CONTENT_LENGTH", "")
            if not length.isdigit() or int(length) > self.max_body:
                return flask_app(environ, start_response)  # chunked, or 413
            try:
                data = environ["wsgi.input"].read(int(length)) if length != "0" else b""
            except Exception as e:  # the connection broke: Flask meets the same error
                environ["wsgi.input"] = _Failing(e)
                return flask_app(environ, start_response)
            try:
                if len(data) != int(length):
                    raise wire.WireError("short body")  # a disconnect: Flask says 400
                status, body = self.reply(verb, path, data)
            except wire.WireError:
                environ["wsgi.input"] = io.BytesIO(data)
                return flask_app(environ, start_response)
            start_response(status_line(status), _headers(body))
            return [body]

        return app


def unexpected_error(metrics: Metrics, verb: str, path: str, error: Exception) -> tuple[int, bytes]:
    """The status and JSON body of a call that failed with an unexpected error (a bug),
    as Flask answers it: logged with its traceback, counted."""
    log.exception("unexpected error answering %s %s", "POST", path, exc_info=error)
    status = status_of(error)
    metrics.count(verb, str(status))
    return status, error_body(status, INTERNAL_ERROR)


def _nothing() -> None:
    pass


class _Failing(io.RawIOBase):
    """A request body whose reading fails as it did for the hot path."""

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


def log_decision(verb: str, store: PolicyStore, result: verbs.VerbResult, seconds: float) -> None:
    if not decision_log.isEnabledFor(logging.INFO):
        return
    ev = result.evaluation
    record: dict[str, Any] = {"verb": verb, "nodes": result.nodes, "ms": round(seconds * 1000, 3)}
    record["time"] = utc_now()
    record["policyVersion"] = ev.version if ev is not None else store.current.version
    record["pod"] = result.pod
    if ev is not None:
        tally = ev.tally()
        record["feasible"] = len(ev.names) - tally.infeasible
        record["rejectedBy"] = {f"{p}/{r}": n for (p, r), n in tally.rejections.items()}
        record["errors"] = ev.errors
        if tally.audits:
            record["auditRejectedBy"] = {f"{p}/{r}": n for (p, r), n in tally.audits.items()}
            record["auditNodes"] = ev.audit_nodes(AUDIT_NODES_LOGGED)
        if ev.audit_scores:
            record["auditScores"] = {
                f"{p}/{r}": {"nodes": a.nodes, "mean": round(a.points / a.nodes, 3), "best": a.best}
                for (p, r), a in ev.audit_scores.items()
            }
        if ev.timed_out:
            record["timedOut"] = True
    if result.ahead:
        record["scoredAhead"] = True
    if result.error:
        record["error"] = result.error
    line = orjson.dumps(record, option=orjson.OPT_SORT_KEYS).decode()
    handler = _only_handler()
    if handler is not None:
        handler.write_line(line)
    else:
        decision_log.info(line)
    if decision_log.isEnabledFor(logging.DEBUG) and ev is not None:
        for v in ev.nodes:
            decision_log.debug(
                json.dumps(
                    {
                        "verb": verb,
                        "pod": result.pod,
                        "node": v.name,
                        "feasible": v.feasible,
                        "score": v.score,
                        "rejectedBy": [r.rule_id for r in v.rejections],
                        "auditRejectedBy": [r.rule_id for r in v.audits],
                    }
                )
            )


class DecisionLines(logging.StreamHandler):  # type: ignore[type-arg]
    """The decision log's handler as the server sets it up: each decision a line on a
    stream. While it is the logger's one way out (no filter, no other handler, nothing
    propagated), `log_decision` gives it the line without a LogRecord: making the record
    (the caller's frame, the thread's and process's names) and formatting it cost more
    than the rest of the line, on every call kube-scheduler makes."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.setFormatter(logging.Formatter("%(message)s"))

    def write_line(self, line: str) -> None:
        """What `emit` writes for a record of `line`; on any error, the record's way, whose
        error handling is logging's."""
        try:
            with self.lock:  # type: ignore[union-attr]
                self.stream.write(line + self.terminator)
                self.stream.flush()
        except Exception:
            decision_log.info(line)


def _only_handler() -> DecisionLines | None:
    """The decision log's handler when a line written to it is all that logging the line
    would do."""
    handlers = decision_log.handlers
    if len(handlers) != 1 or decision_log.propagate or decision_log.filters:
        return None
    handler = handlers[0]
    if type(handler) is not DecisionLines or handler.filters or handler.level > logging.INFO:
        return None
    return handler


# node names per Audit rule in a decision line: enough to look at, bounded for 5,000 nodes
AUDIT_NODES_LOGGED: Final = 10


def utc_now() -> str:
    """The time as RFC 3339 in UTC, to the millisecond: 2026-12-01T17:05:09.123Z."""
    global _second  # noqa: PLW0603 - one value, replaced whole (atomic between threads)
    now = time.time()
    second, text = _second
    if int(now) != second:  # the second is formatted once, not on every request
        second = int(now)
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
        _second = second, text
    return f"{text}.{int(now % 1 * 1000):03d}Z"


_second: tuple[int, str] = (-1, "")  # the last second utc_now formatted, and its text
