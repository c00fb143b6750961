"""The what-if of `simulate --pending`: which pending pods a rules change would help or hurt."""

from __future__ import annotations

from typing import Any

import pytest

from policyext.cli.tables import whatif_table
from policyext.cluster.snapshot import SnapshotSource
from policyext.offline.scheduler.cluster import Cluster
from policyext.offline.whatif import (
    BECOMES_SCHEDULABLE,
    BECOMES_UNSCHEDULABLE,
    BEST_NODE_CHANGES,
    UNCHANGED,
    Placement,
    PodChange,
    WhatIf,
    compare,
    is_pending,
    verdict,
    whatif_to_dict,
)
from tests.policy.helpers import NOW, node, pod, policies, policy


def _placement(feasible: int, best: str | None, **rejections: int) -> Placement:
    return Placement(feasible, best, None if best is None else 5, rejections)


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (_placement(0, None), _placement(3, "c"), BECOMES_SCHEDULABLE),
        (_placement(3, "c"), _placement(0, None), BECOMES_UNSCHEDULABLE),
        (_placement(3, "c"), _placement(2, "b"), BEST_NODE_CHANGES),
        (_placement(3, "c"), _placement(2, "c"), UNCHANGED),
        (_placement(2, "c"), _placement(3, "c"), UNCHANGED),
        (_placement(0, None), _placement(0, None), UNCHANGED),
    ],
)
def test_the_verdict_follows_feasibility_first_and_the_best_node_second(
    before: Placement, after: Placement, expected: str
) -> None:
    assert verdict(before, after) == expected


def _with(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    for dotted, value in changes.items():
        part, key = dotted.split("__")
        obj.setdefault(part, {})[key] = value
    return obj


@pytest.mark.parametrize(
    ("the_pod", "scheduler", "pending"),
    [
        (_with(pod(), status__phase="Pending"), None, True),
        (pod(), None, True),  # no status yet: just created
        (_with(pod(), status__phase="Pending", spec__nodeName="a"), None, False),
        (_with(pod(), status__phase="Running", spec__nodeName="a"), None, False),
        (_with(pod(), status__phase="Failed"), None, False),
        (_with(pod(), metadata__deletionTimestamp="2026-01-01T00:00:00Z"), None, False),
        (pod(scheduler="policy-scheduler"), "policy-scheduler", True),
        (pod(scheduler="policy-scheduler"), "default-scheduler", False),
        (pod(), "default-scheduler", True),  # no schedulerName means the default one
    ],
)
def test_a_pod_is_pending_when_it_waits_for_the_chosen_scheduler(
    the_pod: dict[str, Any], scheduler: str | None, pending: bool
) -> None:
    assert is_pending(the_pod, scheduler) is pending


def _sized(name: str, size: int) -> dict[str, Any]:
    return node(name, labels={"size": str(size)})


NODES = [_sized("a", 1), _sized("b", 2), _sized("c", 3)]
BIGGEST_FIRST = """
scores:
- name: biggest
  expression: "int(node.metadata.labels.size)"
"""


def _rules(expression: str) -> str:
    return policy("p", f'filters:\n- name: f\n  expression: "{expression}"\n{BIGGEST_FIRST}')


@pytest.mark.parametrize(
    ("current", "candidate", "expected", "feasible", "best"),
    [
        ("true", "false", BECOMES_UNSCHEDULABLE, (3, 0), ("c", None)),
        ("false", "true", BECOMES_SCHEDULABLE, (0, 3), (None, "c")),
        ("true", "node.metadata.name != 'c'", BEST_NODE_CHANGES, (3, 2), ("c", "b")),
        ("true", "node.metadata.name != 'a'", UNCHANGED, (3, 2), ("c", "c")),
        ("false", "false", UNCHANGED, (0, 0), (None, None)),
    ],
)
def test_compare_evaluates_each_pending_pod_under_both_rule_sets(
    current: str,
    candidate: str,
    expected: str,
    feasible: tuple[int, int],
    best: tuple[str | None, str | None],
) -> None:
    result = compare(
        policies(_rules(current)), policies(_rules(candidate)), [pod()], NODES, None, NOW
    )
    (change,) = result.pods
    assert change.verdict == expected
    assert (change.before.feasible, change.after.feasible) == feasible
    assert (change.before.best, change.after.best) == best
    assert result.nodes == 3


def test_compare_counts_the_nodes_each_rule_rejects_and_sorts_the_pods() -> None:
    pods = [pod("z", "shop"), pod("a", "web"), pod("b", "shop")]
    result = compare(policies(_rules("true")), policies(_rules("false")), pods, NODES, None, NOW)
    assert [(c.namespace, c.name) for c in result.pods] == [
        ("shop", "b"),
        ("shop", "z"),
        ("web", "a"),
    ]
    assert result.pods[0].after.rejections == {"p/f": 3}
    assert result.pods[0].before.rejections == {}
    assert result.summary() == {
        BECOMES_UNSCHEDULABLE: 3,
        BECOMES_SCHEDULABLE: 0,
        BEST_NODE_CHANGES: 0,
        UNCHANGED: 0,
    }


def test_pods_already_bound_count_on_their_nodes_through_the_source() -> None:
    bound = _with(pod("running", "shop"), spec__nodeName="c", status__phase="Running")
    objects = [{**n, "kind": "Node"} for n in NODES] + [{**bound, "kind": "Pod"}]
    source = SnapshotSource(objects)
    nodes = list(source.nodes.values())
    empty_only = policy(
        "p", f'filters:\n- name: f\n  expression: "nodeInfo.podCount == 0"\n{BIGGEST_FIRST}'
    )
    result = compare(policies(_rules("true")), policies(empty_only), [pod()], nodes, source, NOW)
    (change,) = result.pods
    assert (change.before.best, change.after.best) == ("c", "b")
    assert change.after.rejections == {"p/f": 1}


def _whatif(*changes: PodChange) -> WhatIf:
    return WhatIf("v1", "v2", 3, list(changes))


LOST = PodChange("shop", "lost", _placement(3, "c"), _placement(0, None, **{"p/f": 3}))
FOUND = PodChange("shop", "found", _placement(0, None), _placement(2, "b"))
MOVED = PodChange("web", "moved", _placement(3, "c"), _placement(2, "b"))


@pytest.mark.parametrize(
    ("change", "row"),
    [
        (LOST, ["shop/lost", "3", "->", "0", "c", "(5)", "->", "-", "becomes", "unschedulable"]),
        (FOUND, ["shop/found", "0", "->", "2", "-", "->", "b", "(5)", "becomes", "schedulable"]),
        (MOVED, ["web/moved", "3", "->", "2", "c", "(5)", "->", "b", "(5)", "best", "node"]),
    ],
)
def test_the_table_shows_each_pod_before_and_after_with_its_verdict(
    change: PodChange, row: list[str]
) -> None:
    lines = whatif_table(_whatif(change)).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("POD"))
    assert lines[header + 1].split()[: len(row)] == row


def test_the_table_says_why_a_pod_would_lose_its_place_and_sums_up() -> None:
    text = whatif_table(_whatif(LOST, FOUND, MOVED))
    assert text.startswith("current rules v1 -> candidate rules v2, 3 nodes\n")
    assert "rejected by p/f on 3 nodes" in text
    assert text.rstrip().endswith(
        "3 pending pods: 1 becomes unschedulable, 1 becomes schedulable, "
        "1 best node changes, 0 unchanged"
    )


def test_the_table_says_so_when_no_pod_is_pending() -> None:
    assert whatif_table(_whatif()).rstrip().endswith("no pending pods")


def test_the_data_form_carries_the_same_comparison() -> None:
    data = whatif_to_dict(_whatif(LOST))
    assert data["currentPolicyVersion"] == "v1"
    assert data["candidatePolicyVersion"] == "v2"
    assert data["pods"] == [
        {
            "namespace": "shop",
            "name": "lost",
            "verdict": BECOMES_UNSCHEDULABLE,
            "before": {"feasible": 3, "best": "c", "score": 5, "rejections": {}},
            "after": {"feasible": 0, "best": None, "score": None, "rejections": {"p/f": 3}},
        }
    ]
    assert data["summary"][BECOMES_UNSCHEDULABLE] == 1


def test_with_the_scheduler_emulated_a_rule_change_on_a_tainted_node_changes_nothing() -> None:
    # the candidate rule keeps pods off c, but c's taint keeps this pod off already
    taint = {"key": "k", "effect": "NoSchedule"}
    tainted = [_sized("a", 1), _sized("b", 2), node("c", {"size": "3"}, taints=[taint])]
    current, candidate = policies(_rules("true")), policies(_rules("node.metadata.name != 'c'"))
    alone = compare(current, candidate, [pod()], tainted, None, NOW)
    assert alone.pods[0].verdict == BEST_NODE_CHANGES
    emulated = compare(current, candidate, [pod()], tainted, None, NOW, Cluster(tainted, []))
    (change,) = emulated.pods
    assert change.verdict == UNCHANGED
    assert (change.before.best, change.after.best) == ("b", "b")
    # a node the plugins reject is counted against the plugin, never against a rule
    assert change.after.rejections == {"scheduler/TaintToleration": 1}
