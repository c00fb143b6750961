"""The decision log: one JSON line per answer of a verb (policyext.decisions), written
once the reply has gone back (the answer's `account`, server/entrance.py)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Final

import orjson

from policyext.server import verbs
from policyext.store import PolicyStore

decision_log = logging.getLogger("policyext.decisions")


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
