"""NodeNames taken apart from the rest of a body (server/names.py): the same arguments as the
general decoder gives, the same errors, and the last list of a verb given again."""

from __future__ import annotations

import json
import time
from typing import Any

import orjson
import pytest

from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import load_policy_set
from policyext.server import wire
from policyext.server.entrance import extender_args
from policyext.server.metrics import Metrics
from policyext.server.names import NamesApart, asking_about
from policyext.store import PolicyStore
from tests.server.entrances import InProcessVerbs
from tests.server.harness import CLUSTER, RULES
from tests.server.kube import fixture

POD = {"metadata": {"name": "web-1", "namespace": "shop"}, "spec": {"containers": []}}
NAMES = ["node-a", "node-b", "node-c"]


def _go(pod: Any = POD, names: Any = NAMES) -> bytes:
    """As kube-scheduler writes ExtenderArgs (Go's encoding/json: field order, no spaces)."""
    return json.dumps(
        {"Pod": pod, "Nodes": None, "NodeNames": names}, separators=(",", ":")
    ).encode()


TRAP = {**POD, "spec": {"x": 1, "NodeNames": ["trap"]}}

BODIES: dict[str, tuple[bytes, bool]] = {
    # the body, and whether it is taken apart
    "as kube-scheduler sends it": (_go(), True),
    "with a newline after it": (_go() + b"\n", True),
    "without a Nodes field": (b'{"Pod":' + json.dumps(POD).encode() + b',"NodeNames":["a"]}', True),
    "with no names": (_go(names=[]), True),
    # taken apart, then read by the general parser: what it says of the rest stands
    "with the pod spelled in lower case": (
        b'{"pod":' + json.dumps(POD).encode() + b',"NodeNames":["a"]}',
        True,
    ),
    "with a pod that is not an object": (b'{"Pod":[1],"Nodes":null,"NodeNames":["a"]}', True),
    "with no pod": (b'{"Nodes":null,"NodeNames":["a"]}', True),
    "with Nodes as well as NodeNames": (
        b'{"Pod":' + json.dumps(POD).encode() + b',"Nodes":{"items":[]},"NodeNames":["a"]}',
        True,
    ),
    "with Nodes that are not an object": (
        b'{"Pod":' + json.dumps(POD).encode() + b',"Nodes":7,"NodeNames":["a"]}',
        True,
    ),
    "with the pod given again in another spelling, which Go takes": (
        b'{"Pod":'
        + json.dumps(POD).encode()
        + b',"Nodes":null,"pod":'
        + json.dumps(TRAP).encode()
        + b',"NodeNames":["a"]}',
        True,
    ),
    "with a field of another name": (
        b'{"Pod":' + json.dumps(POD).encode() + b',"Extra":null,"NodeNames":["a"]}',
        True,
    ),
    "with names that need escapes": (_go(names=['n"1', "n\\2", "n\u00e93"]), True),
    "with a key named NodeNames inside the pod, last": (
        b'{"Pod":{"metadata":{"name":"p"},"x":1,"NodeNames":["trap"]}}',
        False,
    ),
    "with NodeNames inside the pod and the real list first": (
        b'{"NodeNames":["a"],"Pod":' + json.dumps(TRAP, separators=(",", ":")).encode() + b"}",
        False,
    ),
    # the first key found is the pod's own: the general decoder reads it (a Pod never
    # holds one, and looking for the key from the end would cost the whole list)
    "with NodeNames inside the pod and the real list last": (_go(pod=TRAP), False),
    "with another spelling of the key before it": (
        b'{"Pod":' + json.dumps(POD).encode() + b',"nodenames":["x"],"NodeNames":["a"]}',
        False,
    ),
    "with a name that is not a string": (_go(names=["a", 1]), False),
    "with names that are not a list": (b'{"Pod":{},"NodeNames":{"a":1}]}', False),
    "with the body broken before the list": (b'{"Pod":{"metadata":,"NodeNames":["a"]}', False),
    "with the list broken": (b'{"Pod":{},"NodeNames":["a",]}', False),
    "with something after the object": (_go() + b"[]}", False),
}


@pytest.mark.parametrize(("body", "apart"), BODIES.values(), ids=list(BODIES))
def test_a_body_gives_the_arguments_or_the_error_of_the_general_decoder(
    body: bytes, apart: bool
) -> None:
    policies = load_policy_set([RULES])
    assert (NamesApart().split("filter", body) is not None) is apart
    try:
        expected: Any = wire.parse_extender_args(wire.decode(body), check_repeats=False)
    except wire.WireError as e:
        expected = str(e)
    try:
        got: Any = extender_args(policies, body, "filter", NamesApart())
    except wire.WireError as e:
        got = str(e)
    assert got == expected


@pytest.mark.parametrize(
    "body",
    [body for body, apart in BODIES.values() if apart],
    ids=[k for k, (_, a) in BODIES.items() if a],
)
def test_the_rest_of_a_body_taken_apart_is_read_as_the_general_decoder_reads_it(
    body: bytes,
) -> None:
    """names_args on its own (the call above may be answered by the fast decoder first):
    kube-scheduler's own body by its shortcut, any other through the general parser."""
    apart = NamesApart().split("filter", body)
    assert apart is not None
    try:
        expected: Any = wire.parse_extender_args(wire.decode(body), check_repeats=False)
    except wire.WireError as e:
        expected = str(e)
    try:
        got: Any = wire.names_args(*apart)
    except wire.WireError as e:
        got = str(e)
    assert got == expected


# the bodies whose NodeNames list cannot be told apart with certainty (its items aside: a
# filter call with bad names has no reply whose names prioritize could be asked about)
NOT_ASKED_AGAIN = {
    "with a key named NodeNames inside the pod, last",
    "with NodeNames inside the pod and the real list first",
    "with NodeNames inside the pod and the real list last",
    "with another spelling of the key before it",
    "with the body broken before the list",
    "with names that are not a list",
    "with the list broken",
    "with something after the object",
}


@pytest.mark.parametrize("case", list(BODIES))
def test_the_prioritize_call_after_a_filter_call_differs_from_it_in_its_names_alone(
    case: str,
) -> None:
    body, _ = BODIES[case]

    asked = asking_about(body, orjson.dumps(["z", "y"]))

    assert (asked is None) is (case in NOT_ASKED_AGAIN)
    if asked is not None:
        assert wire.decode(asked) == {**wire.decode(body), "NodeNames": ["z", "y"]}


@pytest.mark.parametrize("case", list(BODIES))
def test_a_body_just_taken_apart_asks_prioritize_as_its_bytes_do(case: str) -> None:
    """Without decoding it again: where its NodeNames start is known from taking it apart;
    any other body of the verb is read from its bytes."""
    body, apart = BODIES[case]
    names = NamesApart()
    names.split("filter", body)
    other = _go(names=["x"])  # (not the body last taken apart)
    encoded = orjson.dumps(["z", "y"])

    assert names.asking_about("filter", body, encoded) == asking_about(body, encoded)
    assert names.asking_about("filter", other, encoded) == asking_about(other, encoded)
    assert names.asking_about("prioritize", body, encoded) == asking_about(body, encoded)
    if apart:
        assert names.asking_about("filter", body, encoded) is not None


def test_the_same_list_of_a_verb_is_given_again_and_a_new_one_decoded() -> None:
    names = NamesApart()
    first = names.split("filter", _go())
    again = names.split("filter", _go(pod={**POD, "metadata": {"name": "web-2"}}))
    other = names.split("filter", _go(names=["node-a", "node-b"]))
    prioritize = names.split("prioritize", _go())
    assert first is not None and again is not None and other is not None
    assert prioritize is not None
    assert again[1] is first[1], "the same bytes: the same list"
    assert again[0]["Pod"]["metadata"]["name"] == "web-2", "the rest decoded afresh"
    assert other[1] == ["node-a", "node-b"]
    assert prioritize[1] == NAMES and prioritize[1] is not first[1], "kept per verb"
    assert names.split("filter", _go(names=["node-a", "node-b"]))[1] is other[1]  # type: ignore[index]


def test_prioritize_is_given_the_list_the_filter_reply_named() -> None:
    """kube-scheduler sends prioritize the nodes that passed filter, as the reply wrote them:
    the reply's own list is given again (its strings hashed already), and any other list
    is decoded as it comes."""
    store = PolicyStore()
    policies = load_policy_set([RULES])
    store.reload(lambda: policies, "test")
    source = SnapshotSource.from_file(CLUSTER)
    hot = InProcessVerbs(store, source, Metrics(), time.time_ns, 1 << 30, "")
    nodes = ["general-a", "general-b", "general-c", "spot-c", "gpu-a", "payments-b"]
    pod = fixture("filter-names.request.json")["Pod"]
    reply = orjson.loads(hot.answer("filter", _go(pod, nodes)))
    passed = reply["NodeNames"]
    assert 0 < len(passed) < len(nodes)
    given = hot.names.split("prioritize", _go(pod, passed))
    asked = hot.names.split("filter", _go(pod, nodes))
    assert given is not None and asked is not None and given[1] == passed
    assert all(name is asked[1][nodes.index(name)] for name in given[1]), "the reply's strings"
    assert hot.names.split("prioritize", _go(pod, passed))[1] is given[1]  # type: ignore[index]
    other = hot.names.split("prioritize", _go(pod, passed[:1]))
    assert other is not None and other[1] == passed[:1] and other[1] is not given[1]
    scores = orjson.loads(hot.answer("prioritize", _go(pod, passed)))
    assert [entry["Host"] for entry in scores] == passed
