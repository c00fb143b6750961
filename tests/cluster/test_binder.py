"""The binder's pod lookup and Binding against a stand-in for the API server (the real
one: tests/e2e/test_cluster.py): the node cache's pod when it holds it with the UID asked
about, else the API server's; a bound pod counted on its node at once, without reading
it back."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from policyext.cluster.cache import ClusterSource
from tests.cluster.fake_core import FakeCore, fake_api, fake_binder
from tests.server.kube import node, pod

WEB = pod("web-0", "shop")
UID = WEB["metadata"]["uid"]


@dataclass(frozen=True)
class _Bind:
    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


def _cluster(cached: bool) -> tuple[FakeCore, ClusterSource]:
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace("nodes", [node("a"), node("b")])
    source.replace("pods", [copy.deepcopy(WEB)] if cached else [])
    core = FakeCore()
    core.add(WEB)
    return core, source


LOOKUPS: dict[str, tuple[bool, str, str, Any, bool]] = {
    # cached?, name, uid asked -> the UID found (None: no pod; "!": unreadable), read?
    "a pod the cache holds with that UID is not read": (True, "web-0", UID, UID, False),
    "a pod the cache does not hold is read": (False, "web-0", UID, UID, True),
    "a pod the cache holds under another UID is read": (True, "web-0", "u-other", UID, True),
    "a pod nobody has is none": (False, "made-up", UID, None, True),
}


@pytest.mark.parametrize("case", list(LOOKUPS))
def test_the_pod_to_bind_is_the_caches_or_the_api_servers(case: str) -> None:
    cached, name, uid, found_uid, read = LOOKUPS[case]
    core, source = _cluster(cached)

    found, problem = fake_binder(core, source).find_pod("shop", name, uid)

    assert problem == ""
    assert (found["metadata"]["uid"] if found is not None else None) == found_uid
    assert core.reads == ([("shop", name)] if read else [])


def test_a_pod_the_api_server_cannot_give_is_retried_then_said() -> None:
    core, source = _cluster(cached=False)
    core.fail_with = 503
    pauses: list[float] = []
    binder = fake_binder(core, source)
    binder.retry_budget, binder.clock, binder.sleep = 1.0, lambda: sum(pauses), pauses.append

    found, problem = binder.find_pod("shop", "web-0", UID)

    assert found is None
    assert problem.startswith("reading pod shop/web-0 failed: HTTP 503")
    assert len(core.reads) >= 2  # tried again within the budget


def test_a_pod_bound_with_what_find_pod_found_is_counted_at_once_without_a_read_back() -> None:
    core, source = _cluster(cached=False)
    binder = fake_binder(core, source)
    found, _ = binder.find_pod("shop", "web-0", UID)

    assert binder.bind(_Bind("web-0", "shop", UID, "a"), found) == ""

    assert core.bindings == [("shop", "web-0", "a")]
    assert core.reads == [("shop", "web-0")]  # the lookup's, none after the Binding
    assert source.node_info(source.get_node("a") or {})["podCount"] == 1
    held = source.pod("shop", "web-0") or {}
    assert held["spec"]["nodeName"] == "a"  # held as bound until the watch confirms it
