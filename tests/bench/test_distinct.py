"""The headline measurement's yardsticks: request bodies built from bytes, and the check
that two servers decided alike on every node for every pod."""

from __future__ import annotations

import functools
import json

import pytest

from bench import policy
from bench.__main__ import cross_check
from bench.distinct import Bodies, Decision, compare_decisions, nodes_to_find
from bench.pods import pending_pods
from bench.report import TargetResult
from bench.workload import Workload, full_args, generate, names_args


@functools.cache
def _cluster() -> Workload:
    return generate(30)


def _decision(pod: str = "ns/a", **changes: object) -> Decision:
    base: dict[str, object] = {
        "pod": pod,
        "feasible": frozenset({"n1", "n2"}),
        "failed": frozenset({"n3"}),
        "scores": {"n1": 4, "n2": 7},
    }
    base.update(changes)
    return Decision(**base)  # type: ignore[arg-type]


def test_the_same_decisions_show_no_difference() -> None:
    assert (
        compare_decisions([_decision(), _decision("ns/b")], [_decision(), _decision("ns/b")]) == []
    )


@pytest.mark.parametrize(
    ("other", "complaint"),
    [
        (_decision(feasible=frozenset({"n1"})), "feasible nodes differ"),
        (_decision(failed=frozenset({"n2", "n3"})), "failed nodes differ"),
        (_decision(scores={"n1": 4, "n2": 6}), "score of n2 is 7 / 6"),
        (_decision(scores={"n1": 4}), "score of n2 is 7 / None"),
        (_decision(scores={"n1": 4, "n2": 7.0000001}), "score of n2"),
    ],
)
def test_any_difference_on_any_node_is_reported(other: Decision, complaint: str) -> None:
    differences = compare_decisions([_decision()], [other])
    assert len(differences) == 1 and complaint in differences[0], differences
    assert differences[0].startswith("ns/a: ")


def test_decisions_for_different_pods_are_not_compared() -> None:
    assert "not the same pods" in compare_decisions([_decision()], [_decision("ns/b")])[0]


def test_many_differences_are_cut_short() -> None:
    ours = [_decision(f"ns/{i}") for i in range(9)]
    theirs = [_decision(f"ns/{i}", scores={}) for i in range(9)]
    differences = compare_decisions(ours, theirs, limit=3)
    assert len(differences) == 4 and differences[-1] == "... 6 more"


def test_the_cross_check_names_the_server_the_cluster_and_the_mode() -> None:
    go, ours = TargetResult("Go"), TargetResult("ours")
    go.decisions[(500, "names")] = [_decision()]
    ours.decisions[(500, "names")] = [_decision(scores={"n1": 5, "n2": 7})]
    ours.decisions[(500, "full")] = [_decision()]  # no baseline figures: nothing to compare

    assert cross_check([go, ours]) == ["ours vs Go, 500 nodes, names: ns/a: score of n1 is 5 / 4"]
    ours.decisions[(500, "names")] = [_decision()]
    assert cross_check([go, ours]) == []


@pytest.mark.parametrize("mode", ["names", "full"])
def test_filter_bodies_are_the_extender_args_of_the_pod_for_the_window(mode: str) -> None:
    w = _cluster()
    pod = pending_pods(1)[0]
    window = Bodies(w).window(3)
    body = json.loads(Bodies(w).filter(pod, mode, window))  # type: ignore[arg-type]
    chosen = [next(n for n in w.nodes if n["metadata"]["name"] == name) for name in window]
    expected = (names_args if mode == "names" else full_args)(Workload(w.seed, chosen, w.pods, pod))
    assert body == expected


# nodes in the cluster, nodes kube-scheduler sends filter (numFeasibleNodesToFind with the
# adaptive percentageOfNodesToScore, every node passing its own plugins)
WINDOWS = [(30, 30), (99, 99), (100, 100), (120, 100), (500, 230), (1000, 420), (5000, 500)]


@pytest.mark.parametrize(("nodes", "sent"), WINDOWS)
def test_windows_are_the_share_kube_scheduler_sends(nodes: int, sent: int) -> None:
    assert nodes_to_find(nodes) == sent


def test_windows_walk_round_the_cluster_each_in_an_order_of_its_own() -> None:
    bodies = Bodies(generate(250))
    size = bodies.window_size

    def _after(turn: int, name: str) -> int:  # steps from where the turn's walk starts
        return (bodies.names.index(name) - turn * size) % 250

    assert size == 120  # 48 % of 250
    windows = [bodies.window(turn) for turn in range(5)]
    assert all(len(set(w)) == size for w in windows), "no node twice"
    index = {name: i for i, name in enumerate(bodies.names)}
    walked = [n for turn, w in enumerate(windows) for n in sorted(w, key=lambda n: _after(turn, n))]
    assert walked == [bodies.names[k % 250] for k in range(5 * size)], "from where the last ended"
    assert all(w != sorted(w, key=index.__getitem__) for w in windows), "not in node order"
    assert windows == [bodies.window(turn) for turn in range(5)], "the same for every server"


@pytest.mark.parametrize("mode", ["names", "full"])
def test_prioritize_bodies_carry_only_the_nodes_that_passed(mode: str) -> None:
    w = _cluster()
    pod = pending_pods(1)[0]
    passed = policy.Reference(w.nodes, w.pods).verdicts(pod).feasible
    assert 0 < len(passed) < len(w.nodes)
    args = json.loads(Bodies(w).prioritize(pod, mode, passed))  # type: ignore[arg-type]
    if mode == "names":
        assert args["NodeNames"] == passed and args["Nodes"] is None
    else:
        assert [n["metadata"]["name"] for n in args["Nodes"]["items"]] == passed
        assert args["Nodes"]["items"][0] in w.nodes
    assert args["Pod"] == pod
