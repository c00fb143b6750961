"""The emulated score plugins and how kube-scheduler adds them to the extender's score."""

from __future__ import annotations

from typing import Any

from policyext.offline.scheduler.cluster import Cluster
from policyext.offline.scheduler.decision import decide
from policyext.offline.scheduler.framework import run_scores
from policyext.policy.compile import load_policy_texts
from tests.offline.scheduler.test_filters import bound, node, pod

PREFER_B = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: prefer-b}
spec:
  filters:
    - name: not-c
      expression: "node.metadata.name != 'c'"
      message: "not on c"
  scores:
    - name: b
      expression: "node.metadata.name == 'b' ? 10 : 0"
"""


def _scores(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]], incoming: dict[str, Any]
) -> list[dict[str, int]]:
    cluster = Cluster(nodes, pods)
    return [
        {s.plugin: s.score for s in per_node}
        for per_node in run_scores(incoming, cluster, cluster.nodes)
    ]


def test_an_empty_node_scores_by_the_share_left_free_and_the_balance_the_pod_keeps() -> None:
    requests = {"cpu": "1", "memory": "1Gi"}
    incoming = pod(containers=[{"name": "c", "resources": {"requests": requests}}])
    [scores] = _scores([node("n", cpu="4", memory="8Gi")], [], incoming)
    # cpu (4000-1000)*100/4000 = 75, memory 7/8 -> 87: (75+87)/2; balance 100 before, 93
    # after (fractions .25 and .125): 50 + (50 - 7) / 2
    assert scores == {
        "TaintToleration": 100,
        "NodeResourcesFit": 81,
        "NodeResourcesBalancedAllocation": 71,
        "ImageLocality": 0,
    }


def test_untolerated_prefer_no_schedule_taints_score_lower_and_best_effort_pods_skip_balance() -> (
    None
):
    nodes = [node("a"), node("b", spec={"taints": [{"key": "k", "effect": "PreferNoSchedule"}]})]
    incoming = pod(containers=[{"name": "c"}])
    scores = _scores(nodes, [], incoming)
    assert [s["TaintToleration"] for s in scores] == [100, 0]
    assert all("NodeResourcesBalancedAllocation" not in s for s in scores)


def test_preferred_node_affinity_and_pod_affinity_score_the_matching_nodes() -> None:
    nodes = [node("a", labels={"zone": "a"}), node("b", labels={"zone": "b"})]
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 20,
                    "preference": {
                        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]
                    },
                }
            ]
        },
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 5,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "db"}},
                        "topologyKey": "zone",
                    },
                }
            ]
        },
    }
    scores = _scores(nodes, [bound("db", "a", labels={"app": "db"})], pod(affinity=affinity))
    assert [(s["NodeAffinity"], s["InterPodAffinity"]) for s in scores] == [(0, 100), (100, 0)]


def test_the_total_adds_the_policy_score_times_the_extender_weight_times_ten() -> None:
    policies = load_policy_texts({"prefer-b.yaml": PREFER_B})
    nodes = [node("a"), node("b"), node("c")]
    for weight in (1, 5):
        decision = decide(
            policies, pod(), nodes, None, None, Cluster(nodes, []), extender_weight=weight
        )
        a, b, c = decision.nodes
        plugins = sum(s.weighted for s in b.plugin_scores)
        assert (b.policy_score, b.total) == (10, plugins + 10 * weight * 10)
        assert a.total == sum(s.weighted for s in a.plugin_scores)
        assert (c.rejected_by, c.total) == ("policies", None)
        assert decision.best() is b and decision.tied() == ["b"]


def test_the_unschedulable_message_is_kube_schedulers_sorted_histogram() -> None:
    policies = load_policy_texts({"prefer-b.yaml": PREFER_B})
    nodes = [
        node("a", cpu="1"),
        node("b", cpu="1"),
        node("c"),
        node("d", spec={"unschedulable": True}),
    ]
    decision = decide(policies, pod(cpu="2"), nodes, None, None, Cluster(nodes, []))
    assert decision.best() is None
    # c fits the plugins, so the extender's message counts for it
    assert decision.unschedulable_message() == (
        "0/4 nodes are available: 1 node(s) were unschedulable, 1 not on c, 2 Insufficient cpu."
    )


def test_without_the_emulation_the_policies_alone_decide() -> None:
    policies = load_policy_texts({"prefer-b.yaml": PREFER_B})
    tainted = node("b", spec={"taints": [{"key": "k", "effect": "NoSchedule"}]})
    nodes = [node("a"), tainted]
    assert decide(policies, pod(), nodes, None, None, None).tied() == ["b"]
    assert decide(policies, pod(), nodes, None, None, Cluster(nodes, [])).tied() == ["a"]


def test_containers_without_requests_count_the_scheduler_defaults_when_scoring() -> None:
    from policyext.offline.scheduler.cluster import non_zero_requests_of, requests_of

    sidecar = {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}
    incoming = pod(containers=[{"name": "c"}], initContainers=[sidecar], overhead={"cpu": "50m"})
    assert requests_of(incoming) == {"cpu": 1050, "memory": 0}
    # the container and the sidecar without a memory request count 200Mi each
    assert non_zero_requests_of(incoming) == {"cpu": 1150, "memory": 2 * 200 * 1024 * 1024}
