"""The extender protocol on the wire, verb by verb, in both modes of kube-scheduler.

The request fixtures are shaped as kube-scheduler marshals the extender/v1 types; the reply
fixtures are the exact bytes the server must send back (after a deliberate change, rewrite
them with POLICYEXT_UPDATE_FIXTURES=1 and review the diff: see golden.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from policyext.cel import Timestamp
from policyext.policy.compile import NOT_LOADED
from policyext.server import verbs, wire
from tests.server.conftest import ServerFactory
from tests.server.golden import assert_matches_fixture
from tests.server.harness import FIXTURES, ExtenderServer, send
from tests.server.kube import Json, args_with_names, args_with_nodes, fixture, node, pod
from tests.server.test_memo import MovingSource

PROTOCOL_CASES = [
    ("filter-names", "/filter"),
    ("filter-nodes", "/filter"),
    ("prioritize-names", "/prioritize"),
    ("prioritize-nodes", "/prioritize"),
    ("bind", "/bind"),
    ("preempt-victims", "/preempt"),
    ("preempt-meta-victims", "/preempt"),
]
DEMO_NODES = ["general-a", "general-b", "general-c", "spot-c", "gpu-a", "payments-b"]
FILTER_KEYS = ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"]
UNKNOWN_NODE = "node is not in policyext's node cache"


@pytest.fixture(scope="module")
def bare_server(serve: ServerFactory) -> ExtenderServer:
    """The test policies of fixtures/rules and no node source (no --snapshot)."""
    return serve(rules=[FIXTURES / "rules"], snapshot=None)


# -- exact bytes ----------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "path"), PROTOCOL_CASES)
def test_each_verb_answers_its_fixture_request_with_exactly_the_committed_reply_bytes(
    demo_server: ExtenderServer, name: str, path: str
) -> None:
    reply = demo_server.post(path, (FIXTURES / f"{name}.request.json").read_bytes())
    assert reply.status == 200
    assert reply.content_type == "application/json"
    assert_matches_fixture(reply.body + b"\n", FIXTURES / f"{name}.reply.json")


# -- filter ---------------------------------------------------------------------------------
def test_a_filter_reply_has_the_five_go_field_names_in_pascal_case(
    demo_server: ExtenderServer,
) -> None:
    reply = demo_server.post_json("/filter", fixture("filter-names.request.json"))
    assert list(reply.json()) == FILTER_KEYS


def test_a_node_names_filter_reply_lists_the_feasible_names_and_leaves_nodes_null(
    demo_server: ExtenderServer,
) -> None:
    result = demo_server.post_json("/filter", fixture("filter-names.request.json")).json()
    assert result["Nodes"] is None
    assert result["NodeNames"] == ["general-a", "general-b", "general-c"]
    assert result["Error"] == ""


def test_a_node_list_filter_reply_returns_the_feasible_nodes_as_the_original_objects(
    demo_server: ExtenderServer,
) -> None:
    request = fixture("filter-nodes.request.json")
    result = demo_server.post_json("/filter", request).json()
    sent = {n["metadata"]["name"]: n for n in request["Nodes"]["items"]}
    assert result["NodeNames"] is None
    assert result["Nodes"]["items"] == [sent[n] for n in ("general-a", "general-b", "general-c")]


def test_both_modes_reach_the_same_decision_for_the_same_pod_and_nodes(
    demo_server: ExtenderServer,
) -> None:
    by_names = demo_server.post_json("/filter", fixture("filter-names.request.json")).json()
    by_nodes = demo_server.post_json("/filter", fixture("filter-nodes.request.json")).json()
    assert [n["metadata"]["name"] for n in by_nodes["Nodes"]["items"]] == by_names["NodeNames"]
    assert by_nodes["FailedNodes"] == by_names["FailedNodes"]
    assert by_nodes["FailedAndUnresolvableNodes"] == by_names["FailedAndUnresolvableNodes"]


def test_nodes_rejected_by_unresolvable_rules_are_reported_as_failed_and_unresolvable(
    demo_server: ExtenderServer,
) -> None:
    result = demo_server.post_json("/filter", fixture("filter-names.request.json")).json()
    assert result["FailedAndUnresolvableNodes"] == {
        "spot-c": "critical pods do not run on spot nodes",
        "gpu-a": "GPU nodes are reserved for pods that request nvidia.com/gpu",
        "payments-b": "node is dedicated to a team that does not own namespace shop",
    }
    assert result["FailedNodes"] == {}


def test_nodes_rejected_by_resolvable_or_failing_rules_are_reported_as_failed_nodes(
    bare_server: ExtenderServer,
) -> None:
    nodes = [
        node("pool-1", {"pool": "general", "rack": "1"}),
        node("batch-1", {"pool": "batch", "rack": "2"}),
        node("norack-1", {"pool": "general"}),
    ]
    result = bare_server.post_json("/filter", args_with_nodes(pod("web-1"), nodes)).json()
    assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == ["pool-1"]
    assert result["FailedNodes"] == {
        "batch-1": "node is not in the general pool",
        "norack-1": "racks/rack-is-a-number could not be evaluated",
    }
    assert result["FailedAndUnresolvableNodes"] == {}


def test_an_unknown_node_name_is_a_failed_node_with_a_message_that_names_no_node(
    demo_server: ExtenderServer,
) -> None:
    request = args_with_names(fixture("filter-names.request.json")["Pod"], ["general-a", "gone-7"])
    result = demo_server.post_json("/filter", request).json()
    assert result["NodeNames"] == ["general-a"]
    assert result["FailedNodes"] == {"gone-7": UNKNOWN_NODE}
    assert result["Error"] == ""


@pytest.mark.parametrize(
    ("mode", "expected_empty"),
    [
        ("names", {"Nodes": None, "NodeNames": []}),
        ("nodes", {"Nodes": {"metadata": {}, "items": []}, "NodeNames": None}),
    ],
)
def test_when_no_node_fits_the_reply_is_an_empty_list_with_reasons_and_never_an_error(
    demo_server: ExtenderServer, mode: str, expected_empty: Json
) -> None:
    rejected = ["spot-c", "gpu-a", "payments-b"]
    source = fixture("filter-nodes.request.json")
    if mode == "names":
        request = args_with_names(source["Pod"], rejected)
    else:
        items = [n for n in source["Nodes"]["items"] if n["metadata"]["name"] in rejected]
        request = args_with_nodes(source["Pod"], items)
    reply = demo_server.post_json("/filter", request)
    result = reply.json()
    assert reply.status == 200
    assert {k: result[k] for k in ("Nodes", "NodeNames")} == expected_empty
    assert sorted(result["FailedAndUnresolvableNodes"]) == sorted(rejected)
    assert result["Error"] == ""


def test_node_names_without_a_node_source_is_a_filter_error_the_scheduler_retries(
    bare_server: ExtenderServer,
) -> None:
    reply = bare_server.post_json("/filter", args_with_names(pod("web-1"), ["a", "b"]))
    result = reply.json()
    assert reply.status == 200
    assert "no node source" in result["Error"]
    assert "nodeCacheCapable: false" in result["Error"]
    # the reply of the mode asked in: no Nodes, no names passed, none failed
    assert result == {
        "Nodes": None,
        "NodeNames": [],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": result["Error"],
    }


@pytest.mark.parametrize(
    ("mode", "nodes", "names"),
    [
        ("NodeNames", None, []),
        ("Nodes", {"metadata": {}, "items": []}, None),
    ],
)
def test_a_filter_before_any_policy_is_loaded_is_an_error_in_the_mode_asked_in(
    mode: str, nodes: object, names: object
) -> None:
    known = [node("a"), node("b")]
    sent = (
        args_with_names(pod("web-1"), ["a", "b"])
        if nodes is None
        else (args_with_nodes(pod("web-1"), known))
    )
    args = wire.parse_extender_args(sent)
    now = Timestamp(time.time_ns())
    result = json.loads(verbs.run_filter(NOT_LOADED, MovingSource(known), args, now).body)
    assert result == {
        "Nodes": nodes,
        "NodeNames": names,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": verbs.NOT_LOADED_MESSAGE,
    }


def test_the_explain_endpoint_refuses_node_names_without_a_node_source(
    bare_server: ExtenderServer,
) -> None:
    reply = bare_server.post_json("/explain", args_with_names(pod("web-1"), ["a"]))
    assert reply.status == 400
    assert "no node source" in reply.json()["error"]


def test_the_explain_endpoint_without_nodes_needs_a_node_source(
    bare_server: ExtenderServer,
) -> None:
    reply = bare_server.post_json("/explain", {"Pod": pod("web-1")})
    assert reply.status == 400
    assert "no node source" in reply.json()["error"]


def test_filter_still_requires_nodes_or_node_names(bare_server: ExtenderServer) -> None:
    reply = bare_server.post_json("/filter", {"Pod": pod("web-1")})
    assert reply.status == 400
    assert "one of Nodes or NodeNames is required" in reply.body.decode()


# -- prioritize -----------------------------------------------------------------------------
def _prioritize_requests() -> Iterator[tuple[str, Json]]:
    source = fixture("filter-nodes.request.json")
    items = source["Nodes"]["items"]
    pods = {
        "critical shop pod": source["Pod"],
        "payments pod": pod("ledger-1", "payments-prod", requests={"cpu": "500m"}),
        "zone-minded pod": pod(
            "api-1", "shop", annotations={"scheduling.policyext.io/preferred-zone": "eu-west-1c"}
        ),
    }
    for label, p in pods.items():
        yield f"{label}, all nodes by name", args_with_names(p, DEMO_NODES)
        yield f"{label}, all nodes as objects", args_with_nodes(p, items)
        yield f"{label}, two nodes by name", args_with_names(p, ["payments-b", "general-a"])
        yield f"{label}, one unknown name", args_with_names(p, ["general-b", "gone-7"])


@pytest.mark.parametrize(
    "request_body",
    [r for _, r in _prioritize_requests()],
    ids=[i for i, _ in _prioritize_requests()],
)
def test_prioritize_scores_every_node_of_the_request_with_an_integer_from_0_to_10(
    demo_server: ExtenderServer, request_body: Json
) -> None:
    reply = demo_server.post_json("/prioritize", request_body)
    scores = reply.json()
    names = request_body["NodeNames"] or [
        n["metadata"]["name"] for n in request_body["Nodes"]["items"]
    ]
    assert reply.status == 200
    assert isinstance(scores, list)
    assert [s["Host"] for s in scores] == names
    for entry in scores:
        assert list(entry) == ["Host", "Score"]
        assert type(entry["Score"]) is int  # 5.0 would make the scheduler drop the reply
        assert 0 <= entry["Score"] <= 10
    assert b"." not in b"".join(str(s["Score"]).encode() for s in scores)


def test_prioritize_ranks_the_nodes_as_the_policies_prefer(demo_server: ExtenderServer) -> None:
    payments = pod("ledger-1", "payments-prod", requests={"cpu": "500m"})
    scores = demo_server.post_json(
        "/prioritize", args_with_names(payments, ["general-a", "payments-b"])
    ).json()
    by_host = {s["Host"]: s["Score"] for s in scores}
    assert by_host["payments-b"] > by_host["general-a"]  # prefer-own-nodes, weight 2


def test_prioritize_without_a_node_source_scores_every_named_node_zero(
    bare_server: ExtenderServer,
) -> None:
    reply = bare_server.post_json("/prioritize", args_with_names(pod("web-1"), ["a", "b"]))
    assert reply.status == 200
    assert reply.json() == [{"Host": "a", "Score": 0}, {"Host": "b", "Score": 0}]


# -- bind and preempt -----------------------------------------------------------------------
def test_bind_without_bind_verb_answers_a_binding_error_saying_so(
    bare_server: ExtenderServer,
) -> None:
    reply = bare_server.post_json("/bind", fixture("bind.request.json"))
    assert reply.status == 200
    assert list(reply.json()) == ["Error"]
    assert "runs without --bind-verb" in reply.json()["Error"]


def test_bind_with_bind_verb_but_no_cluster_connection_answers_a_binding_error(
    serve: ServerFactory,
) -> None:
    server = serve("--bind-verb", rules=[FIXTURES / "rules"], snapshot=None)
    reply = server.post_json("/bind", fixture("bind.request.json"))
    assert reply.status == 200
    assert list(reply.json()) == ["Error"]
    assert "no connection to the Kubernetes API" in reply.json()["Error"]


@pytest.mark.parametrize("name", ["preempt-victims", "preempt-meta-victims"])
def test_preempt_returns_the_accepted_candidates_with_their_victims_as_uids(
    demo_server: ExtenderServer, name: str
) -> None:
    reply = demo_server.post_json("/preempt", fixture(f"{name}.request.json"))
    assert reply.status == 200
    assert reply.json() == {
        "NodeNameToMetaVictims": {
            "general-a": {
                "Pods": [{"UID": "11111111-2222-4333-8444-555555555501"}],
                "NumPDBViolations": 0,
            }
        }
    }


def test_preempt_leaves_out_candidates_the_node_source_does_not_know(
    demo_server: ExtenderServer,
) -> None:
    request = fixture("preempt-meta-victims.request.json")
    request["NodeNameToMetaVictims"]["gone-7"] = {"Pods": [{"UID": "u-1"}], "NumPDBViolations": 0}
    result = demo_server.post_json("/preempt", request).json()
    assert sorted(result["NodeNameToMetaVictims"]) == ["general-a"]


# -- keys in any case, as Go's encoding/json reads them ---------------------------------------
def _alternating(key: str) -> str:
    return "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(key))


CASINGS: list[tuple[str, Callable[[str], str]]] = [
    ("lower", str.lower),
    ("upper", str.upper),
    ("alternating", _alternating),
]


def _recase_args(doc: Json, f: Callable[[str], str]) -> Json:
    out: Json = {}
    for key, value in doc.items():
        if key == "Nodes" and isinstance(value, dict):
            out[f(key)] = {f(k): v for k, v in value.items()}  # v1.NodeList's "items" too
        else:
            out[f(key)] = value
    return out


def _recase_victims(victims: Json, f: Callable[[str], str], meta: bool) -> Json:
    return {
        node_name: {
            f("Pods"): [{f(k): u for k, u in p.items()} if meta else p for p in v["Pods"]],
            f("NumPDBViolations"): v["NumPDBViolations"],
        }
        for node_name, v in victims.items()
    }


def _recase_preempt(doc: Json, f: Callable[[str], str]) -> Json:
    out: Json = {}
    for key, value in doc.items():
        if key.startswith("NodeNameTo") and isinstance(value, dict):
            out[f(key)] = _recase_victims(value, f, meta=key == "NodeNameToMetaVictims")
        else:
            out[f(key)] = value
    return out


def _recase_bind(doc: Json, f: Callable[[str], str]) -> Json:
    return {f(k): v for k, v in doc.items()}


RECASERS: dict[str, Callable[[Json, Callable[[str], str]], Json]] = {
    "/filter": _recase_args,
    "/prioritize": _recase_args,
    "/bind": _recase_bind,
    "/preempt": _recase_preempt,
}


@pytest.mark.parametrize(("casing", "f"), CASINGS, ids=[c for c, _ in CASINGS])
@pytest.mark.parametrize(("name", "path"), PROTOCOL_CASES)
def test_request_keys_in_any_case_get_the_same_reply_as_go_field_names(
    demo_server: ExtenderServer, name: str, path: str, casing: str, f: Callable[[str], str]
) -> None:
    request: Any = fixture(f"{name}.request.json")
    recased = RECASERS[path](request, f)
    assert recased != request
    reply = demo_server.post_json(path, recased)
    assert reply.status == 200
    assert reply.body + b"\n" == (FIXTURES / f"{name}.reply.json").read_bytes()


def test_one_kept_alive_connection_serves_the_schedulers_serial_calls_even_after_an_error(
    demo_server: ExtenderServer,
) -> None:
    conn = demo_server.connection()
    headers = {"Content-Type": "application/json"}
    local_ports = set()
    try:
        for name, path in [*PROTOCOL_CASES, ("bad", "/filter"), *PROTOCOL_CASES]:
            if name == "bad":
                assert send(conn, "POST", path, b'{"Pod": 1}', headers).status == 400
            else:
                body = (FIXTURES / f"{name}.request.json").read_bytes()
                reply = send(conn, "POST", path, body, headers)
                assert reply.body + b"\n" == (FIXTURES / f"{name}.reply.json").read_bytes()
            assert conn.sock is not None, "the server closed the connection"
            local_ports.add(conn.sock.getsockname()[1])
    finally:
        conn.close()
    assert len(local_ports) == 1  # http.client would have reconnected silently
