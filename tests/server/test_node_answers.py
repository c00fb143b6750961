"""Each node's part of a NodeNames reply, remembered per kind of pod: a burst's next pod is
answered by evaluating only the nodes that changed, and the reply is always the one a
fresh evaluation gives."""

from __future__ import annotations

import copy
import itertools
import random
from typing import Any

import pytest
from kubernetes import client as k8s

from policyext.cluster.cache import ClusterSource
from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import PolicySet
from policyext.server import verbs, wire
from policyext.server.node_answers import NodeAnswers
from tests.policy.helpers import NOW, node, pod, policies, policy

PLACEMENT = policy(
    "placement",
    """
    filters:
      - name: no-spot-for-critical
        expression: "pod.metadata.labels.?critical.orValue('') != 'true' ||
          node.metadata.labels.?lifecycle.orValue('') != 'spot'"
        message: critical pods stay off spot nodes
        unresolvable: true
      - name: cpu-free
        expression: "nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0"
        message: not enough free CPU
    scores:
      - name: free-cpu
        weight: 2
        expression: "nodeInfo.free.cpu.asApproximateFloat()"
      - name: few-pods
        expression: "10 - nodeInfo.podCount"
    """,
)
AUDITED = policy(
    "audited",
    """
    filters:
      - name: busy
        mode: Audit
        expression: "nodeInfo.podCount < 2"
        message: busy node
    """,
)
RELATIVE = policy(
    "relative",
    """
    scores:
      - name: most-free-cpu
        normalize: MinMax
        expression: "nodeInfo.free.cpu.asApproximateFloat()"
    """,
)
TEAMS = policy(
    "teams",
    """
    variables:
      - name: namespace
        expression: "pod.metadata.?namespace.orValue('default')"
      - name: team
        expression: "node.metadata.labels.?team.orValue('')"
      - name: busy
        expression: "nodeInfo.podCount > 1"
      - name: ownNode
        expression: "variables.team != '' && variables.namespace.startsWith(variables.team)"
    filters:
      - name: own-team-only
        expression: "variables.team == '' || variables.ownNode"
        messageExpression: "'not a node of the team of ' + variables.namespace"
    scores:
      - name: own-and-quiet
        expression: "(variables.ownNode ? 6 : 0) + (variables.busy ? 0 : 4)"
    """,
)
POLICY_SETS = {
    "filters, Clamp scores and nodeInfo": [PLACEMENT],
    "an Audit filter beside them": [PLACEMENT, AUDITED],
    "a MinMax score (each node's score depends on the others)": [PLACEMENT, RELATIVE],
    "variables that compare the pod with the node": [PLACEMENT, TEAMS],
}
NAMES = [f"n{i}" for i in range(8)]
PODS = [
    pod("web-1", labels={"critical": "true"}, cpu="1"),
    pod("web-2", labels={"critical": "true"}, cpu="1"),
    pod("batch-1", cpu="3"),
    pod("batch-2", cpu="3"),
    pod("ad-1", namespace="ads-prod", cpu="1"),
    pod("ad-2", namespace="ads-prod", cpu="1"),
]
TEAM_OF = {"n1": "shop", "n2": "ads", "n5": "ads"}


def _node(name: str, version: int, lifecycle: str, cpu: str = "4") -> dict[str, Any]:
    labels = {"lifecycle": lifecycle}
    if name in TEAM_OF:
        labels["team"] = TEAM_OF[name]
    n = node(name, labels, cpu=cpu)
    n["metadata"]["resourceVersion"] = str(version)
    return n


def _bound(name: str, node_name: str, cpu: str) -> dict[str, Any]:
    p = pod(name, cpu=cpu)
    p["metadata"]["uid"] = f"uid-{name}"
    p["spec"]["nodeName"] = node_name
    p["status"] = {"phase": "Running"}
    return p


def _cluster() -> ClusterSource:
    source = ClusterSource(k8s.ApiClient())
    nodes = [_node(name, 1, "spot" if i % 3 == 0 else "on-demand") for i, name in enumerate(NAMES)]
    source.replace("nodes", nodes)  # as the first lists do
    source.replace("pods", [])
    return source


def _args(the_pod: dict[str, Any], names: list[str]) -> wire.ExtenderArgs:
    return wire.ExtenderArgs(copy.deepcopy(the_pod), None, list(names))


def _both(
    policy_set: PolicySet,
    source: Any,
    memo: verbs.Memo,
    the_pod: dict[str, Any],
    names: list[str],
) -> tuple[verbs.VerbResult, verbs.VerbResult]:
    filtered = verbs.run_filter(policy_set, source, _args(the_pod, names), NOW, memo)
    feasible = wire.decode(filtered.body)["NodeNames"]
    return filtered, verbs.run_prioritize(policy_set, source, _args(the_pod, feasible), NOW, memo)


def _nodes_mode(
    policy_set: PolicySet, source: Any, the_pod: dict[str, Any], names: list[str]
) -> tuple[dict[str, Any], verbs.VerbResult, verbs.VerbResult]:
    """The same calls with the Node objects in the request: nothing is remembered or cached
    (the nodes' versions are not the source's to vouch for), every rule evaluated afresh.
    The filter reply as NodeNames mode would write it; the names the source does not hold
    are reported unknown there."""
    nodes = [n for n in map(source.get_node, names) if n is not None]
    args = wire.ExtenderArgs(copy.deepcopy(the_pod), copy.deepcopy(nodes), None)
    filtered = verbs.run_filter(policy_set, source, args, NOW, None)
    reply = wire.decode(filtered.body)
    feasible = [n["metadata"]["name"] for n in reply["Nodes"]["items"]]
    unknown = {n: verbs.UNKNOWN_NODE for n in names if source.get_node(n) is None}
    as_names = {
        "Nodes": None,
        "NodeNames": feasible,
        "FailedNodes": {**unknown, **reply["FailedNodes"]},
        "FailedAndUnresolvableNodes": reply["FailedAndUnresolvableNodes"],
        "Error": reply["Error"],
    }
    kept = [n for n in nodes if n["metadata"]["name"] in feasible]
    scored = wire.ExtenderArgs(copy.deepcopy(the_pod), copy.deepcopy(kept), None)
    return as_names, filtered, verbs.run_prioritize(policy_set, source, scored, NOW, None)


@pytest.mark.parametrize("texts", POLICY_SETS.values(), ids=POLICY_SETS.keys())
@pytest.mark.parametrize("seed", range(6))
def test_replies_built_from_remembered_parts_equal_fresh_evaluations(
    texts: list[str], seed: int
) -> None:
    """A scheduler's burst, as random as it gets: windows of nodes, pods bound and deleted,
    nodes relabelled, added and removed, names the cache does not know."""
    rng = random.Random(seed)
    policy_set, source, memo = policies(*texts), _cluster(), verbs.Memo()
    versions = itertools.count(2)
    bound: list[str] = []
    for step in range(60):
        the_pod = rng.choice(PODS)
        start = rng.randrange(len(NAMES))
        window = [NAMES[(start + k) % len(NAMES)] for k in range(rng.randint(1, len(NAMES)))]
        if rng.random() < 0.1:
            window.insert(rng.randrange(len(window) + 1), "not-a-node")
        remembered = _both(policy_set, source, memo, the_pod, window)
        expected, *fresh = _nodes_mode(policy_set, source, the_pod, window)
        assert wire.decode(remembered[0].body) == expected, f"step {step}"
        assert remembered[1].body == fresh[1].body, f"step {step}"
        for r, f in zip(remembered, fresh, strict=True):
            assert r.evaluation is not None and f.evaluation is not None
            assert r.evaluation.tally() == f.evaluation.tally(), "metrics and log as before"
        roll = rng.random()
        if roll < 0.5:  # the scheduler binds the pod where the filter let it go
            feasible = wire.decode(remembered[0].body)["NodeNames"]
            if feasible:
                name = f"p{step}"
                source.apply("pods", "ADDED", _bound(name, rng.choice(feasible), "1"))
                bound.append(name)
        elif roll < 0.65 and bound:
            source.apply("pods", "DELETED", _bound(bound.pop(0), "", "1"))
        elif roll < 0.8:
            lifecycle = rng.choice(["spot", "on-demand"])
            source.apply("nodes", "MODIFIED", _node(rng.choice(NAMES), next(versions), lifecycle))
        elif roll < 0.9:
            source.apply("nodes", "DELETED", _node(rng.choice(NAMES), next(versions), "spot"))
        else:
            source.apply("nodes", "ADDED", _node(rng.choice(NAMES), next(versions), "on-demand"))


def _evaluations(result: verbs.VerbResult) -> int:
    assert result.evaluation is not None
    return result.evaluation.evaluations


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_after_a_binding_only_the_node_that_changed_is_evaluated_again(verb: str) -> None:
    policy_set, source, memo = policies(PLACEMENT), _cluster(), verbs.Memo()
    run = verbs.run_filter if verb == "filter" else verbs.run_prioritize
    first = run(policy_set, source, _args(PODS[2], NAMES), NOW, memo)
    source.apply("pods", "ADDED", _bound("db-0", "n1", "1"))
    replica = run(policy_set, source, _args(PODS[3], NAMES), NOW, memo)
    # nothing changed but n1: its rules, and the pod's own side, are all that is evaluated
    pod_side = run(policy_set, source, _args(PODS[3], NAMES), NOW, memo)
    assert _evaluations(pod_side) < _evaluations(replica) < _evaluations(first)
    assert _evaluations(replica) - _evaluations(pod_side) <= 2  # two rules of either kind


def test_another_window_of_nodes_is_answered_from_the_parts_already_known() -> None:
    policy_set, source, memo = policies(PLACEMENT), _cluster(), verbs.Memo()
    verbs.run_filter(policy_set, source, _args(PODS[0], NAMES), NOW, memo)
    again = verbs.run_filter(policy_set, source, _args(PODS[1], NAMES[5:] + NAMES[:2]), NOW, memo)
    pod_only = verbs.run_filter(policy_set, source, _args(PODS[1], []), NOW, None)
    assert _evaluations(again) == _evaluations(pod_only)


ERRING = policy(
    "erring",
    """
    failurePolicy: Ignore
    filters:
      - name: numeric-lifecycle
        expression: "int(node.metadata.labels.?lifecycle.orValue('1')) > 0"
    scores:
      - name: lifecycle-as-score
        expression: "int(node.metadata.labels.?lifecycle.orValue('1'))"
    """,
)


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_a_part_that_carries_an_evaluation_error_is_never_remembered(verb: str) -> None:
    """An error may belong to the request (an exhausted cost budget), not to the node: such
    nodes are evaluated again, and their errors counted again."""
    policy_set, source, memo = policies(ERRING), _cluster(), verbs.Memo()
    run = verbs.run_filter if verb == "filter" else verbs.run_prioritize
    first = run(policy_set, source, _args(PODS[0], NAMES), NOW, memo)
    # other names' order: not the remembered whole reply
    again = run(policy_set, source, _args(PODS[1], NAMES[::-1]), NOW, memo)
    assert first.evaluation is not None and again.evaluation is not None
    assert again.evaluation.errors == first.evaluation.errors == len(NAMES)
    assert again.evaluation.tally().errors == first.evaluation.tally().errors


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_parts_the_deadline_decided_are_never_remembered(
    verb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from policyext.policy import frames

    policy_set, source, memo = policies(PLACEMENT), _cluster(), verbs.Memo()
    run = verbs.run_filter if verb == "filter" else verbs.run_prioritize
    # the pod's side in time, every node after the deadline
    readings = iter([0.0, 0.0, 0.0])
    monkeypatch.setattr(frames.time, "perf_counter", lambda: next(readings, 10.0))
    late = run(policy_set, source, _args(PODS[2], NAMES), NOW, memo, deadline=1.0)
    monkeypatch.undo()
    assert late.evaluation is not None and late.evaluation.timed_out
    # other names' order: not the remembered whole reply
    in_time = run(policy_set, source, _args(PODS[3], NAMES[::-1]), NOW, memo)
    fresh = run(policy_set, source, _args(PODS[3], NAMES[::-1]), NOW, None)
    assert in_time.body == fresh.body
    assert in_time.evaluation is not None and not in_time.evaluation.timed_out


def test_a_snapshot_answers_from_remembered_parts_too() -> None:
    nodes = [
        {**_node(name, 1, "spot" if i % 2 else "on-demand"), "kind": "Node"}
        for i, name in enumerate(NAMES)
    ]
    policy_set, source, memo = policies(PLACEMENT), SnapshotSource(nodes), verbs.Memo()
    first = verbs.run_filter(policy_set, source, _args(PODS[0], NAMES), NOW, memo)
    shifted = NAMES[1:] + NAMES[:1]
    again = verbs.run_filter(policy_set, source, _args(PODS[1], shifted), NOW, memo)
    fresh = verbs.run_filter(policy_set, source, _args(PODS[1], shifted), NOW, None)
    assert again.body == fresh.body
    assert _evaluations(again) < _evaluations(first)


def test_a_table_starts_afresh_for_another_policy_set_and_when_it_outgrows_the_nodes() -> None:
    answers: NodeAnswers[int] = NodeAnswers(kinds=2)
    first, second = policies(PLACEMENT), policies(AUDITED)
    table = answers.table(first, "kind-a", nodes=1)
    table.update((i, (object(), i)) for i in range(2 * 1 + 1024))
    assert answers.table(first, "kind-a", nodes=1) is table  # at the limit: kept
    table[-1] = (object(), -1)
    assert answers.table(first, "kind-a", nodes=1) == {}  # past it: afresh
    kept = answers.table(first, "kind-a", nodes=1)
    kept[0] = (object(), 0)
    assert answers.table(second, "kind-a", nodes=1) == {}  # another policy set
    assert answers.table(first, "kind-a", nodes=1) == {}  # and the first's are gone


def test_only_the_latest_kinds_of_pods_are_kept() -> None:
    answers: NodeAnswers[int] = NodeAnswers(kinds=2)
    policy_set = policies(PLACEMENT)
    for kind in ("a", "b", "c"):
        answers.table(policy_set, kind, nodes=1)[0] = (object(), 0)
    assert answers.table(policy_set, "c", nodes=1) != {}
    assert answers.table(policy_set, "a", nodes=1) == {}  # the oldest went first
