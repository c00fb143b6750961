"""An evaluation's refusals (what a filter reply lists) are those a plain model of the rules
gives: a node rejected by any unresolvable rule is unresolvable, whatever else rejected it
and in whichever order; its message is its rules' messages in the order they rejected it,
each once. However many rules rejected which nodes, and whether a node also has a verdict
of its own (an Audit would-reject, a message of its own) made before or after them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyext.policy import verdicts
from policyext.policy.verdicts import MESSAGE_SEPARATOR, Evaluation, Rejection


@dataclass
class Model:
    """What each node should end up with: the (message, unresolvable) of every rejection,
    in the order they were made."""

    names: list[str]
    rejections: dict[int, list[tuple[str, bool]]] = field(default_factory=dict)

    def reject(self, i: int, message: str, unresolvable: bool) -> None:
        self.rejections.setdefault(i, []).append((message, unresolvable))

    def expected(self) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """The feasible names, then FailedNodes and FailedAndUnresolvableNodes."""
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        for i in sorted(self.rejections):
            found = self.rejections[i]
            message = MESSAGE_SEPARATOR.join(dict.fromkeys(m for m, _ in found))
            into = unresolvable if any(u for _, u in found) else failed
            into[self.names[i]] = message
        feasible = [n for i, n in enumerate(self.names) if i not in self.rejections]
        return feasible, failed, unresolvable


@st.composite
def evaluations(draw: st.DrawFn) -> tuple[Evaluation, Model]:
    """Up to 12 Enforce rules (past the 8 that fit a byte), some unresolvable, some with one
    message between them, rejecting random nodes; and, between them, rejections of a node's
    own, which give it a verdict the later shared rejections are added to."""
    count = draw(st.integers(1, 40))
    names = [f"node-{i}" for i in range(count)]
    ev = Evaluation("v1", [], names)
    model = Model(names)
    own = 0
    for k in range(draw(st.integers(0, 15))):
        if draw(st.integers(0, 4)) == 0:  # a rejection of one node's own
            i = draw(st.integers(0, count - 1))
            unresolvable = draw(st.booleans())
            verdict = ev.verdict(i)
            verdict.rejections = [*verdict.rejections, Rejection("q", f"own{own}", f"own {own}")]
            verdict.feasible = False
            verdict.unresolvable = verdict.unresolvable or unresolvable  # as the engine does
            model.reject(i, f"own {own}", unresolvable)
            own += 1
            continue
        message = draw(st.sampled_from([f"rule {k} says no", "shared message"]))
        unresolvable = draw(st.booleans())
        mask = draw(st.lists(st.booleans(), min_size=count, max_size=count))
        ev.add_plain(Rejection("p", f"r{k}", message, unresolvable=unresolvable), np.array(mask))
        for i in np.nonzero(mask)[0].tolist():
            model.reject(i, message, unresolvable)
    return ev, model


@settings(max_examples=300, deadline=None)
@given(evaluations())
def test_the_refused_nodes_and_their_messages_are_those_the_rules_give(
    case: tuple[Evaluation, Model],
) -> None:
    ev, model = case
    feasible, failed, unresolvable = model.expected()
    assert ev.rejected() == (failed, unresolvable)
    outcome_feasible, *refusals = ev.filter_outcome()
    assert outcome_feasible == feasible
    assert [r.as_dict() for r in refusals] == [failed, unresolvable]
    assert ev.feasible_names() == feasible
    few = ev.few_refusals(len(model.names))
    if few is not None:  # (only without verdicts of a node's own, up to 8 rules)
        assert few == (feasible, failed, unresolvable)
    for v in ev.nodes:
        assert v.unresolvable == (v.name in unresolvable)
        assert v.feasible == (v.name in feasible)


UNRESOLVABLE = True
ORDINARY = False


@pytest.mark.parametrize(
    ("rules", "unresolvable"),
    [
        ([UNRESOLVABLE], True),
        ([ORDINARY], False),
        ([UNRESOLVABLE, ORDINARY], True),
        ([ORDINARY, UNRESOLVABLE], True),
        ([ORDINARY, UNRESOLVABLE, ORDINARY], True),
        ([UNRESOLVABLE, ORDINARY, ORDINARY], True),
        ([ORDINARY, ORDINARY], False),
    ],
    ids=lambda v: "".join("U" if r else "O" for r in v) if isinstance(v, list) else str(v),
)
@pytest.mark.parametrize("own_verdict", [False, True], ids=["shared only", "with a verdict"])
def test_a_node_is_unresolvable_when_any_rule_that_rejected_it_is(
    rules: list[bool], unresolvable: bool, own_verdict: bool
) -> None:
    ev = Evaluation("v1", [], ["n"])
    for k, u in enumerate(rules):
        ev.add_plain(Rejection("p", f"r{k}", f"no {k}", unresolvable=u), np.array([True]))
        if own_verdict and k == 0:
            ev.verdict(0)  # as an Audit would-reject after the first rule makes it
    message = "; ".join(f"no {k}" for k in range(len(rules)))
    expected = ({}, {"n": message}) if unresolvable else ({"n": message}, {})
    assert ev.rejected() == expected


@pytest.mark.parametrize("count", [8, 9, 12, 13, 40, 60, 61, 64, 70])
def test_however_many_rules_a_node_rejected_only_by_the_last_ones_keeps_their_messages(
    count: int,
) -> None:
    """Past the rules one byte holds (8), past those a table of every combination holds
    (12), past the bits of a number (60 and more): a node rejected by the first rule alone,
    one by the one before last alone, one by the last alone (unresolvable), and one by
    every rule are listed with their rules' messages, as with a few rules."""
    ev = Evaluation("v1", [], ["every", "first", "late", "later", "none"])
    for k in range(count):
        mask = np.array([True, k == 0, k == count - 2, k == count - 1, False])
        ev.add_plain(Rejection("p", f"r{k}", f"no {k}", unresolvable=k == count - 1), mask)
    every = MESSAGE_SEPARATOR.join(f"no {k}" for k in range(count))
    failed = {"first": "no 0", "late": f"no {count - 2}"}
    assert ev.rejected() == (failed, {"every": every, "later": f"no {count - 1}"})
    assert ev.feasible_names() == ["none"]


@pytest.mark.parametrize(
    ("scores", "names"),
    [([7, 0, 10], ["a", "b", "c"]), ([], [])],
    ids=["three nodes", "no node"],
)
def test_the_scores_in_node_order_of_a_prioritize_evaluation_are_its_scores(
    scores: list[int], names: list[str]
) -> None:
    ev = Evaluation("v1", [], names)
    ev.scores, ev.scored = scores, list(range(len(names)))

    assert ev.scores_in_order() == scores


@pytest.mark.parametrize(
    ("scores", "scored"),
    [(None, []), ([3], [1])],
    ids=["a filter's evaluation, which scored nothing", "one that scored some nodes only"],
)
def test_the_scores_in_node_order_are_refused_for_an_evaluation_that_did_not_score_every_node(
    scores: list[int] | None, scored: list[int]
) -> None:
    ev = Evaluation("v1", [], ["a", "b"])
    ev.scores, ev.scored = scores, scored

    with pytest.raises(ValueError, match="not an evaluation that scored every node"):
        ev.scores_in_order()


@pytest.mark.parametrize(
    ("scores", "rejected", "best"),
    [
        ([5, 7, 7], [], "b"),
        ([7, 7, 7], [], "a"),
        ([9, 5, 7], [], "a"),
        ([2, 9, 4], ["b"], "c"),
        ([], ["a", "b", "c"], None),
        (None, [], None),
    ],
    ids=[
        "the first of two nodes with the highest score",
        "the first node when all are equal",
        "the first node when it scores highest",
        "the highest of the nodes a filter kept",
        "none when every node was rejected",
        "none when nothing was scored (a filter's evaluation)",
    ],
)
def test_the_best_node_an_explanation_names_is_the_first_feasible_one_of_the_highest_score(
    scores: list[int] | None, rejected: list[str], best: str | None
) -> None:
    names = ["a", "b", "c"]
    ev = Evaluation("v1", [], names)
    ev.add_plain(Rejection("p", "r", "no"), np.array([n in rejected for n in names]))
    if scores is not None:
        ev.scored = [i for i, n in enumerate(names) if n not in rejected]
        ev.scores = [s for n, s in zip(names, scores, strict=False) if n not in rejected]

    found = ev.best()

    assert (found.name if found is not None else None) == best


def test_the_messages_worked_out_for_some_rules_are_kept_for_the_next_request_and_bounded() -> None:
    """A request's plain rejections are worked out into messages once and kept, beside
    those of other rules, for the next request with the same rules; the store of them
    never holds more than its bound."""
    verdicts._FILED.clear()
    mask = np.array([True])
    first = [(Rejection("p", "a", "no a"), mask)]
    other = [(Rejection("p", "b", "no b"), mask)]

    kept = verdicts._filed_table(first, [1])
    verdicts._filed_table(other, [1])

    assert verdicts._filed_table(first, [1]) is kept
    assert kept == {1: (False, "no a")}
    for k in range(verdicts._FILED_KEPT + 10):
        verdicts._filed_table([(Rejection("p", f"r{k}", "no"), mask)], [1])
        assert 0 < len(verdicts._FILED) <= verdicts._FILED_KEPT
