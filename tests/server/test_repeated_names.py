"""NodeNames that name a node twice are refused with the parser's error whoever finds them:
the hot path leaves the check to the verbs, which find a repeat from the node source's
slots (a count per slot, not a set of the names), and every other path still refuses it."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest

from policyext.policy.compile import NOT_LOADED, PolicySet
from policyext.server import verbs, wire
from policyext.server.metrics import Metrics
from policyext.store import PolicyStore
from tests.policy.helpers import NOW, node, pod, policies, policy
from tests.server.entrances import InProcessVerbs
from tests.server.test_memo import MovingSource

POLICY = policies(
    policy(
        "fits",
        """
        filters:
          - name: cpu-fits
            expression: "nodeInfo.allocatable.cpu.compareTo(podRequests.cpu) >= 0"
        scores:
          - name: more-cpu
            weight: 1
            expression: "nodeInfo.allocatable.cpu.asApproximateFloat()"
        """,
    )
)
NODES = [node("a", cpu="4"), node("b", cpu="8")]
POD = pod("web-1", cpu="1")


class NotReady(MovingSource):
    def ready(self) -> bool:
        return False


REPEATS = [
    (["a", "b", "a"], "a"),
    (["x", "y", "x"], "x"),  # unknown to the source
    (["a", "x", "a"], "a"),
    (["x", "a", "x"], "x"),
    (["a", "x", "b", "b", "x"], "b"),  # the first name seen again
    (["a"] * 1000, "a"),
]
SOURCES = {"the snapshot": MovingSource, "not ready": NotReady}
RUNS = {"filter": verbs.run_filter, "prioritize": verbs.run_prioritize}


@pytest.mark.parametrize(("names", "first"), REPEATS)
@pytest.mark.parametrize("source_kind", list(SOURCES))
@pytest.mark.parametrize("verb", list(RUNS))
@pytest.mark.parametrize("loaded", [True, False], ids=["loaded", "no policies yet"])
def test_a_name_given_twice_is_refused_by_the_verbs_as_by_the_parser(
    names: list[str], first: str, source_kind: str, verb: str, loaded: bool
) -> None:
    source = SOURCES[source_kind](NODES)
    policy_set: PolicySet = POLICY if loaded else NOT_LOADED
    with pytest.raises(wire.WireError) as parsed:
        wire.parse_extender_args({"Pod": POD, "NodeNames": names})
    args = wire.parse_extender_args({"Pod": POD, "NodeNames": names}, check_repeats=False)
    with pytest.raises(wire.WireError) as found:
        RUNS[verb](policy_set, source, args, NOW, verbs.Memo())
    assert str(found.value) == str(parsed.value) == f"NodeNames: {first!r} appears more than once"


@pytest.mark.parametrize("names", [["a", "b"], ["a", "x", "b", "y"], ["x"], []])
@pytest.mark.parametrize("source_kind", list(SOURCES))
@pytest.mark.parametrize("verb", list(RUNS))
def test_distinct_names_are_answered(names: list[str], source_kind: str, verb: str) -> None:
    source = SOURCES[source_kind](NODES)
    args = wire.parse_extender_args({"Pod": POD, "NodeNames": names}, check_repeats=False)
    assert RUNS[verb](POLICY, source, args, NOW, verbs.Memo()).body


@pytest.mark.parametrize(("names", "first"), REPEATS)
def test_the_hot_path_refuses_a_repeat_after_a_reply_to_the_same_names_was_remembered(
    names: list[str], first: str
) -> None:
    store = PolicyStore()
    store.reload(lambda: POLICY, "test")
    hot = InProcessVerbs(store, MovingSource(NODES), Metrics(), time.time_ns, 1 << 30, "")
    distinct = list(dict.fromkeys(names))
    for verb in ("filter", "prioritize"):
        body: dict[str, Any] = {"Pod": POD, "NodeNames": distinct, "Nodes": None}
        assert hot.answer(verb, orjson.dumps(body))
        with pytest.raises(wire.WireError, match=f"NodeNames: {first!r} appears more than once"):
            hot.answer(verb, orjson.dumps({**body, "NodeNames": names}))


@pytest.mark.parametrize(("names", "first"), REPEATS)
def test_a_repeat_is_refused_after_the_same_distinct_names_were_checked_again_and_again(
    names: list[str], first: str
) -> None:
    """The node table gives a list sent again (server/names.py) the very same slots, which
    are not checked twice; a list naming a node twice is never taken for them."""
    store = PolicyStore()
    store.reload(lambda: POLICY, "test")
    hot = InProcessVerbs(store, MovingSource(NODES), Metrics(), time.time_ns, 1 << 30, "")
    distinct = orjson.dumps({"Pod": POD, "Nodes": None, "NodeNames": list(dict.fromkeys(names))})
    repeated = orjson.dumps({"Pod": POD, "Nodes": None, "NodeNames": names})
    for _ in range(3):
        for verb in ("filter", "prioritize"):
            assert hot.direct(f"/{verb}", distinct) is not None
            assert hot.direct(f"/{verb}", repeated) is None  # for Flask to refuse
            with pytest.raises(wire.WireError, match=f"NodeNames: {first!r} appears more"):
                hot.answer(verb, repeated)


BY_SIZE = policies(
    policy(
        "by-size",
        """
        scores:
          - name: size-label
            expression: "double(node.metadata.labels.?size.orValue('0'))"
        """,
    )
)


def test_a_node_list_sending_a_node_twice_is_scored_copy_by_copy() -> None:
    """Nodes sent whole are not checked for repeats (kube-scheduler sends each node once;
    the request's objects answer): each entry of the priority list has the score of its
    own copy, as it was sent."""
    source = MovingSource(NODES)
    small, large = node("a", {"size": "2"}), node("a", {"size": "9"})  # two versions
    args = wire.ExtenderArgs(POD, [small, node("b", {"size": "5"}), large], None)
    reply = orjson.loads(verbs.run_prioritize(BY_SIZE, source, args, NOW).body)
    assert reply == [
        {"Host": "a", "Score": 2},
        {"Host": "b", "Score": 5},
        {"Host": "a", "Score": 9},
    ]
