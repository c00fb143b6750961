"""The live cluster's node table under requests and watch events at once: requests that
run while nodes and their pods change never fail, and once the changes stop no value kept
for an old version is served (the answers equal node-by-node evaluation of the current
nodes)."""

from __future__ import annotations

import threading
from typing import Any

from policyext.cluster.cache import ClusterSource
from policyext.policy.engine import prepare
from tests.cluster.fake_core import fake_api
from tests.policy.helpers import NOW, node, pod, policies, policy

POLICY = policies(
    policy(
        "placement",
        """
        filters:
          - name: not-spot
            expression: "node.metadata.labels.?lifecycle.orValue('') != 'spot'"
          - name: free-cpu
            expression: "nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0"
        scores:
          - name: free
            weight: 1
            expression: "nodeInfo.free.cpu.asApproximateFloat()"
        """,
    )
)
NAMES = [f"n{i}" for i in range(40)]
THE_POD = pod("web", cpu="1")


def _node(name: str, version: int) -> dict[str, Any]:
    lifecycle = "spot" if version % 3 == 0 else "on-demand"
    made = node(name, {"lifecycle": lifecycle}, cpu=str(2 + version % 4))
    made["metadata"]["resourceVersion"] = str(version)
    return made


def _bound(i: int, name: str, cpu: str) -> dict[str, Any]:
    bound = pod(f"p{i}", cpu=cpu)
    bound["metadata"]["uid"] = f"uid-{i}"
    bound["spec"]["nodeName"] = name
    return bound


def test_requests_racing_node_and_pod_events_never_serve_a_stale_value_afterwards() -> None:
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace("nodes", [_node(n, 1) for n in NAMES])
    source.replace("pods", [])
    errors: list[BaseException] = []
    stop = threading.Event()

    def ask() -> None:
        try:
            while not stop.is_set():
                rows = source.node_rows(NAMES)
                ev = prepare(POLICY, THE_POD, source, NOW).evaluate(rows)
                assert ev.names == NAMES
                assert len(ev.scores or []) == len(ev.feasible_names())
        except BaseException as e:  # reported below: a thread's failure is the test's
            errors.append(e)

    askers = [threading.Thread(target=ask) for _ in range(3)]
    for t in askers:
        t.start()
    try:
        for version in range(2, 120):
            name = NAMES[version % len(NAMES)]
            source.apply("nodes", "MODIFIED", _node(name, version))
            source.apply("pods", "ADDED", _bound(version, name, f"{version % 3}"))
            if version % 5 == 0:
                source.apply("pods", "DELETED", _bound(version - 3, "", "0"))
    finally:
        stop.set()
        for t in askers:
            t.join(60)
    assert errors == []

    rows = source.node_rows(NAMES)
    kept = prepare(POLICY, THE_POD, source, NOW).evaluate(rows)
    by_node = prepare(POLICY, THE_POD, source, NOW).evaluate(
        [source.get_node(n) for n in NAMES],  # type: ignore[misc]
        cache_nodes=False,
        columns=False,
    )
    assert kept.feasible_names() == by_node.feasible_names()
    assert kept.final_scores() == by_node.final_scores()
    again = prepare(POLICY, THE_POD, source, NOW).evaluate(source.node_rows(NAMES))
    assert again.evaluations < len(NAMES)  # every value kept now: the pod's part alone
