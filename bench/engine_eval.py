"""The policy engine alone, in process: one `evaluate` call over a request's nodes.

It shows what the node cache is worth. *Cached*: NodeNames mode with the results of the
earlier requests of the same kind of pod cached per node (a burst of replicas, the common
case). *Uncached*: every result computed again, as for a pod unlike any before it (or
a node that just changed) — the worst case.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from bench import policy
from bench.workload import Workload, snapshot


@dataclass
class EngineTiming:
    nodes: int
    verb: str
    cached_ms: float
    uncached_ms: float

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _median_ms(run: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _caller(
    policy_set: Any,
    pod: Any,
    nodes: list[Any],
    source: Any,
    now: Any,
    names: list[str],
    filters: bool,
) -> Callable[[bool], None]:
    from policyext.policy import prepare

    def call(cache: bool) -> None:
        prepare(policy_set, pod, source, now).evaluate(
            nodes, names=names, filters=filters, scores=not filters, detail=False, cache_nodes=cache
        )

    return call


def run_engine_benchmarks(workloads: list[Workload], repeats: int = 30) -> list[EngineTiming]:
    from policyext.cel import Timestamp
    from policyext.cluster.snapshot import SnapshotSource

    out: list[EngineTiming] = []
    for w in workloads:
        source = SnapshotSource(snapshot(w)["items"])
        policy_set = policy.compiled()
        nodes = list(source.nodes.values())
        names = [n["metadata"]["name"] for n in nodes]
        now = Timestamp(time.time_ns())
        for verb, filters in (("filter", True), ("prioritize", False)):
            call = _caller(policy_set, w.pod, nodes, source, now, names, filters)
            call(True)  # fill the cache
            cached = _median_ms(lambda: call(True), repeats)  # noqa: B023 - called right here
            uncached = _median_ms(lambda: call(False), max(5, repeats // 3))  # noqa: B023
            out.append(EngineTiming(len(nodes), verb, cached, uncached))
    return out
