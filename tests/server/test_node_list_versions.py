"""A NodeList request (nodeCacheCapable: false) whose Nodes the node source holds in the
very versions sent is answered from the values kept for those versions, as a NodeNames
request is; any node in another version (or without one) makes the request's own Nodes
the answer's, so what the scheduler sent always decides."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s

from policyext.cluster.cache import ClusterSource
from policyext.server import verbs, wire
from tests.policy.helpers import NOW, node, pod, policies, policy

POLICY = policy(
    "placement",
    """
    filters:
      - name: no-spot
        expression: "node.metadata.labels.?lifecycle.orValue('') != 'spot'"
      - name: cpu-fits
        expression: "nodeInfo.allocatable.cpu.compareTo(podRequests.cpu) >= 0"
    """,
)
HELD = [
    node("a", {"lifecycle": "on-demand"}, cpu="4"),
    node("b", {"lifecycle": "on-demand"}, cpu="8"),
    node("c", {"lifecycle": "on-demand"}, cpu="1"),
]


def _source() -> ClusterSource:
    source = ClusterSource(k8s.ApiClient())  # fed by hand: no API server
    source.replace("nodes", copy.deepcopy(HELD))
    source.replace("pods", [])
    return source


def _newer_b() -> dict[str, Any]:
    b = node("b", {"lifecycle": "spot"}, cpu="8")
    b["metadata"]["resourceVersion"] = "2"
    return b


def _without_version() -> dict[str, Any]:
    b = node("b", {"lifecycle": "spot"}, cpu="8")
    del b["metadata"]["resourceVersion"]
    return b


CASES = [
    # (what the request sends for node b, feasible nodes, the source's values answer)
    ("the version the source holds", HELD[1], ["a", "b"], True),
    ("a newer version than the source's (now spot)", _newer_b(), ["a"], False),
    ("a node without a resourceVersion (spot)", _without_version(), ["a"], False),
    ("a node the source does not hold", node("z", {"lifecycle": "on-demand"}), ["a", "z"], False),
]


@pytest.mark.parametrize(
    ("b", "feasible", "kept"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_node_list_is_answered_from_kept_values_only_when_every_version_is_the_sources(
    b: dict[str, Any], feasible: list[str], kept: bool
) -> None:
    policy_set, source = policies(POLICY), _source()
    sent = [copy.deepcopy(HELD[0]), copy.deepcopy(b), copy.deepcopy(HELD[2])]

    def ask() -> verbs.VerbResult:
        args = wire.ExtenderArgs(pod(cpu="2"), copy.deepcopy(sent), None)
        return verbs.run_filter(policy_set, source, args, NOW)

    first, second = ask(), ask()
    for result in (first, second):
        reply = orjson.loads(result.body)
        assert [n["metadata"]["name"] for n in reply["Nodes"]["items"]] == feasible
        assert reply["Nodes"]["items"] == [n for n in sent if n["metadata"]["name"] in feasible]
    assert second.evaluation is not None
    # the pod's request once, and each node's two values unless they were kept
    assert second.evaluation.evaluations == (1 if kept else 1 + 2 * len(sent))
