"""A node that an unresolvable rule and an ordinary rule both reject goes to
FailedAndUnresolvableNodes, whichever rule comes first and whatever an Audit rule between
them says: kube-scheduler tries preemption for FailedNodes only, and evicting pods cannot
make such a node fit.

The policies (fixtures/mixed-rejections) each apply to pods labelled with their case; over
the demo cluster, spot-c (a spot node in zone eu-west-1c) is rejected by both rules and
general-c (zone eu-west-1c) by the ordinary one alone. The replies are compared byte for
byte, as the committed fixtures of test_wire_format.py are.
"""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import FIXTURES, ExtenderServer
from tests.server.kube import args_with_names, args_with_nodes, fixture, pod

CASES = ["unresolvable-first", "ordinary-first", "audit-between"]
DEMO_NODES = ["general-a", "general-b", "general-c", "spot-c", "gpu-a", "payments-b"]
FEASIBLE = ["general-a", "general-b", "gpu-a", "payments-b"]
SPOT = "spot nodes are out for good"
ZONE = "zone eu-west-1c is full"
# each rejected node's message: its rules' messages in policy then rule order
SPOT_C = {
    "unresolvable-first": f"{SPOT}; {ZONE}",
    "ordinary-first": f"{ZONE}; {SPOT}",
    "audit-between": f"{SPOT}; {ZONE}",
}


@pytest.fixture(scope="module")
def server(serve: ServerFactory) -> ExtenderServer:
    return serve(rules=[FIXTURES / "mixed-rejections"])


def _pod(case: str) -> dict[str, object]:
    return pod(f"web-{case}", "shop", labels={"case": case})


@pytest.mark.parametrize("case", CASES)
def test_a_node_names_filter_lists_a_node_rejected_by_both_rules_as_unresolvable(
    server: ExtenderServer, case: str
) -> None:
    reply = server.post_json("/filter", args_with_names(_pod(case), DEMO_NODES))
    assert reply.status == 200
    assert reply.body == (
        b'{"Nodes":null,"NodeNames":["general-a","general-b","gpu-a","payments-b"],'
        b'"FailedNodes":{"general-c":"zone eu-west-1c is full"},'
        b'"FailedAndUnresolvableNodes":{"spot-c":"' + SPOT_C[case].encode() + b'"},'
        b'"Error":""}'
    )


@pytest.mark.parametrize("case", CASES)
def test_a_node_list_filter_lists_a_node_rejected_by_both_rules_as_unresolvable(
    server: ExtenderServer, case: str
) -> None:
    items = fixture("filter-nodes.request.json")["Nodes"]["items"]
    reply = server.post_json("/filter", args_with_nodes(_pod(case), items))
    assert reply.status == 200
    by_name = {n["metadata"]["name"]: n for n in items}
    feasible = [by_name[name] for name in FEASIBLE]
    nodes = json.dumps({"metadata": {}, "items": feasible}, separators=(",", ":"))
    assert reply.body == (
        b'{"Nodes":' + nodes.encode() + b',"NodeNames":null,'
        b'"FailedNodes":{"general-c":"zone eu-west-1c is full"},'
        b'"FailedAndUnresolvableNodes":{"spot-c":"' + SPOT_C[case].encode() + b'"},'
        b'"Error":""}'
    )


@pytest.mark.parametrize("case", CASES)
def test_with_an_unknown_node_named_too_the_node_rejected_by_both_rules_is_still_unresolvable(
    server: ExtenderServer, case: str
) -> None:
    """An unknown name sends the reply down its other path (the refusals as arrays of
    distinct messages rather than a dict per node)."""
    reply = server.post_json("/filter", args_with_names(_pod(case), [*DEMO_NODES, "gone-7"]))
    assert reply.status == 200
    assert reply.body == (
        b'{"Nodes":null,"NodeNames":["general-a","general-b","gpu-a","payments-b"],'
        b'"FailedNodes":{"gone-7":"node is not in policyext\'s node cache",'
        b'"general-c":"zone eu-west-1c is full"},'
        b'"FailedAndUnresolvableNodes":{"spot-c":"' + SPOT_C[case].encode() + b'"},'
        b'"Error":""}'
    )
