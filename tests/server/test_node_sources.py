"""The server's node sources honour one whole contract, LiveNodeSource: the snapshot and
the live cluster's caches. The application checks it once, when it is made, and refuses
anything less. Preemption's view without the victims is a NodeSource the engine alone
reads, which keeps nothing for its nodes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from policyext.cluster.cache import ClusterSource
from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.node_source import LiveNodeSource
from policyext.server import wire
from policyext.server.app import create_app
from policyext.server.verbs import _VictimFreeSource
from policyext.store import PolicyStore
from tests.cluster.fake_core import fake_api
from tests.server.harness import CLUSTER
from tests.server.kube import node, pod


def _snapshot() -> SnapshotSource:
    return SnapshotSource.from_file(CLUSTER)


def _cluster() -> ClusterSource:
    source = ClusterSource(fake_api())
    source.replace("nodes", [node("a"), node("b")])
    source.replace("pods", [])
    return source


SOURCES = [("a snapshot", _snapshot), ("the live cluster", _cluster)]


@pytest.mark.parametrize(("name", "make"), SOURCES, ids=[n for n, _ in SOURCES])
def test_every_source_the_server_is_given_is_a_whole_live_node_source(name: str, make: Any) -> None:
    source = make()
    assert isinstance(source, LiveNodeSource)
    assert isinstance(source.generation, int)
    assert source.ready() and source.sync_problem() == ""
    create_app(PolicyStore(), source)  # accepted


def test_a_source_with_only_the_engines_contract_is_refused_when_the_app_is_made() -> None:
    class EngineOnly:
        def get_node(self, name: str) -> None:
            return None

        def node_rows(self, names: Any) -> None:
            return None

        def node_info(self, node: Any) -> Any:
            raise AssertionError("not called")

    with pytest.raises(TypeError, match="EngineOnly is not a LiveNodeSource"):
        create_app(PolicyStore(), EngineOnly())  # type: ignore[arg-type]


def test_preemptions_view_keeps_nothing_and_sees_its_nodes_without_the_victims() -> None:
    """Its node information differs from the source's (the victims are gone), so nothing is
    kept for its nodes, and it is no source the server answers from."""
    base = _cluster()
    victim = pod("victim", cpu="1")
    victim["metadata"]["uid"] = "uid-victim"
    victim["spec"]["nodeName"] = "a"
    base.apply("pods", "ADDED", victim)
    view = _VictimFreeSource(base, {"a": [victim]})
    assert view.node_rows(["a", "b"]) is None  # no table: nothing is kept for its nodes
    assert base.node_rows(["a", "b"]).every_known()
    a = base.get_node("a")
    assert a is not None and view.get_node("a") is a
    assert base.node_info(a)["podCount"] == 1 and view.node_info(a)["podCount"] == 0
    assert not isinstance(view, LiveNodeSource)
    with pytest.raises(TypeError, match="is not a LiveNodeSource"):
        create_app(PolicyStore(), view)  # type: ignore[arg-type]


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
    source, names = _cluster(), ["a", "b"]
    slots = source.node_rows(names).slots
    assert slots is source.node_rows(names).slots and not slots.flags.writeable
    assert not verbs._repeats(names, slots) and not verbs._repeats(names, slots)
    assert len(counted) == 1
    writeable = slots.copy()
    assert not verbs._repeats(names, writeable) and not verbs._repeats(names, writeable)
    assert len(counted) == 3
