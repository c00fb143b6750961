"""What the engine decides: per node, the rejections, the scores and the final score."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from policyext.policy.match import PolicyMatch

# between the messages of the rules that rejected a node
MESSAGE_SEPARATOR: Final = "; "


class Rejection(NamedTuple):
    """A filter that rejected a node (or, in Audit mode, would have)."""

    policy: str
    rule: str
    message: str
    audit: bool = False
    unresolvable: bool = False
    error: str | None = None  # set when the rule failed to evaluate

    @property
    def rule_id(self) -> str:
        return f"{self.policy}/{self.rule}"


class RuleScore(NamedTuple):
    policy: str
    rule: str
    weight: int
    value: float | None  # what the expression yielded (None: it failed)
    score: float  # normalised to 0..10
    audit: bool = False
    error: str | None = None


class AuditScore(NamedTuple):
    """What an Audit-mode score rule did in one request (its scores are left out of the
    final score): for metrics and the decision log."""

    nodes: int  # nodes it scored
    points: float  # the sum of their scores, 0..10 each
    best: str  # the node it scored highest (the first of equals)


class NodeVerdict:
    """What the policies decided for one node. The lists start as a shared empty tuple and
    become lists when something is added: most nodes of a request need none."""

    __slots__ = (
        "audits",
        "feasible",
        "name",
        "rejections",
        "score",
        "scores",
        "skipped",
        "unresolvable",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.feasible = True
        self.unresolvable = False
        self.rejections: Sequence[Rejection] = ()  # Enforce rejections
        self.audits: Sequence[Rejection] = ()  # Audit would-rejects
        self.skipped: Sequence[Rejection] = ()  # errors ignored (Ignore)
        self.scores: Sequence[RuleScore] = ()  # per rule, when scored with detail
        self.score: int | None = None  # the final 0..10 score, when scored

    def __repr__(self) -> str:
        state = "feasible" if self.feasible else f"rejected by {len(self.rejections)}"
        return f"NodeVerdict({self.name!r}, {state}, score={self.score})"

    def message(self) -> str:
        """What the scheduler reports for this node (FailedNodes or
        FailedAndUnresolvableNodes): the message of every Enforce rule that rejected it,
        in policy-name then rule order (the order they were found in), each once, joined
        with `; `. Stable text, so that the scheduler's event still groups nodes by it."""
        rejections = self.rejections
        if len(rejections) == 1:
            return rejections[0].message
        return MESSAGE_SEPARATOR.join(dict.fromkeys(r.message for r in rejections))


@dataclass
class Tally:
    """What an evaluation did, by (policy, rule): for metrics and the decision log."""

    infeasible: int = 0
    rejections: Counter[tuple[str, str]] = field(default_factory=Counter)
    audits: Counter[tuple[str, str]] = field(default_factory=Counter)
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)


@dataclass
class Evaluation:
    """The engine's answer for one pod and a list of nodes, in the order they were given.

    Only the nodes that something happened to (a rejection, an audit, an ignored error, a
    per-rule score) have a verdict of their own; `nodes` builds the full list on demand,
    while the extender verbs read `rejected()`, `feasible_names()` and `final_scores()`."""

    version: str
    matches: list[PolicyMatch]
    names: list[str]
    verdicts: dict[int, NodeVerdict] = field(default_factory=dict)  # by node index
    scores: list[int] | None = None  # final scores of `scored`, when scored
    scored: list[int] = field(default_factory=list)  # the indexes of the scored nodes
    evaluations: int = 0  # CEL evaluations performed
    errors: int = 0  # evaluation errors (all kinds)
    timed_out: bool = False  # the request deadline stopped some evaluations
    # score rules that failed, by (policy, rule): counted even without per-rule detail
    score_errors: dict[tuple[str, str], int] = field(default_factory=dict)
    # what each Audit score rule did, by (policy, rule): computed even without detail
    audit_scores: dict[tuple[str, str], AuditScore] = field(default_factory=dict)
    _nodes: list[NodeVerdict] | None = None
    _tally: Tally | None = None

    @property
    def nodes(self) -> list[NodeVerdict]:
        if self._nodes is None:
            nodes = [self.verdicts.get(i) or NodeVerdict(n) for i, n in enumerate(self.names)]
            if self.scores is not None:
                for i, score in zip(self.scored, self.scores, strict=True):
                    nodes[i].score = score
            self._nodes = nodes
        return self._nodes

    def applied(self) -> list[str]:
        return [m.policy for m in self.matches if m.applies]

    def feasible(self) -> list[NodeVerdict]:
        return [v for v in self.nodes if v.feasible]

    def tally(self) -> Tally:
        """Per-rule counts of rejections, Audit would-rejects and errors (computed once)."""
        if self._tally is None:
            t = self._tally = Tally()
            for v in self.verdicts.values():
                if not v.feasible:
                    t.infeasible += 1
                for r in v.rejections:
                    t.rejections[r.policy, r.rule] += 1
                    if r.error is not None:
                        t.errors[r.policy, r.rule] += 1
                for r in v.audits:
                    t.audits[r.policy, r.rule] += 1
                    if r.error is not None:
                        t.errors[r.policy, r.rule] += 1
                for r in v.skipped:
                    t.errors[r.policy, r.rule] += 1
            t.errors.update(self.score_errors)
        return self._tally

    def feasible_count(self) -> int:
        """Nodes that passed every filter (nodes the node source did not know excluded)."""
        return len(self.names) - self.tally().infeasible

    def feasible_names(self) -> list[str]:
        infeasible = {i for i, v in self.verdicts.items() if not v.feasible}
        if not infeasible:
            return list(self.names)
        return [n for i, n in enumerate(self.names) if i not in infeasible]

    def final_scores(self) -> dict[str, int]:
        """Final scores by node name (scored nodes only)."""
        if self.scores is None:
            return {}
        return {self.names[i]: s for i, s in zip(self.scored, self.scores, strict=True)}

    def best(self) -> NodeVerdict | None:
        """The feasible node with the highest final score (the first of equals)."""
        best: NodeVerdict | None = None
        for v in self.nodes:
            if v.feasible and v.score is not None and (best is None or v.score > best.score):  # type: ignore[operator]
                best = v
        return best
