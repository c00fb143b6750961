"""A NodeList request (nodeCacheCapable: false) whose Nodes the node source holds in the
very versions sent is answered from the values kept for those versions, as a NodeNames
request is; any node in another version (or without one) makes the request's own Nodes
the answer's, so what the scheduler sent always decides."""

from __future__ import annotations

import copy
import gc
from typing import Any

import orjson
import pytest

from policyext.cluster.cache import ClusterSource
from policyext.server import verbs, wire
from tests.cluster.fake_core import fake_api
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
    source = ClusterSource(fake_api())  # fed by hand: no API server
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


def _older_b() -> dict[str, Any]:
    """b as it was before the version the source holds (spot then): versions are opaque
    to clients, so any other version sent decides, older as well as newer."""
    b = node("b", {"lifecycle": "spot"}, cpu="8")
    b["metadata"]["resourceVersion"] = "0"
    return b


CASES = [
    # (what the request sends for node b, feasible nodes, the source's values answer)
    ("the version the source holds", HELD[1], ["a", "b"], True),
    ("a newer version than the source's (now spot)", _newer_b(), ["a"], False),
    ("a node without a resourceVersion (spot)", _without_version(), ["a"], False),
    ("an older version than the source's (spot then)", _older_b(), ["a"], False),
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


def test_a_node_without_a_version_is_never_taken_for_a_held_node_without_one() -> None:
    """A node source may hold a node with an empty resourceVersion (a snapshot written by
    hand): a node sent without one is still not known to be that version, and the request's
    own Nodes answer."""
    policy_set = policies(POLICY)
    held = copy.deepcopy(HELD)
    held[1]["metadata"]["resourceVersion"] = ""
    source = ClusterSource(fake_api())
    source.replace("nodes", held)
    source.replace("pods", [])
    sent = [copy.deepcopy(HELD[0]), _without_version()]  # b now spot, sent without a version
    args = wire.ExtenderArgs(pod(cpu="2"), sent, None)
    reply = orjson.loads(verbs.run_filter(policy_set, source, args, NOW).body)
    assert [n["metadata"]["name"] for n in reply["Nodes"]["items"]] == ["a"]


def test_a_node_list_naming_a_held_node_twice_is_answered_from_the_nodes_sent() -> None:
    """Kept values are per slot, one row per node: a NodeList that sends a node twice (in
    the version the source holds) is answered from its own Nodes, each copy evaluated and
    listed as sent."""
    policy_set, source = policies(POLICY), _source()
    sent = [HELD[0], HELD[1], HELD[1]]
    for _ in range(2):  # (the second time too: nothing kept is taken for the copies)
        args = wire.ExtenderArgs(pod(cpu="2"), copy.deepcopy(sent), None)
        result = verbs.run_filter(policy_set, source, args, NOW)
        reply = orjson.loads(result.body)
        assert reply["Nodes"]["items"] == sent
        assert result.evaluation is not None
        assert result.evaluation.evaluations == 1 + 2 * len(sent)


# -- a large NodeList, read by the fast decoder: its Nodes are decoded only when read


def _padded(n: dict[str, Any]) -> dict[str, Any]:
    """A Node as large as real ones are (images and the like), so that a request of a few
    of them takes the fast decoder's path."""
    padded = copy.deepcopy(n)
    padded["status"]["images"] = [{"names": [f"registry/image-{i}" * 20]} for i in range(400)]
    return padded


def _odd_shape() -> dict[str, Any]:
    odd = _padded(node("odd", {"lifecycle": "on-demand"}))
    odd["status"]["conditions"] = {"not": "a list"}
    del odd["metadata"]["resourceVersion"]
    return odd


LARGE_CASES = [
    ("the versions the source holds", [_padded(n) for n in HELD], ["a", "b"], True),
    ("one newer version (spot)", [_padded(HELD[0]), _padded(_newer_b())], ["a"], False),
    ("a node of an odd shape", [_padded(HELD[0]), _odd_shape()], ["a", "odd"], False),
]


@pytest.mark.parametrize(
    ("sent", "feasible", "kept"), [c[1:] for c in LARGE_CASES], ids=[c[0] for c in LARGE_CASES]
)
def test_a_large_node_list_answers_as_the_general_decoder_does(
    sent: list[dict[str, Any]], feasible: list[str], kept: bool
) -> None:
    from policyext.server.fastwire import LARGE_BODY, LazyNodes, decode_fast

    policy_set, source = policies(POLICY), _source()
    body = orjson.dumps(
        {"Pod": pod(cpu="2"), "Nodes": {"metadata": {}, "items": sent}, "NodeNames": None}
    )
    assert len(body) > LARGE_BODY
    fast = decode_fast(body, policy_set.node_fields)
    assert fast is not None, "the fast decoder read it"
    general = wire.parse_extender_args(wire.decode(body))

    by_fast = verbs.run_filter(policy_set, source, fast, NOW)
    by_general = verbs.run_filter(policy_set, source, general, NOW)
    assert by_fast.body == by_general.body
    reply = orjson.loads(by_fast.body)
    assert [n["metadata"]["name"] for n in reply["Nodes"]["items"]] == feasible
    assert by_fast.evaluation is not None and by_general.evaluation is not None
    # held: the values kept for the source's versions answer, and no Node is decoded
    assert (by_general.evaluation.evaluations == 1) is kept
    assert isinstance(fast.nodes, LazyNodes)
    assert fast.nodes.decoded() == (0 if kept else len(sent))


@pytest.mark.parametrize(
    "spelling",
    [
        {"Pod": "pod"},
        {"NodeNames": "nodeNames"},
        {"items": "Items"},
    ],
    ids=[
        "the pod's key in lower case",
        "NodeNames in another case",
        "the list's items capitalised",
    ],
)
def test_a_large_body_with_a_key_in_another_case_is_read_as_go_reads_it(
    spelling: dict[str, str],
) -> None:
    """Go's decoder matches keys whatever their case; the fast decoder knows one spelling
    and leaves any other body to the general decoder, which gives what Go would."""
    from policyext.server.entrance import extender_args
    from policyext.server.fastwire import LARGE_BODY

    policy_set = policies(POLICY)
    nodes = {"metadata": {}, spelling.get("items", "items"): [_padded(n) for n in HELD]}
    body = orjson.dumps(
        {
            spelling.get("Pod", "Pod"): pod(cpu="2"),
            "Nodes": nodes,
            spelling.get("NodeNames", "NodeNames"): ["a"],
        }
    )
    assert len(body) > LARGE_BODY
    general = wire.parse_extender_args(wire.decode(body), check_repeats=False)
    assert extender_args(policy_set, body) == general


# a policy reading a field of spec, which the fast decoder keeps between metadata's and
# status' (in the order of their names)
SPEC_POLICY = policy(
    "schedulable",
    """
    filters:
      - name: not-cordoned
        expression: "!node.spec.?unschedulable.orValue(false)"
    """,
)


def _without(path: tuple[str, ...]) -> dict[str, Any]:
    bare = _padded(node("bare", {"lifecycle": "on-demand"}, cpu="8"))
    *parents, last = path
    held = bare
    for key in parents:
        held = held[key]
    del held[last]
    return bare


@pytest.mark.parametrize(
    "missing", [("spec",), ("metadata", "labels")], ids=["without spec", "without labels"]
)
def test_a_large_node_without_a_field_the_policies_read_before_others_answers_as_in_general(
    missing: tuple[str, ...],
) -> None:
    """The fast decoder keeps only the fields the policies read: a field a Node leaves out
    is skipped, and those after it are still kept."""
    from policyext.server.fastwire import decode_fast

    policy_set, source = policies(POLICY, SPEC_POLICY), _source()
    assert {("spec", "unschedulable"), ("status", "allocatable")} <= policy_set.node_fields
    sent = [_padded(HELD[0]), _without(missing)]
    body = orjson.dumps(
        {"Pod": pod(cpu="2"), "Nodes": {"metadata": {}, "items": sent}, "NodeNames": None}
    )
    fast = decode_fast(body, policy_set.node_fields)
    assert fast is not None
    general = wire.parse_extender_args(wire.decode(body))
    by_fast = verbs.run_filter(policy_set, source, fast, NOW)
    assert by_fast.body == verbs.run_filter(policy_set, source, general, NOW).body


def test_the_fast_decoder_leaves_garbage_collection_as_it_found_it() -> None:
    from policyext.server.fastwire import decode_fast

    body = orjson.dumps(
        {"Pod": pod(cpu="2"), "Nodes": {"items": [_padded(n) for n in HELD]}, "NodeNames": None}
    )
    assert gc.isenabled()
    fast = decode_fast(body, policies(POLICY).node_fields)
    assert fast is not None and fast.nodes is not None
    assert gc.isenabled()
    assert fast.nodes[0]["metadata"]["name"] == "a"  # a Node decoded when read
    assert gc.isenabled()
    gc.disable()
    try:
        decode_fast(body, policies(POLICY).node_fields)
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- what the fast decoder leaves to the general decoder, and how it decodes a Node


def _large_list(*items: object, pod_value: object = None) -> bytes:
    """A NodeList request past the fast decoder's threshold: `items` after two Nodes of
    the usual size."""
    sent = [_padded(HELD[0]), _padded(HELD[2]), *items]
    return orjson.dumps(
        {
            "Pod": pod(cpu="2") if pod_value is None else pod_value,
            "Nodes": {"metadata": {}, "items": sent},
            "NodeNames": None,
        }
    )


def _named(name: object) -> dict[str, Any]:
    named = node("named", {"lifecycle": "on-demand"})
    named["metadata"]["name"] = name
    return named


def _unnamed() -> dict[str, Any]:
    unnamed = node("unnamed", {"lifecycle": "on-demand"})
    del unnamed["metadata"]["name"]
    return unnamed


def _padding() -> bytes:
    return b', "Padding": "' + b"p" * 300_000 + b'"}'


LEFT_TO_GENERAL = [
    ("a node named by the empty string", _large_list(_named("")), "Nodes.items[2].metadata.name"),
    ("a node named by a number", _large_list(_named(5)), "Nodes.items[2].metadata.name"),
    ("a node without a name", _large_list(_unnamed()), "Nodes.items[2].metadata.name"),
    ("a node whose metadata is null", _large_list({"metadata": None}), "Nodes.items[2].metadata"),
    ("a node that is not an object", _large_list(5), "Nodes.items[2]"),
    ("a pod that is a string", _large_list(pod_value="checkout"), "Pod"),
    (
        "arrays nested deeper than the decoder recurses",
        b'{"Pod": {"x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}" + _padding(),
        "not valid JSON",
    ),
    ("invalid UTF-8", b'{"Pod": {"x": "\xff"}' + _padding(), "not valid JSON"),
]


@pytest.mark.parametrize(
    ("body", "says"), [c[1:] for c in LEFT_TO_GENERAL], ids=[c[0] for c in LEFT_TO_GENERAL]
)
def test_a_large_body_the_fast_decoder_cannot_read_gets_the_general_decoders_error(
    body: bytes, says: str
) -> None:
    """The fast decoder reads only what it can read as Go would; anything else (a Node
    without a proper name, a shape it does not know, JSON it cannot decode) it leaves to
    the general decoder, whose error says what is wrong."""
    from policyext.server.entrance import extender_args
    from policyext.server.fastwire import LARGE_BODY, decode_fast

    policy_set = policies(POLICY)
    assert len(body) > LARGE_BODY
    assert decode_fast(body, policy_set.node_fields) is None
    with pytest.raises(wire.WireError) as general:
        wire.parse_extender_args(wire.decode(body))
    assert says in str(general.value)
    with pytest.raises(wire.WireError) as answered:
        extender_args(policy_set, body)
    assert str(answered.value) == str(general.value)


def _status_a_string() -> dict[str, Any]:
    odd = _padded(node("odd", {"lifecycle": "on-demand"}))
    odd["status"] = "Ready"
    del odd["metadata"]["resourceVersion"]  # (not the source's: the Nodes sent answer)
    return odd


def test_a_large_node_with_a_field_of_another_shape_is_read_whole_as_in_general() -> None:
    """A Node whose status is not an object does not fit the fields the policies read
    (status.allocatable): it is decoded whole, and the rule reading it fails on that node
    alone, as with the general decoder."""
    from policyext.server.fastwire import decode_fast

    policy_set, source = policies(POLICY), _source()
    body = _large_list(_status_a_string())
    fast = decode_fast(body, policy_set.node_fields)
    assert fast is not None and fast.nodes is not None
    general = wire.parse_extender_args(wire.decode(body))
    by_fast = verbs.run_filter(policy_set, source, fast, NOW)
    assert by_fast.body == verbs.run_filter(policy_set, source, general, NOW).body
    assert orjson.loads(by_fast.body)["FailedNodes"]["odd"] == (
        "placement/cpu-fits could not be evaluated"
    )
    assert fast.nodes[2]["status"] == "Ready"


WHOLE_NODE_POLICY = policy(
    "whole",
    """
    filters:
      - name: any-node
        expression: "[node].size() == 1"
    """,
)


@pytest.mark.parametrize(
    ("read", "kept"),
    [
        (
            POLICY,
            # (metadata whole and status.allocatable are the engine's; spec unread)
            {"metadata": {"labels", "name", "resourceVersion"}, "status": {"allocatable"}},
        ),
        (WHOLE_NODE_POLICY, None),
    ],
    ids=["the fields the policies read", "the whole Node, when a policy reads it whole"],
)
def test_a_large_nodes_decoded_value_holds_what_the_policies_read(
    read: str, kept: dict[str, set[str]] | None
) -> None:
    """A Node is decoded with the fields the policies read (and those the engine reads)
    and no others, or whole when an expression takes the Node itself."""
    from policyext.server.fastwire import decode_fast

    sent = _padded(HELD[0])
    fast = decode_fast(_large_list(sent), policies(read).node_fields)
    assert fast is not None and fast.nodes is not None
    decoded = fast.nodes[2]
    if kept is None:
        assert decoded == sent
    else:
        assert {k: set(v) for k, v in decoded.items()} == kept
