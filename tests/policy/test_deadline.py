"""A request that runs out of time answers anyway: what was not evaluated fails with
DeadlineExceeded, each rule's failurePolicy decides, and nothing of it is remembered."""

from __future__ import annotations

import time

import pytest

from policyext.policy.engine import evaluate, prepare
from policyext.policy.frames import DeadlineExceeded
from tests.policy.helpers import NOW, node, pod, policies, policy
from tests.policy.test_engine import snapshot_of

NODES = [
    node("spot-a", labels={"lifecycle": "spot"}),
    node("on-demand-b", labels={"lifecycle": "on-demand"}),
]
PAST = 0.0  # a perf_counter value long gone
NO_SPOT = "{name: no-spot, expression: \"node.metadata.labels.?lifecycle.orValue('') != 'spot'\"%s}"


def no_spot(failure_policy: str) -> str:
    extra = f", failurePolicy: {failure_policy}" if failure_policy else ""
    return policy("p", f"filters:\n- {NO_SPOT % extra}")


@pytest.mark.parametrize(
    ("failure_policy", "feasible"),
    [("", []), ("Fail", []), ("Ignore", ["spot-a", "on-demand-b"])],
    ids=["the default (Fail) rejects", "Fail rejects", "Ignore lets through"],
)
def test_rules_left_when_the_deadline_passes_fail_as_their_failure_policy_says(
    failure_policy: str, feasible: list[str]
) -> None:
    ev = evaluate(policies(no_spot(failure_policy)), pod(), NODES, None, NOW, deadline=PAST)
    assert ev.timed_out
    assert ev.feasible_names() == feasible
    if not feasible:
        error = ev.nodes[0].rejections[0].error
        assert error is not None and "ran out of time" in error


def test_a_deadline_still_ahead_changes_nothing() -> None:
    ev = evaluate(policies(no_spot("")), pod(), NODES, None, NOW, deadline=time.perf_counter() + 60)
    assert not ev.timed_out
    assert ev.feasible_names() == ["on-demand-b"]


def test_results_of_a_timed_out_request_are_not_cached_for_the_next() -> None:
    policy_set = policies(no_spot("Ignore"))
    source = snapshot_of(NODES)
    nodes = list(source.nodes.values())
    late = evaluate(policy_set, pod(), nodes, source, NOW, cache_nodes=True, deadline=PAST)
    assert late.timed_out and late.feasible_names() == ["spot-a", "on-demand-b"]
    in_time = evaluate(policy_set, pod(), nodes, source, NOW, cache_nodes=True)
    assert not in_time.timed_out
    assert in_time.feasible_names() == ["on-demand-b"], "the nodes' own results, not the deadline's"


def test_the_deadline_error_is_an_evaluation_error() -> None:
    from policyext.cel import CELEvalError

    assert issubclass(DeadlineExceeded, CELEvalError)


SCORED = policy(
    "p",
    "filters:\n- "
    + NO_SPOT % ""
    + "\nscores:\n- {name: named, expression: \"pod.metadata.name == 'web' ? 10 : 0\"}",
)


@pytest.mark.parametrize(
    ("filter_deadline", "reusable"),
    [(None, True), (PAST, False)],
    ids=["filters in time", "filters out of time"],
)
def test_a_pod_side_serves_the_scores_after_its_filters_only_if_they_ran_in_time(
    filter_deadline: float | None, reusable: bool
) -> None:
    prepared = prepare(policies(SCORED), pod("web"), None, NOW, deadline=filter_deadline)
    prepared.evaluate(NODES, filters=True, scores=False)

    again = prepared.for_scores(deadline=None)

    assert (again is prepared) is reusable
    if again is not None:
        assert again.counters.evaluations == 0 and again.counters.errors == 0
        scored = again.evaluate(NODES[1:], filters=False, scores=True)
        assert not scored.timed_out and scored.final_scores() == {"on-demand-b": 10}
