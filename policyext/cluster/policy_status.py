"""What the status of a SchedulingPolicy object says: decided here, written by
status_writer.py.

Each replica (each extender pod) owns one entry of `status.byPod`, keyed by its name: the
generation it read last, whether it serves it, and if not why and which generation it keeps
serving. The rest of the status (observedGeneration, the Ready condition, the counts the
printer columns show) is a summary that every replica computes from the same inputs (the
object's spec and generation, the byPod entries): replicas that have read the same
generation write the same values, so server-side apply lets them own those fields
together instead of taking them from each other; a replica that has not read the object's
current generation writes nothing until it has.

Ready is True when this replica serves the object's generation and no replica says it
refused that generation; False with every problem, each as a field path and a position
(`spec.filters[1].expression: 1:14: no field 'labelz' ...`). A replica whose entry is
for an older generation has not read the new one yet: it is not counted either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from policyext.policy import Issue, field_problem

Json = dict[str, Any]

MESSAGE_LIMIT: Final = 32768  # the schema's maxLength of a condition's message
REASON_SERVED: Final = "Served"
REASON_INVALID: Final = "Invalid"  # the generation does not load on its own
REASON_REJECTED: Final = "Rejected"  # it loads alone, but not with the other policies
REASON_REFUSED_ELSEWHERE: Final = "RefusedByReplica"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What this replica made of one object's generation: `serving` is the generation whose
    spec it serves (its last good one when `generation` was refused; None when none
    ever loaded); `problems`, why `generation` is not served (none when it is)."""

    generation: int
    serving: int | None
    problems: tuple[str, ...] = ()
    reason: str = REASON_SERVED

    @property
    def ok(self) -> bool:
        return not self.problems


def problem(issue: Issue, text: str) -> str:
    """One issue as the status says it (policy.field_problem: as the admission webhook
    says it too): the field path in the object, the position inside the expression when
    the issue is about one, and the message."""
    return field_problem(issue, text)


def counts(spec: Mapping[str, Any]) -> Json:
    """What the printer columns show: how many filters and scores, and their mode."""
    filters = spec.get("filters") or []
    scores = spec.get("scores") or []
    modes = {rule.get("mode", "Enforce") for rule in [*filters, *scores] if isinstance(rule, dict)}
    mode = modes.pop() if len(modes) == 1 else "Mixed"
    return {"filters": len(filters), "scores": len(scores), "mode": mode}


def desired_status(obj: Json, replica: str, mine: Outcome, now: str) -> Json | None:
    """The status fields `replica` applies to the object, given what it made of the
    object's generation; None while it has not read that generation (nothing to say)."""
    meta = obj.get("metadata") or {}
    generation = int(meta.get("generation") or 0)
    if mine.generation != generation:
        return None
    current = obj.get("status") or {}
    entries = [e for e in current.get("byPod") or [] if e.get("pod") != replica]
    own = _entry(replica, mine, _own_entry(current, replica), now)
    ready = _ready(generation, mine, entries, _condition(current, "Ready"), now)
    return {
        "observedGeneration": generation,
        **counts(obj.get("spec") or {}),
        "conditions": [ready],
        "byPod": [own],
    }


def applied(status: Json | None, replica: str) -> Json:
    """The part of a status that `desired_status` decides for `replica`: what to compare
    to know whether a write would change anything."""
    status = status or {}
    ready = _condition(status, "Ready")
    own = _own_entry(status, replica)
    return {
        "observedGeneration": status.get("observedGeneration"),
        "filters": status.get("filters"),
        "scores": status.get("scores"),
        "mode": status.get("mode"),
        "conditions": [ready] if ready else [],
        "byPod": [own] if own else [],
    }


def _entry(replica: str, mine: Outcome, before: Json | None, now: str) -> Json:
    status = "True" if mine.ok else "False"
    entry: Json = {"pod": replica, "observedGeneration": mine.generation, "status": status}
    if mine.serving is not None:
        entry["servingGeneration"] = mine.serving
    if not mine.ok:
        entry["reason"] = mine.reason
        entry["message"] = _bounded("; ".join(mine.problems))
    entry["lastTransitionTime"] = _since(before, status, now)
    return entry


def _ready(
    generation: int,
    mine: Outcome,
    others: Sequence[Json],
    before: Json | None,
    now: str,
) -> Json:
    refusing = [
        e
        for e in others
        if e.get("observedGeneration") == generation and e.get("status") == "False"
    ]
    if not mine.ok:
        keeps = (
            f"generation {mine.serving} keeps serving"
            if mine.serving is not None
            else "no generation of it has been served"
        )
        status, reason = "False", mine.reason
        message = f"generation {generation} is not served ({keeps}): " + "; ".join(mine.problems)
    elif refusing:
        status, reason = "False", REASON_REFUSED_ELSEWHERE
        message = "; ".join(
            f"pod {e.get('pod')} refused generation {generation}: {e.get('message', '')}"
            for e in refusing
        )
    else:
        serving = 1 + sum(
            1
            for e in others
            if e.get("observedGeneration") == generation and e.get("status") == "True"
        )
        status, reason = "True", REASON_SERVED
        message = f"generation {generation} is served by {serving} of the replicas that read it"
    return {
        "type": "Ready",
        "status": status,
        "observedGeneration": generation,
        "reason": reason,
        "message": _bounded(message),
        "lastTransitionTime": _since(before, status, now),
    }


def _since(before: Json | None, status: str, now: str) -> str:
    """A condition's lastTransitionTime: kept while its status stays the same."""
    if before is not None and before.get("status") == status and before.get("lastTransitionTime"):
        return str(before["lastTransitionTime"])
    return now


def _condition(status: Json, kind: str) -> Json | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


def _own_entry(status: Json, replica: str) -> Json | None:
    for entry in status.get("byPod") or []:
        if entry.get("pod") == replica:
            return dict(entry)
    return None


def _bounded(message: str) -> str:
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 3] + "..."
