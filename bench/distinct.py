"""The headline measurement: pods never seen before, each sent once, as kube-scheduler
sends them.

For each pod: filter with the nodes kube-scheduler would send it (`Bodies.window`: a share
of the cluster from where the last pod's walk stopped, in the order its parallel filters
finished them; as names, or as a NodeList), then prioritize with the nodes that passed in
the order the filter reply gave them, one keep-alive connection per server, one call at a
time. The servers compared run side by side and take turns pod by pod, so that the
machine's drift during a run (other work, frequency, the host) touches them alike and their
ratio stays meaningful. A few other pods go first, untimed (the warm-up). Every reply is
checked against the reference of `bench.policy`, and what each server decided (feasible
nodes, failed nodes, every score) is kept, so that `compare_decisions` can prove two
servers decided alike on every node for every pod.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.http_client import KeepAliveClient, Mode, Verb, check_filter, check_scores, field_of
from bench.policy import Reference, Verdicts
from bench.stats import Summary, summarize_ns
from bench.workload import Json, Workload, encode


@dataclass(frozen=True)
class Decision:
    """What a server answered for one pod."""

    pod: str  # namespace/name
    feasible: frozenset[str]
    failed: frozenset[str]
    scores: dict[str, int]  # of the nodes prioritize was sent


@dataclass
class DistinctSeries:
    """The latencies of one verb over the measured pods, each sent once."""

    nodes: int
    mode: Mode
    verb: Verb
    latency: Summary
    problems: list[str] = field(default_factory=list)  # empty: every reply was correct

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DistinctRun:
    series: list[DistinctSeries]
    decisions: list[Decision]


# kube-scheduler's minFeasibleNodesToFind and minFeasibleNodesPercentageToFind
MIN_NODES_TO_FIND = 100
MIN_PERCENTAGE_TO_FIND = 5


def nodes_to_find(nodes: int) -> int:
    """How many nodes kube-scheduler sends an extender's filter on a cluster of `nodes`
    whose nodes all pass its own plugins: its numFeasibleNodesToFind with the default
    (adaptive) percentageOfNodesToScore. 230 of 500 nodes, 500 of 5,000."""
    if nodes < MIN_NODES_TO_FIND:
        return nodes
    percentage = max(MIN_PERCENTAGE_TO_FIND, 50 - nodes // 125)
    return max(MIN_NODES_TO_FIND, nodes * percentage // 100)


class Bodies:
    """The request bodies of a workload, assembled from bytes encoded once (the node
    objects are the bulk of a NodeList request), so that building one costs little."""

    def __init__(self, workload: Workload) -> None:
        self.names = [n["metadata"]["name"] for n in workload.nodes]
        self._node_bytes = {n["metadata"]["name"]: encode(n) for n in workload.nodes}
        self.window_size = nodes_to_find(len(self.names))

    def window(self, turn: int) -> list[str]:
        """The nodes kube-scheduler sends filter for its `turn`-th pod: `window_size` of
        them from where the last pod's walk stopped, round the cluster, in the order its
        parallel filter goroutines finished them (a shuffle, the same for every server)."""
        size, count = self.window_size, len(self.names)
        start = turn * size % count
        window = [self.names[(start + k) % count] for k in range(size)]
        random.Random(turn).shuffle(window)
        return window

    def filter(self, pod: Json, mode: Mode, names: Sequence[str]) -> bytes:
        if mode == "names":
            return b'{"Pod":%b,"Nodes":null,"NodeNames":%b}' % (encode(pod), encode(list(names)))
        return self._node_list(encode(pod), b",".join(self._node_bytes[n] for n in names))

    def prioritize(self, pod: Json, mode: Mode, names: Sequence[str]) -> bytes:
        if mode == "names":
            return b'{"Pod":%b,"Nodes":null,"NodeNames":%b}' % (encode(pod), encode(list(names)))
        return self._node_list(encode(pod), b",".join(self._node_bytes[n] for n in names))

    @staticmethod
    def _node_list(pod: bytes, items: bytes) -> bytes:
        return b'{"Pod":%b,"Nodes":{"metadata":{},"items":[%b]},"NodeNames":null}' % (pod, items)


def pod_key(pod: Json) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def _post(client: KeepAliveClient, verb: str, body: bytes) -> tuple[int, bytes]:
    started = time.perf_counter_ns()
    status, data = client.post(verb, body)
    elapsed = time.perf_counter_ns() - started
    if status != 200:
        raise RuntimeError(f"{verb}: HTTP {status}: {data[:300]!r}")
    return elapsed, data


def _scores_of(reply: bytes) -> dict[str, int]:
    decoded = json.loads(reply)
    if not isinstance(decoded, list):
        return {}
    return {str(field_of(e, "Host")): field_of(e, "Score") for e in decoded}


def _names_of(reply: bytes) -> tuple[frozenset[str], frozenset[str]]:
    result = json.loads(reply)
    if not isinstance(result, dict):
        return frozenset(), frozenset()
    names = field_of(result, "NodeNames")
    if names is None:
        nodes = field_of(result, "Nodes") or {}
        names = [item["metadata"]["name"] for item in field_of(nodes, "items") or []]
    failed: set[str] = set()
    for key in ("FailedNodes", "FailedAndUnresolvableNodes"):
        failed |= set(field_of(result, key) or {})
    return frozenset(names), frozenset(failed)


def measure_distinct(
    base_urls: Mapping[str, str],
    workload: Workload,
    reference: Reference,
    bodies: Bodies,
    mode: Mode,
    pods: Sequence[Json],
    warmup: Sequence[Json],
) -> dict[str, DistinctRun]:
    """Send each pod of `warmup` (untimed), then each of `pods` (timed) once to every server
    of `base_urls` (by name): filter over the nodes kube-scheduler would send for it, then
    prioritize over the nodes that passed. The servers take turns pod by pod, the first of
    each turn rotating, so that a change in the machine's speed during the run touches
    every server alike."""
    names = list(base_urls)
    clients = {name: KeepAliveClient(url) for name, url in base_urls.items()}
    samples = {name: _Samples() for name in names}
    try:
        for i, (timed, pod) in enumerate([(False, p) for p in warmup] + [(True, p) for p in pods]):
            window = bodies.window(i)
            expected = reference.verdicts(pod, window)
            turn = i % len(names)
            for name in names[turn:] + names[:turn]:
                ask = samples[name].ask
                ask(clients[name], workload, reference, bodies, mode, pod, window, expected, timed)
    finally:
        for client in clients.values():
            client.close()
    return {name: samples[name].run(len(bodies.names), mode) for name in names}


class _Samples:
    """What one server answered, and how fast, for the pods of one series."""

    def __init__(self) -> None:
        self.samples: dict[Verb, list[int]] = {"filter": [], "prioritize": []}
        self.problems: dict[Verb, list[str]] = {"filter": [], "prioritize": []}
        self.decisions: list[Decision] = []

    def ask(
        self,
        client: KeepAliveClient,
        workload: Workload,
        reference: Reference,
        bodies: Bodies,
        mode: Mode,
        pod: Json,
        window: Sequence[str],
        expected: Verdicts,
        timed: bool,
    ) -> None:
        elapsed, reply = _post(client, "filter", bodies.filter(pod, mode, window))
        if timed:
            self.samples["filter"].append(elapsed)
            for p in check_filter(reply, mode, workload, expected):
                self.problems["filter"].append(f"{pod_key(pod)}: {p}")
        feasible, failed = _names_of(reply)
        # the scheduler sends prioritize the nodes that passed, in the order of the filter
        # reply; here the reference's (the window's order), so that every server is asked
        # the same question even if one filtered wrongly
        passed = expected.feasible
        scores: dict[str, int] = {}
        if passed:
            elapsed, reply = _post(client, "prioritize", bodies.prioritize(pod, mode, passed))
            scores = _scores_of(reply)
            if timed:
                self.samples["prioritize"].append(elapsed)
                for p in check_scores(reply, reference.restricted(expected, passed)):
                    self.problems["prioritize"].append(f"{pod_key(pod)}: {p}")
        if timed:
            self.decisions.append(Decision(pod_key(pod), feasible, failed, scores))

    def run(self, nodes: int, mode: Mode) -> DistinctRun:
        series = [
            DistinctSeries(nodes, mode, verb, summarize_ns(self.samples[verb]), self.problems[verb])
            for verb in ("filter", "prioritize")
            if self.samples[verb]
        ]
        return DistinctRun(series, self.decisions)


def compare_decisions(
    ours: Sequence[Decision], theirs: Sequence[Decision], limit: int = 5
) -> list[str]:
    """Where two servers decided differently for the same pods (empty: alike on every node
    for every pod): the feasible nodes, the failed nodes and every score."""
    if [d.pod for d in ours] != [d.pod for d in theirs]:
        return [f"not the same pods: {len(ours)} and {len(theirs)} decisions"]
    differences: list[str] = []
    for a, b in zip(ours, theirs, strict=True):
        for what, x, y in (
            ("feasible", a.feasible, b.feasible),
            ("failed", a.failed, b.failed),
        ):
            if x != y:
                only_a, only_b = sorted(x - y)[:2], sorted(y - x)[:2]
                differences.append(f"{a.pod}: {what} nodes differ ({only_a} / {only_b})")
        if a.scores != b.scores:
            node = next(
                n
                for n in sorted(set(a.scores) | set(b.scores))
                if a.scores.get(n) != b.scores.get(n)
            )
            differences.append(
                f"{a.pod}: score of {node} is {a.scores.get(node)!r} / {b.scores.get(node)!r}"
            )
    if len(differences) > limit:
        differences = [*differences[:limit], f"... {len(differences) - limit} more"]
    return differences
