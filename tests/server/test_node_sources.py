"""The server's node sources honour one whole contract, LiveNodeSource: the snapshot, the
live cluster's caches and preemption's view without the victims. The application checks
it once, when it is made, and refuses anything less."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from policyext.cluster.cache import ClusterSource
from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.node_source import LiveNodeSource
from policyext.server import wire
from policyext.server.app import create_app
from policyext.server.verbs import _VictimFreeSource, run_filter, run_prioritize
from policyext.store import PolicyStore
from tests.cluster.fake_core import fake_api
from tests.policy.helpers import NOW, policies, policy
from tests.server.harness import CLUSTER
from tests.server.kube import node, pod


def _snapshot() -> SnapshotSource:
    return SnapshotSource.from_file(CLUSTER)


def _cluster() -> ClusterSource:
    source = ClusterSource(fake_api())
    source.replace("nodes", [node("a"), node("b")])
    source.replace("pods", [])
    return source


SOURCES = [
    ("a snapshot", _snapshot),
    ("the live cluster", _cluster),
    ("preemption's view of a snapshot", lambda: _VictimFreeSource(_snapshot(), {})),
    ("preemption's view of the cluster", lambda: _VictimFreeSource(_cluster(), {})),
]


@pytest.mark.parametrize(("name", "make"), SOURCES, ids=[n for n, _ in SOURCES])
def test_every_source_the_server_is_given_is_a_whole_live_node_source(name: str, make: Any) -> None:
    source = make()
    assert isinstance(source, LiveNodeSource)
    assert isinstance(source.generation, int)
    assert source.ready() and source.sync_problem() == ""
    create_app(PolicyStore(), source)  # accepted


def test_a_source_with_only_the_engines_contract_is_refused_when_the_app_is_made() -> None:
    class EngineOnly:
        has_pods = True

        def get_node(self, name: str) -> None:
            return None

        def node_rows(self, names: Any) -> None:
            return None

        def node_info(self, node: Any) -> Any:
            raise AssertionError("not called")

    with pytest.raises(TypeError, match="EngineOnly is not a LiveNodeSource"):
        create_app(PolicyStore(), EngineOnly())  # type: ignore[arg-type]


def test_preemptions_view_never_shares_a_generation_or_kept_values_with_its_source() -> None:
    """Its node information differs from the source's (the victims are gone), so nothing
    remembered under the source's generation or node versions may be served for it."""
    base = _cluster()
    victim = pod("victim", cpu="1")
    victim["metadata"]["uid"] = "uid-victim"
    view = _VictimFreeSource(base, {"a": [victim]})
    again = _VictimFreeSource(base, {"a": [victim]})
    assert len({base.generation, view.generation, again.generation}) == 3
    assert view.node_rows(["a", "b"]) is None  # no table: nothing is kept for its nodes
    assert base.node_rows(["a", "b"]) is not None


def test_the_cluster_source_is_fed_through_its_public_seam() -> None:
    source = ClusterSource(fake_api())
    assert not source.ready()
    source.replace("nodes", [node("a")])
    source.replace("pods", [])
    assert source.ready() and source.node_count() == 1
    bound = pod("db-0", cpu="1")
    bound["metadata"]["uid"] = "uid-db-0"
    bound["spec"]["nodeName"] = "a"
    before = source.node_rows(["a"])
    source.apply("pods", "ADDED", copy.deepcopy(bound))
    after = source.node_rows(["a"])
    # the Node object is the same version; its node information is a new one
    assert after.versions.tolist() == before.versions.tolist()
    assert after.info_versions.tolist() != before.info_versions.tolist()
    assert source.pod_by_uid("uid-db-0") is not None
    source.apply("nodes", "DELETED", node("a"))
    source.apply("pods", "DELETED", bound)
    assert source.get_node("a") is None and source.node_count() == 0
    with pytest.raises(ValueError, match="not 'services'"):
        source.apply("services", "ADDED", {})


BIG_NODES = policy(
    "big-nodes",
    """
    filters:
      - name: four-cpus
        expression: "nodeInfo.allocatable.cpu.compareTo(quantity('4')) >= 0"
    scores:
      - name: most-memory
        expression: "nodeInfo.allocatable.memory.asApproximateFloat()"
        normalize: MinMax
    """,
)


def _three_nodes() -> ClusterSource:
    source = ClusterSource(fake_api())
    source.replace("nodes", [node("a", cpu="4"), node("b", cpu="2"), node("c", memory="32Gi")])
    source.replace("pods", [])
    return source


NAMED = [
    ("known nodes", ["a", "b", "c"]),
    ("an unknown name among them", ["a", "nowhere", "c", "b"]),
    ("only unknown names", ["nowhere", "elsewhere"]),
]


@pytest.mark.parametrize("names", [n for _, n in NAMED], ids=[i for i, _ in NAMED])
def test_a_source_that_keeps_no_rows_answers_node_names_as_its_source_does(
    names: list[str],
) -> None:
    """Preemption's view keeps nothing for its nodes (node_rows is None), so the verbs
    look its nodes up one by one: the same answers, unknown names the same failures."""
    policy_set, base = policies(BIG_NODES), _three_nodes()
    view = _VictimFreeSource(base, {})
    args = wire.ExtenderArgs(pod("web", requests={"cpu": "1"}), None, names)
    for run in (run_filter, run_prioritize):
        assert run(policy_set, view, args, NOW).body == run(policy_set, base, args, NOW).body
    failed = orjson.loads(run_filter(policy_set, view, args, NOW).body)["FailedNodes"]
    unknown = {n: "node is not in policyext's node cache" for n in names if n.endswith("where")}
    assert {n: m for n, m in failed.items() if n.endswith("where")} == unknown


def test_a_source_that_keeps_no_rows_refuses_a_name_given_twice_as_its_source_does() -> None:
    policy_set, base = policies(BIG_NODES), _three_nodes()
    args = wire.ExtenderArgs(pod("web"), None, ["a", "b", "a"])
    said = []
    for source in (base, _VictimFreeSource(base, {})):
        with pytest.raises(wire.WireError) as refused:
            run_filter(policy_set, source, args, NOW)
        said.append(str(refused.value))
    assert said[0] == said[1] and "'a' appears more than once" in said[0]


def test_names_found_distinct_are_not_counted_again_when_their_slots_come_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A list of names given again (prioritize after filter, the next pod) comes back as
    the table's very slots, read-only: found distinct once, it is not counted again. A
    writeable array (the rows of a request with unknown names) could change: it is
    counted each time."""
    from policyext.server import verbs

    counted: list[list[str]] = []
    unique = wire.unique

    def counting(names: list[str]) -> bool:
        counted.append(names)
        return unique(names)

    monkeypatch.setattr(wire, "unique", counting)
    source, names = _three_nodes(), ["a", "b", "c"]
    slots = source.node_rows(names).slots
    assert slots is source.node_rows(names).slots and not slots.flags.writeable
    assert not verbs._repeats(names, slots) and not verbs._repeats(names, slots)
    assert len(counted) == 1
    writeable = slots.copy()
    assert not verbs._repeats(names, writeable) and not verbs._repeats(names, writeable)
    assert len(counted) == 3
