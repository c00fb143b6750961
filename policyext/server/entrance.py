"""The one entrance of the extender verbs: `Verbs.answer(verb, body)`.

filter, prioritize, preempt and bind are each answered by one function here, the bytes of
the request's body in, the status and JSON body of the reply out, whatever carries the
call: the worker's direct lane (in its event loop or a thread) and the WSGI lane in front
of Flask (server/lanes.py), or Flask's view (server/verb_views.py). They are transports:
they read the body, send what `answer` gives, and count the status.

An answer comes with what accounts for it (the metrics, the decision log, the audit
trail), to be called once the reply is sent, so that kube-scheduler, waiting on its serial
path, does not wait for that too. A body that is not the protocol's raises
`wire.WireError` (Flask answers it 400, with what is wrong: server/statuses.py); any other
error is a bug, answered 500 here and logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Protocol

from policyext.cel import Timestamp
from policyext.policy import Evaluation, LiveNodeSource, PolicySet
from policyext.server import verbs, wire
from policyext.server.binding import BindVerb
from policyext.server.decisions import log_decision
from policyext.server.fastwire import decode_fast
from policyext.server.metrics import Metrics
from policyext.server.names import NamesApart
from policyext.server.statuses import INTERNAL_ERROR, OK, error_body, status_of
from policyext.store import PolicyStore

log = logging.getLogger("policyext.server")

Source = LiveNodeSource | None
Runner = Callable[
    [PolicySet, Source, wire.ExtenderArgs, Timestamp, verbs.Memo | None, float | None],
    verbs.VerbResult,
]
RUNNERS: dict[str, Runner] = {"filter": verbs.run_filter, "prioritize": verbs.run_prioritize}
VERBS = ("filter", "prioritize", "preempt", "bind")


# a verb's answer: its status, its JSON body, and what counts and logs the decision (to be
# called once the reply is sent; it does not count the status, which the transport counts
# with every other response). A plain tuple: a NamedTuple's constructor is a Python call
# more on every call kube-scheduler makes
Answer = tuple[int, bytes, Callable[[], None]]


# a verb's one function: the body, and whether the reply is sent before `account` is
# called (then a filter call may also work out the prioritize reply ahead)
VerbAnswer = Callable[[bytes, bool], Answer]


class AuditSink(Protocol):
    """Where filter answers go to become Events on their pods (cluster.audit_events):
    `offer` must return at once."""

    def offer(self, pod: Mapping[str, Any], ev: Evaluation) -> None: ...


def extender_args(
    policies: PolicySet, data: bytes, verb: str = "", names: NamesApart | None = None
) -> wire.ExtenderArgs:
    """filter's and prioritize's arguments; a node named twice is found by the verbs.
    `names`: where the last NodeNames of each verb are kept (server/names.py)."""
    fast = decode_fast(data, policies.node_fields)
    if fast is not None:
        return fast
    apart = names.split(verb, data) if names is not None else None
    if apart is not None:
        return wire.names_args(*apart)
    return wire.parse_extender_args(wire.decode(data), check_repeats=False)


class Verbs:
    """The four verbs over one store, node source, binder, reply memo and metrics."""

    def __init__(
        self,
        store: PolicyStore,
        source: LiveNodeSource | None,
        metrics: Metrics,
        clock: Callable[[], int],
        prefix: str,
        request_deadline: float | None = None,
        audits: AuditSink | None = None,
        binding: BindVerb | None = None,
    ) -> None:
        self.store = store
        self.audits = audits
        self.source = source
        self.metrics = metrics
        self.clock = clock
        self.request_deadline = request_deadline
        self.binding = binding
        self.memo: verbs.Memo = verbs.Memo()  # the replies the verbs remember
        self.names = NamesApart()  # the last NodeNames of each verb, decoded
        self.ahead: verbs.Ahead = verbs.Ahead()  # the prioritize reply worked out ahead
        self.paths = {verb: f"{prefix}/{verb}" for verb in VERBS}
        self._answers: dict[str, VerbAnswer] = {
            "filter": partial(self._scheduling, "filter"),
            "prioritize": partial(self._scheduling, "prioritize"),
            "preempt": self._preempt,
            "bind": self._bind,
        }

    def answer(self, verb: str, data: bytes, sent_first: bool = False) -> Answer:
        """The answer to a call of `verb` (one of VERBS) with the body `data`. `sent_first`:
        the caller calls `account` only once the reply is sent, so that it may also work
        out the prioritize reply kube-scheduler asks next (remembered.Ahead). WireError
        for a body that is not the protocol's."""
        try:
            return self._answers[verb](data, sent_first)
        except wire.WireError:
            raise
        except Exception as e:  # a bug: logged with its traceback, as Flask logs one
            log.exception("unexpected error answering %s %s", "POST", self.paths[verb])
            status = status_of(e)
            return status, error_body(status, INTERNAL_ERROR), _nothing

    def _scheduling(self, verb: str, data: bytes, sent_first: bool) -> Answer:
        """filter and prioritize: the calls kube-scheduler makes for every pod."""
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
            if sent_first and passed is not None and pod is not None:
                self._score_ahead(policies, data, pod, passed, result)

        return OK, result.body, account

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

    def _preempt(self, data: bytes, _sent_first: bool) -> Answer:
        """preempt: the candidate nodes on which the policies accept the pod once the
        victims are gone."""
        args = wire.parse_preemption_args(wire.decode(data))
        policies = self.store.current
        started = time.perf_counter()
        limit = self.request_deadline
        deadline = started + limit if limit is not None else None
        result = verbs.run_preempt(policies, self.source, args, Timestamp(self.clock()), deadline)
        return self._observed("preempt", result, time.perf_counter() - started)

    def _bind(self, data: bytes, _sent_first: bool) -> Answer:
        """bind: a Binding, when it is one kube-scheduler would ask for (server/binding.py)."""
        args = wire.parse_binding_args(wire.decode(data))
        assert self.binding is not None  # (create_app gives one)
        started = time.perf_counter()
        result = self.binding.answer(args)
        return self._observed("bind", result, time.perf_counter() - started)

    def _observed(self, verb: str, result: verbs.VerbResult, seconds: float) -> Answer:
        """The answer of a verb whose decision only the metrics count."""

        def account() -> None:
            self.metrics.observe(verb, result.evaluation, result.nodes, seconds)

        return OK, result.body, account


def _nothing() -> None:
    pass
