"""FailedNodes and FailedAndUnresolvableNodes name every rule that rejected a node: the
messages in policy-name then rule order, each once, joined with `; ` (policy-format.md),
whether the reply is computed, remembered whole (memo.py) or made of each node's
remembered part (node_answers.py), in NodeNames and in Nodes mode, and in /explain."""

from __future__ import annotations

import pytest

from policyext.cluster.snapshot import read_objects
from tests.server.conftest import ServerFactory
from tests.server.harness import CLUSTER, ExtenderServer
from tests.server.kube import args_with_names, pod

# "a-first" sorts before "b-second", whatever the file order
POLICIES = """
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: b-second}
spec:
  filters:
  - {name: not-spot, expression: "node.metadata.name != 'spot-c'", message: no spot}
  - {name: same, expression: "node.metadata.name != 'general-a'", message: shared message}
---
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: a-first}
spec:
  filters:
  - {name: one, expression: "node.metadata.name != 'spot-c'", message: first policy}
  - {name: two, expression: "node.metadata.name != 'general-a'", message: shared message}
  - {name: watch, mode: Audit, expression: "false", message: audit only}
  - name: gpu
    expression: "node.metadata.name != 'gpu-a'"
    message: gpu nodes are not for this pod
    unresolvable: true
  - name: broken
    expression: "node.metadata.name != 'gpu-a' || node.metadata.labels.absent == 'x'"
  - name: ignored
    failurePolicy: Ignore
    expression: "node.metadata.name != 'spot-c' || node.metadata.labels.absent == 'x'"
"""
NODES = ["general-a", "general-b", "general-c", "spot-c", "gpu-a", "payments-b"]
FAILED = {"spot-c": "first policy; no spot", "general-a": "shared message"}
UNRESOLVABLE = {"gpu-a": "gpu nodes are not for this pod; a-first/broken could not be evaluated"}


@pytest.fixture(scope="module")
def server(serve: ServerFactory, tmp_path_factory: pytest.TempPathFactory) -> ExtenderServer:
    rules = tmp_path_factory.mktemp("rules") / "policies.yaml"
    rules.write_text(POLICIES, encoding="utf-8")
    return serve(rules=[rules], snapshot=CLUSTER)


@pytest.mark.parametrize(
    "pods",
    [["web-1"], ["web-1", "web-1"], ["web-1", "web-2", "web-3"]],
    ids=["computed", "the same pod again: the remembered reply", "replicas: each node's part"],
)
def test_filter_names_every_rejecting_rule_of_a_node(
    server: ExtenderServer, pods: list[str]
) -> None:
    for name in pods:
        reply = server.post_json("/filter", args_with_names(pod(name, "shop"), NODES)).json()
        assert reply["FailedNodes"] == FAILED
        assert reply["FailedAndUnresolvableNodes"] == UNRESOLVABLE
        assert reply["NodeNames"] == ["general-b", "general-c", "payments-b"]


def test_filter_in_nodes_mode_names_every_rejecting_rule_too(server: ExtenderServer) -> None:
    nodes = [o for o in read_objects(CLUSTER) if o.get("kind") == "Node"]
    args = {"Pod": pod("web-4", "shop"), "Nodes": {"items": nodes}, "NodeNames": None}
    reply = server.post_json("/filter", args).json()
    assert reply["FailedNodes"] == FAILED
    assert reply["FailedAndUnresolvableNodes"] == UNRESOLVABLE


def test_explain_shows_the_message_the_scheduler_gets(server: ExtenderServer) -> None:
    reply = server.post_json("/explain", args_with_names(pod("web-5", "shop"), NODES)).json()
    messages = {n["name"]: n.get("message") for n in reply["nodes"] if not n["feasible"]}
    assert messages == FAILED | UNRESOLVABLE
