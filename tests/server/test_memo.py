"""Remembered NodeNames replies: reused only for a pod the policies cannot tell from the
last one, on nodes that have not changed, under the same policy set."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from policyext.cluster.cache import ClusterSource
from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import PolicySet
from policyext.policy.engine import prepare
from policyext.server import remembered, verbs, wire
from tests.cluster.fake_core import fake_api
from tests.policy.helpers import NOW, node, pod, policies, policy

SPOT_AND_CPU = policy(
    "placement",
    """
    filters:
      - name: no-spot-for-critical
        expression: "pod.metadata.labels.?critical.orValue('') != 'true' ||
          node.metadata.labels.?lifecycle.orValue('') != 'spot'"
        message: critical pods stay off spot nodes
      - name: cpu-fits
        expression: "nodeInfo.allocatable.cpu.compareTo(podRequests.cpu) >= 0"
    scores:
      - name: more-cpu
        weight: 1
        expression: "nodeInfo.allocatable.cpu.asApproximateFloat()"
    """,
)
NODES = [
    node("a", {"lifecycle": "spot"}, cpu="4"),
    node("b", {"lifecycle": "on-demand"}, cpu="8"),
    node("c", {"lifecycle": "on-demand"}, cpu="1"),
]
NAMES = ["a", "b", "c", "gone"]
CRITICAL = pod("web-1", labels={"critical": "true"}, cpu="2")


class MovingSource(ClusterSource):
    """The live cluster's source fed by hand: its nodes can change, and it tells so
    through its generation and its nodes' versions."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        super().__init__(fake_api())
        super().replace("nodes", copy.deepcopy(nodes))
        super().replace("pods", [])

    def replace(self, new: dict[str, Any]) -> None:  # type: ignore[override]
        self.apply("nodes", "MODIFIED", new)


def _memo(*lists: list[str]) -> verbs.Memo:
    """A memo asked about NAMES (and `lists`) before: kube-scheduler rarely sends a list
    twice, and a reply is looked for and kept only for a list asked about lately."""
    memo = verbs.Memo()
    for names in (NAMES, *lists):
        for verb in ("filter", "prioritize"):
            memo.asked_before(verb, list(names))
    return memo


def _filter(
    policy_set: PolicySet,
    source: SnapshotSource,
    memo: verbs.Memo,
    the_pod: dict[str, Any],
    names: list[str] = NAMES,
) -> verbs.VerbResult:
    return verbs.run_filter(
        policy_set, source, wire.ExtenderArgs(the_pod, None, list(names)), NOW, memo
    )


def _prioritize(
    policy_set: PolicySet, source: SnapshotSource, memo: verbs.Memo, the_pod: dict[str, Any]
) -> verbs.VerbResult:
    return verbs.run_prioritize(
        policy_set, source, wire.ExtenderArgs(the_pod, None, list(NAMES)), NOW, memo
    )


@pytest.mark.parametrize("run", [_filter, _prioritize], ids=["filter", "prioritize"])
def test_a_replica_like_the_last_pod_gets_the_same_reply_without_evaluating_the_nodes(
    run: Callable[..., verbs.VerbResult],
) -> None:
    policy_set, source, memo = policies(SPOT_AND_CPU), MovingSource(NODES), _memo()
    first = run(policy_set, source, memo, CRITICAL)
    replica = copy.deepcopy(CRITICAL)
    replica["metadata"]["name"] = "web-2"
    again = run(policy_set, source, memo, replica)
    assert again.body is first.body  # remembered, not recomputed
    assert (again.pod, first.pod) == ("shop/web-2", "shop/web-1")
    assert again.evaluation is not None and first.evaluation is not None
    assert again.evaluation.evaluations < first.evaluation.evaluations
    assert again.evaluation.tally() == first.evaluation.tally()  # metrics and log as before


def test_a_remembered_reply_keeps_nothing_of_the_call_that_made_it() -> None:
    policy_set, source, memo = policies(SPOT_AND_CPU), MovingSource(NODES), _memo()
    made = _filter(policy_set, source, memo, CRITICAL)
    assert made.prepared is not None and made.rows is not None  # (for the scores ahead)
    prepared = prepare(policy_set, CRITICAL, source, NOW)
    kept = memo.get(policy_set, remembered.memo_key("filter", prepared, source, NAMES))
    assert kept is not None and kept.body is made.body
    assert (kept.prepared, kept.rows) == (None, None), "no pod side, no old node records"


def _relabel(p: dict[str, Any]) -> None:
    p["metadata"]["labels"]["critical"] = "false"


def _more_cpu(p: dict[str, Any]) -> None:
    p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "9"


@pytest.mark.parametrize(
    "change", [_relabel, _more_cpu], ids=["a label a rule reads", "the requests"]
)
def test_a_pod_that_differs_in_what_the_policies_read_is_evaluated_afresh(
    change: Callable[[dict[str, Any]], None],
) -> None:
    policy_set, source, memo = policies(SPOT_AND_CPU), MovingSource(NODES), _memo()
    first = _filter(policy_set, source, memo, CRITICAL)
    other = copy.deepcopy(CRITICAL)
    change(other)
    fresh = verbs.run_filter(
        policy_set, source, wire.ExtenderArgs(other, None, list(NAMES)), NOW, None
    )
    assert _filter(policy_set, source, memo, other).body == fresh.body != first.body


def test_a_changed_node_is_seen_at_once() -> None:
    policy_set, source, memo = policies(SPOT_AND_CPU), MovingSource(NODES), _memo()
    before = _filter(policy_set, source, memo, CRITICAL)
    assert b'"a":"critical pods stay off spot nodes"' in before.body
    on_demand = copy.deepcopy(NODES[0])
    on_demand["metadata"]["labels"]["lifecycle"] = "on-demand"
    on_demand["metadata"]["resourceVersion"] = "2"
    source.replace(on_demand)
    after = _filter(policy_set, source, memo, CRITICAL)
    assert b'"a":' not in after.body.split(b'"FailedNodes"')[1]


def test_a_new_policy_set_is_never_answered_from_the_old_ones_replies() -> None:
    source, memo = MovingSource(NODES), _memo()
    strict = policies(SPOT_AND_CPU)
    _filter(strict, source, memo, CRITICAL)
    lenient = policies(policy("placement", "filters: []"))
    reply = wire.decode(_filter(lenient, source, memo, CRITICAL).body)
    assert reply["NodeNames"] == ["a", "b", "c"]


def test_other_node_names_are_another_question() -> None:
    policy_set, source, memo = policies(SPOT_AND_CPU), MovingSource(NODES), _memo(["b"])
    _filter(policy_set, source, memo, CRITICAL)
    reply = wire.decode(_filter(policy_set, source, memo, CRITICAL, names=["b"]).body)
    assert (reply["NodeNames"], reply["FailedNodes"]) == (["b"], {})


MANY = [f"node-{i}" for i in range(1000)]


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        (MANY, list(MANY), True),
        (MANY, [*MANY[:500], "other", *MANY[501:]], False),  # a name the hash may not read
        (MANY, [*MANY[:500], MANY[501], MANY[500], *MANY[502:]], False),  # two swapped
        (MANY, MANY[:-1], False),
        ([], [], True),
        (["a"], ["b"], False),
    ],
    ids=["equal", "one name differs", "two names swapped", "one name fewer", "none", "one"],
)
def test_node_names_in_a_memo_key_are_compared_whole(
    first: list[str], second: list[str], same: bool
) -> None:
    a, b = remembered.MemoKey("filter", 0, (), first), remembered.MemoKey("filter", 0, (), second)
    assert (a == b) is same
    if same:
        assert hash(a) == hash(b)
    assert ({a: "first"}.get(b) == "first") is same


@pytest.mark.parametrize(
    "other",
    [("prioritize", 0, ()), ("filter", 1, ()), ("filter", 0, ("another pod",))],
    ids=["another verb", "another generation", "another signature"],
)
def test_a_memo_key_tells_verbs_generations_and_signatures_apart(
    other: tuple[str, int, tuple[str, ...]],
) -> None:
    key = remembered.MemoKey("filter", 0, (), MANY)
    assert key != remembered.MemoKey(*other, list(MANY))


PER_NODE_MESSAGE = policy(
    "named",
    """
    filters:
      - name: not-spot
        expression: "node.metadata.labels.?lifecycle.orValue('') != 'spot'"
        messageExpression: "'no spot for ' + pod.metadata.name"
    """,
)
NODE_MESSAGE = policy(
    "node-message",
    """
    filters:
      - name: not-spot
        expression: "node.metadata.labels.?lifecycle.orValue('') != 'spot'"
        messageExpression: "'spot node ' + node.metadata.name"
    """,
)


@pytest.mark.parametrize(
    ("text", "source_of"),
    [
        (PER_NODE_MESSAGE, MovingSource),
        (NODE_MESSAGE, MovingSource),
    ],
    ids=[
        "a message written per pod",
        "a message written per node",
    ],
)
def test_replies_are_not_remembered_when_they_may_depend_on_more_than_the_signature(
    text: str, source_of: Callable[[list[dict[str, Any]]], SnapshotSource]
) -> None:
    policy_set, source, memo = policies(text), source_of(NODES), _memo()
    first = _filter(policy_set, source, memo, CRITICAL)
    replica = copy.deepcopy(CRITICAL)
    replica["metadata"]["name"] = "web-2"
    again = _filter(policy_set, source, memo, replica)
    assert again.body is not first.body
    if text is PER_NODE_MESSAGE:
        assert b"no spot for web-2" in again.body


TEAM_NODES = policy(
    "team",
    """
    variables:
      - name: namespace
        expression: "pod.metadata.?namespace.orValue('default')"
      - name: team
        expression: "node.metadata.labels.?team.orValue('')"
      - name: ownNode
        expression: "variables.team != '' && variables.namespace.startsWith(variables.team)"
    filters:
      - name: own-team-only
        expression: "variables.team == '' || variables.ownNode"
        messageExpression: "'not a node of the team of ' + variables.namespace"
    """,
)
TEAM_NODE_LIST = [node("a", {"team": "shop"}), node("b", {"team": "ads"}), node("c", {})]


def test_a_variable_that_compares_the_pod_with_the_node_is_remembered_by_what_it_reads() -> None:
    policy_set, memo = policies(TEAM_NODES), _memo()
    source = MovingSource(TEAM_NODE_LIST)
    first = _filter(policy_set, source, memo, pod("web-1", namespace="shop"))
    replica = _filter(policy_set, source, memo, pod("web-2", namespace="shop"))
    assert replica.body is first.body  # the same namespace: the same answer, remembered
    other = pod("ad-1", namespace="ads-prod")
    answer = _filter(policy_set, source, memo, other)
    fresh = verbs.run_filter(
        policy_set, source, wire.ExtenderArgs(other, None, list(NAMES)), NOW, None
    )
    assert answer.body == fresh.body != first.body
    assert wire.decode(answer.body)["NodeNames"] == ["b", "c"]


@pytest.mark.parametrize(
    ("left", "right"),
    [("1", "dyn(true)"), ("1", "dyn(1.0)"), ("'1'", "dyn(1)")],
    ids=["int and bool", "int and double", "string and int"],
)
def test_pod_side_values_equal_in_python_but_not_in_cel_have_different_signatures(
    left: str, right: str
) -> None:
    text = policy(
        "typed",
        """
        filters:
          - name: typed
            expression: "node.metadata.labels.size() ==
              (pod.metadata.labels.?kind.orValue('') == 'a' ? LEFT : RIGHT)"
        """.replace("LEFT", left).replace("RIGHT", right),
    )
    policy_set = policies(text)
    signatures = [
        prepare(policy_set, pod(labels={"kind": kind}), None, NOW).signature(True, False)
        for kind in ("a", "b")
    ]
    assert None not in signatures
    assert signatures[0] != signatures[1]


def _cluster_node(version: str, lifecycle: str = "spot") -> dict[str, Any]:
    n = node("a", {"lifecycle": lifecycle}, cpu="4")
    n["metadata"]["resourceVersion"] = version
    return n


def _bound_pod() -> dict[str, Any]:
    p = pod("db-0", cpu="1")
    p["metadata"]["uid"] = "uid-db-0"
    p["spec"]["nodeName"] = "a"
    p["status"] = {"phase": "Running"}
    return p


CLUSTER_CHANGES: list[tuple[str, Callable[[Any], None]]] = [
    ("a node is added", lambda s: s.apply("nodes", "ADDED", _cluster_node("1"))),
    ("a node changes", lambda s: s.apply("nodes", "MODIFIED", _cluster_node("2", "on-demand"))),
    ("a pod is bound to it", lambda s: s.apply("pods", "ADDED", _bound_pod())),
    ("the pod goes", lambda s: s.apply("pods", "DELETED", _bound_pod())),
    ("the node goes", lambda s: s.apply("nodes", "DELETED", _cluster_node("2"))),
]


def test_the_cluster_source_generation_advances_with_every_change_a_reply_depends_on() -> None:
    source = ClusterSource(fake_api())
    seen = [source.generation]
    for _, change in CLUSTER_CHANGES:
        change(source)
        seen.append(source.generation)
    assert seen == sorted(set(seen))  # each change a new, larger generation
    source.apply("nodes", "MODIFIED", _cluster_node("3"))  # a node it no longer has: re-added
    assert source.generation > seen[-1]


def test_a_reply_the_deadline_cut_short_is_never_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from policyext.policy import frames

    policy_set = policies(SPOT_AND_CPU)
    source = MovingSource(NODES)
    memo = _memo()
    args = wire.parse_extender_args({"Pod": CRITICAL, "NodeNames": NAMES, "Nodes": None})
    # the pod-side parts (two) are evaluated in time, every node's rules after the deadline:
    # the late reply has the same memo key as a reply in time would
    readings = iter([0.0, 0.0])
    monkeypatch.setattr(frames.time, "perf_counter", lambda: next(readings, 10.0))
    late = verbs.run_filter(policy_set, source, args, NOW, memo, deadline=1.0)
    monkeypatch.undo()
    assert late.evaluation is not None and late.evaluation.timed_out
    in_time = verbs.run_filter(policy_set, source, args, NOW, memo)
    assert in_time.evaluation is not None and not in_time.evaluation.timed_out
    assert in_time.body != late.body, "answered afresh, not from the memo"


@pytest.mark.parametrize("run", [_filter, _prioritize], ids=["filter", "prioritize"])
def test_a_list_of_names_asked_about_for_the_first_time_is_neither_looked_for_nor_kept(
    run: Callable[..., verbs.VerbResult],
) -> None:
    policy_set, source, memo = policies(SPOT_AND_CPU), MovingSource(NODES), verbs.Memo()
    first = run(policy_set, source, memo, CRITICAL)
    second = run(policy_set, source, memo, CRITICAL)
    third = run(policy_set, source, memo, CRITICAL)
    assert second.body is not first.body and second.body == first.body, "first: not kept"
    assert third.body is second.body, "asked about before: kept and found"


def test_a_memo_forgets_lists_asked_about_long_ago() -> None:
    memo = verbs.Memo()
    assert not memo.asked_before("filter", NAMES)
    assert memo.asked_before("filter", NAMES)
    assert not memo.asked_before("prioritize", NAMES), "per verb"
    for i in range(remembered.ASKED_LISTS):
        memo.asked_before("filter", [f"other-{i}"])
    assert not memo.asked_before("filter", NAMES)
