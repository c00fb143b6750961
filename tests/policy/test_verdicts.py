"""An evaluation's refusals (what a filter reply lists) agree with its nodes' own verdicts,
however many rules rejected which nodes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from policyext.policy.verdicts import Evaluation, Rejection


@st.composite
def evaluations(draw: st.DrawFn) -> Evaluation:
    """Up to 12 Enforce rules (past the 8 that fit a byte), some unresolvable, some with one
    message between them, rejecting random nodes; and a few nodes with verdicts of their
    own beside the shared rejections."""
    count = draw(st.integers(1, 40))
    ev = Evaluation("v1", [], [f"node-{i}" for i in range(count)])
    for k in range(draw(st.integers(0, 12))):
        message = draw(st.sampled_from([f"rule {k} says no", "shared message"]))
        rejection = Rejection("p", f"r{k}", message, unresolvable=draw(st.booleans()))
        ev.add_plain(
            rejection, np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)))
        )
    for i in draw(st.lists(st.integers(0, count - 1), max_size=3)):
        verdict = ev.verdict(i)
        verdict.rejections = [*verdict.rejections, Rejection("q", "own", f"own {i}")]
        verdict.feasible = False
    return ev


@settings(max_examples=300, deadline=None)
@given(evaluations())
def test_the_refused_nodes_and_their_messages_are_those_of_each_nodes_verdict(
    ev: Evaluation,
) -> None:
    failed, unresolvable = ev.rejected()
    nodes = ev.nodes
    assert failed == {v.name: v.message() for v in nodes if not v.feasible and not v.unresolvable}
    assert unresolvable == {v.name: v.message() for v in nodes if v.unresolvable}
    feasible, *refusals = ev.filter_outcome()
    assert feasible == [v.name for v in nodes if v.feasible]
    assert [r.as_dict() for r in refusals] == [failed, unresolvable]
