"""The server decides what the engine decides: filter, prioritize and /explain over HTTP
against `policyext.policy.engine.evaluate` called directly on the same policies and cluster.
"""

from __future__ import annotations

from typing import Any

import pytest

from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import PolicySet, load_policy_set
from policyext.policy.engine import Evaluation, NodeVerdict, evaluate
from tests.server.harness import CLUSTER, RULES, ExtenderServer
from tests.server.kube import Json, args_with_names, fixture, pod

NODES = ["general-a", "general-b", "general-c", "spot-c", "gpu-a", "payments-b"]
PODS: dict[str, Json] = {
    "a critical shop pod": fixture("filter-names.request.json")["Pod"],
    "a payments pod": pod(
        "ledger-1",
        "payments-prod",
        requests={"cpu": "1", "memory": "2Gi"},
        tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "payments", "effect": "NoSchedule"}
        ],
    ),
    "a GPU training pod": pod("train-2", "ml", requests={"cpu": "2", "nvidia.com/gpu": "1"}),
    "a kube-system pod": pod("coredns-2", "kube-system", labels={"critical": "true"}),
    "a pod preferring a zone": pod(
        "api-1", "shop", annotations={"scheduling.policyext.io/preferred-zone": "eu-west-1b"}
    ),
    "a DaemonSet pod": pod("exporter-x1", "monitoring", owner_kind="DaemonSet"),
}


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return load_policy_set([RULES])


@pytest.fixture(scope="module")
def source() -> SnapshotSource:
    return SnapshotSource.from_file(CLUSTER)


def _engine(policies: PolicySet, source: SnapshotSource, p: Json, **kwargs: Any) -> Evaluation:
    return evaluate(policies, p, [source.nodes[n] for n in NODES], source, **kwargs)


def _first_unresolvable(v: NodeVerdict) -> str:
    return next(r.message for r in v.rejections if r.unresolvable)


@pytest.mark.parametrize("pod_object", PODS.values(), ids=PODS.keys())
def test_the_filter_reply_is_the_engines_verdict_node_for_node(
    demo_server: ExtenderServer, policies: PolicySet, source: SnapshotSource, pod_object: Json
) -> None:
    ev = _engine(policies, source, pod_object, scores=False)
    result = demo_server.post_json("/filter", args_with_names(pod_object, NODES)).json()
    assert result["NodeNames"] == [v.name for v in ev.nodes if v.feasible]
    assert result["FailedNodes"] == {
        v.name: v.message() for v in ev.nodes if not v.feasible and not v.unresolvable
    }
    assert result["FailedAndUnresolvableNodes"] == {
        v.name: _first_unresolvable(v) for v in ev.nodes if v.unresolvable
    }


@pytest.mark.parametrize("pod_object", PODS.values(), ids=PODS.keys())
def test_prioritize_over_the_feasible_nodes_gives_the_engines_final_scores(
    demo_server: ExtenderServer, policies: PolicySet, source: SnapshotSource, pod_object: Json
) -> None:
    ev = _engine(policies, source, pod_object)
    feasible = [v.name for v in ev.nodes if v.feasible]
    scores = demo_server.post_json("/prioritize", args_with_names(pod_object, feasible)).json()
    assert {s["Host"]: s["Score"] for s in scores} == {v.name: v.score for v in ev.feasible()}


@pytest.mark.parametrize("pod_object", PODS.values(), ids=PODS.keys())
def test_prioritize_over_all_nodes_scores_as_the_engine_does_without_filters(
    demo_server: ExtenderServer, policies: PolicySet, source: SnapshotSource, pod_object: Json
) -> None:
    ev = _engine(policies, source, pod_object, filters=False)
    scores = demo_server.post_json("/prioritize", args_with_names(pod_object, NODES)).json()
    assert [(s["Host"], s["Score"]) for s in scores] == [(v.name, v.score) for v in ev.nodes]


@pytest.mark.parametrize("pod_object", PODS.values(), ids=PODS.keys())
def test_explain_agrees_with_filter_prioritize_and_the_engine_with_per_rule_detail(
    demo_server: ExtenderServer, policies: PolicySet, source: SnapshotSource, pod_object: Json
) -> None:
    ev = _engine(policies, source, pod_object)
    request = args_with_names(pod_object, NODES)
    explained = demo_server.post_json("/explain", request).json()
    filtered = demo_server.post_json("/filter", request).json()
    feasible = [n["name"] for n in explained["nodes"] if n["feasible"]]
    prioritized = demo_server.post_json("/prioritize", args_with_names(pod_object, feasible)).json()

    assert explained["policyVersion"] == ev.version == policies.version
    assert feasible == filtered["NodeNames"] == [v.name for v in ev.feasible()]
    final = {n["name"]: n["score"] for n in explained["nodes"] if n["feasible"]}
    assert final == {s["Host"]: s["Score"] for s in prioritized}
    assert final == {v.name: v.score for v in ev.feasible()}
    assert [p["name"] for p in explained["policies"] if p["applies"]] == ev.applied()
    assert explained["unknownNodes"] == {}
    for node, verdict in zip(explained["nodes"], ev.nodes, strict=True):
        assert [(r["policy"], r["rule"], r["message"]) for r in node["rejections"]] == [
            (r.policy, r.rule, r.message) for r in verdict.rejections
        ]
        assert [(s["policy"], s["rule"], s["weight"]) for s in node["scores"]] == [
            (s.policy, s.rule, s.weight) for s in verdict.scores
        ]


def test_explain_reports_node_names_it_cannot_resolve(demo_server: ExtenderServer) -> None:
    request = args_with_names(PODS["a critical shop pod"], ["general-a", "gone-7"])
    explained = demo_server.post_json("/explain", request).json()
    assert [n["name"] for n in explained["nodes"]] == ["general-a"]
    assert explained["unknownNodes"] == {"gone-7": "node is not in policyext's node cache"}


def test_explain_without_node_names_explains_every_node_of_the_node_source(
    demo_server: ExtenderServer, source: SnapshotSource
) -> None:
    named = demo_server.post_json(
        "/explain", args_with_names(PODS["a critical shop pod"], sorted(source.nodes))
    ).json()
    unnamed = demo_server.post_json("/explain", {"Pod": PODS["a critical shop pod"]}).json()
    assert [n["name"] for n in unnamed["nodes"]] == sorted(source.nodes)
    assert unnamed["nodes"] == named["nodes"]
    assert unnamed["unknownNodes"] == {}


def test_the_pods_of_the_table_exercise_rejections_scores_and_unmatched_policies(
    policies: PolicySet, source: SnapshotSource
) -> None:
    # guards the table above: agreement on trivial decisions would prove little
    evaluations = [_engine(policies, source, p) for p in PODS.values()]
    assert any(v.rejections for ev in evaluations for v in ev.nodes)
    assert any(v.score for ev in evaluations for v in ev.nodes)
    assert any(not m.applies for ev in evaluations for m in ev.matches)
    assert len({tuple(v.name for v in ev.feasible()) for ev in evaluations}) >= 3
