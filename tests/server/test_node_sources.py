"""The server's node sources honour one whole contract, LiveNodeSource: the snapshot, the
live cluster's caches and preemption's view without the victims. The application checks
it once, when it is made, and refuses anything less."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from policyext.cluster.cache import ClusterSource
from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.node_source import LiveNodeSource
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
