"""NodeNames that are runs of the cycle of nodes kube-scheduler walks (server/name_ring.py):
recognised once a cycle is learnt, always the names the list's bytes decode to, and
anything else decoded as it comes."""

from __future__ import annotations

import json
import time

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import load_policy_set
from policyext.policy.rows import NameSlice
from policyext.server.hotpath import HotVerbs
from policyext.server.metrics import Metrics
from policyext.server.name_ring import NameRing
from policyext.server.names import NamesApart
from policyext.store import PolicyStore
from tests.server.harness import CLUSTER, RULES
from tests.server.kube import fixture


def _encoded(names: list[str]) -> bytes:
    return json.dumps(names, separators=(",", ":")).encode()


def _windows(cycle: list[str], size: int, count: int, start: int = 0) -> list[list[str]]:
    """What kube-scheduler sends pod after pod when all its nodes pass its own plugins:
    `size` names from where the last list stopped, round the cycle."""
    out = []
    for _ in range(count):
        out.append([cycle[(start + k) % len(cycle)] for k in range(size)])
        start = (start + size) % len(cycle)
    return out


def _seen(ring: NameRing, encoded: bytes) -> list[str]:
    """As NamesApart does: the ring's run, or the decoded list, which the ring learns."""
    run = ring.find(encoded)
    if run is not None:
        return run
    names: list[str] = orjson.loads(encoded)
    ring.learn(encoded, names)
    return names


WALKS = [
    # nodes, names per list, the list from which on every list is a run
    (500, 230, 3),  # kube-scheduler's adaptive share of 500 nodes
    (5000, 500, 11),
    (7, 3, 3),
    (3, 1, 4),
    (4, 4, 2),  # every node each time: the same list (the cycle is the list itself)
    (6, 4, 2),
]


@pytest.mark.parametrize(("nodes", "size", "learnt_after"), WALKS)
def test_lists_round_the_cycle_are_runs_of_it_once_it_has_come_round(
    nodes: int, size: int, learnt_after: int
) -> None:
    cycle = [f"node-{i:05d}.eu-west-1.compute.internal" for i in range(nodes)]
    ring = NameRing()
    for i, window in enumerate(_windows(cycle, size, learnt_after + 2 * nodes // size + 3)):
        names = _seen(ring, _encoded(window))
        assert names == window
        assert isinstance(names, NameSlice) is (i >= learnt_after), i


def _skipping(cycle: list[str]) -> list[list[str]]:
    # the scheduler's own plugins refused a node on the way, another for every pod
    return [[n for n in w if n != cycle[i % 10]] for i, w in enumerate(_windows(cycle, 4, 30))]


def _reversed(cycle: list[str]) -> list[list[str]]:
    return [w[::-1] for w in _windows(cycle, 4, 30)]


def _escaped(cycle: list[str]) -> list[list[str]]:
    named = [*cycle[:3], 'quote"d', "caf\u00e9", "<tag>", *cycle[3:]]
    return _windows(named, 4, 30)


OTHER_LISTS = {
    # how the lists come, and whether they may be taken as runs of a cycle
    "a different node skipped for every pod": (_skipping, True),
    "the names reversed": (_reversed, True),
    "names JSON escapes or that are not ASCII": (_escaped, False),
}


@pytest.mark.parametrize(("lists", "runs"), OTHER_LISTS.values(), ids=list(OTHER_LISTS))
def test_lists_that_are_not_runs_of_the_walk_are_the_names_they_decode_to(
    lists: object, runs: bool
) -> None:
    cycle = [f"n{i}" for i in range(10)]
    ring = NameRing()
    for window in lists(cycle):  # type: ignore[operator]
        names = _seen(ring, _encoded(window))
        assert names == window
        assert runs or not isinstance(names, NameSlice)


def test_bytes_that_match_the_cycle_but_stop_inside_a_name_are_no_run() -> None:
    cycle = ["ab", "abc", "b"]
    ring = NameRing()
    for window in _windows(cycle, 2, 5):
        _seen(ring, _encoded(window))
    assert ring.find(b'["ab","abc"]') == ["ab", "abc"]
    assert ring.find(b'["ab"]') == ["ab"]
    for broken in (b'["ab","]', b'["ab","ab]', b'["ab","a"]', b'["ab",]', b'["ab"'):
        assert ring.find(broken) is None, broken


NAME = st.text(alphabet="ab,", min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    cycle=st.lists(NAME, min_size=1, max_size=8, unique=True),
    size=st.integers(1, 8),
    tried=st.lists(
        st.one_of(
            st.lists(NAME, max_size=10).map(_encoded),
            st.binary(max_size=30).map(lambda b: b"[" + b + b"]"),
            st.tuples(st.lists(NAME, max_size=10), st.integers(0, 40)).map(
                lambda t: _encoded(t[0])[: t[1]] + b"]"
            ),
        ),
        max_size=12,
    ),
)
def test_what_the_ring_finds_is_what_the_bytes_decode_to(
    cycle: list[str], size: int, tried: list[bytes]
) -> None:
    ring = NameRing()
    for window in _windows(cycle, min(size, len(cycle)), 2 * len(cycle) + 2):
        _seen(ring, _encoded(window))
    for encoded in tried:
        run = ring.find(encoded)
        if run is not None:
            assert run == orjson.loads(encoded), encoded


def test_a_scheduler_walking_its_nodes_gets_the_replies_of_lists_decoded_afresh() -> None:
    """Through the hot path: lists that are runs of the cycle answer, byte for byte, as
    the same lists decoded each time."""
    store = PolicyStore()
    policies = load_policy_set([RULES])
    store.reload(lambda: policies, "test")
    source = SnapshotSource.from_file(CLUSTER)
    walking = HotVerbs(store, source, Metrics(), time.time_ns, 1 << 30, "")
    fresh = HotVerbs(store, source, Metrics(), time.time_ns, 1 << 30, "")
    pod = fixture("filter-names.request.json")["Pod"]
    nodes = list(source.nodes)
    runs = 0
    for window in _windows(nodes, max(1, len(nodes) // 2 - 1), 3 * len(nodes)):
        body = json.dumps(
            {"Pod": pod, "Nodes": None, "NodeNames": window}, separators=(",", ":")
        ).encode()
        fresh.names = NamesApart()  # learns nothing from one call to the next
        assert walking.answer("filter", body) == fresh.answer("filter", body)
        decoded = walking.names.split("filter", body)
        runs += decoded is not None and isinstance(decoded[1], NameSlice)
    assert runs > len(nodes), "most lists were taken as runs of the cycle"
