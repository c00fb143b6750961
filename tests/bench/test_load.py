"""The load tool, in a smoke run of a few seconds: it counts every reply as set A's or set B's
answer, sees the folder swapped under load, and fails a run with wrong replies."""

from __future__ import annotations

import pytest

from bench.load import (
    ZONE_OF_A,
    ZONE_OF_B,
    Classifier,
    Settings,
    expected_verdicts,
    run,
    verdict,
)
from bench.workload import encode, generate


def test_sets_a_and_b_refuse_different_nodes_so_every_filter_reply_is_one_or_the_other() -> None:
    workload = generate(50)
    a, b = expected_verdicts(workload, ZONE_OF_A), expected_verdicts(workload, ZONE_OF_B)
    assert set(a.feasible) != set(b.feasible)
    assert set(a.feasible) - set(b.feasible) and set(b.feasible) - set(a.feasible)


@pytest.mark.parametrize(
    ("feasible_of", "whose"),
    [(ZONE_OF_A, "A"), (ZONE_OF_B, "B"), ("nowhere", "wrong")],
    ids=["A's answer", "B's answer", "the invalid set's (no zone refused)"],
)
def test_the_classifier_names_whose_answer_a_filter_reply_is(feasible_of: str, whose: str) -> None:
    workload = generate(50)
    expected = expected_verdicts(workload, feasible_of)
    failed = {name: "refused" for name in expected.rejected}
    reply = {"Nodes": None, "NodeNames": expected.feasible, "FailedNodes": failed}
    reply |= {"FailedAndUnresolvableNodes": {}, "Error": ""}
    assert Classifier(workload).classify("filter", "names", encode(reply))[0] == whose


def test_a_short_run_with_reloads_every_second_and_a_half_has_no_failure_and_serves_both_sets() -> (
    None
):
    settings = Settings(clients=5, duration=5.5, nodes=50, reload=True, reload_every=1.5)
    result = run(settings)
    assert verdict(result, settings) == []
    assert result["requests"] > 50
    served = {key.rsplit(" ", 1)[1] for key in result["answers"] if key.startswith("filter")}
    assert served == {"A", "B"}
    assert result["server_reloads"]["failed"] >= 1  # the invalid set was tried and refused
