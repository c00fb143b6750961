"""Timing an extender over HTTP, the way the kube-scheduler calls it, and checking its
replies.

One persistent HTTP/1.1 connection (the scheduler's Go client keeps its connections alive),
one request at a time (the scheduler calls extenders on its serial path). `measure_server`
sends the same bytes every time (the repeated-request series, which a reply memo answers);
`bench.distinct` sends pods never seen before. Replies are checked against the reference
verdicts of `bench.policy`: a figure is only worth reporting for an extender that answers
correctly.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from bench import policy
from bench.stats import Summary, summarize_ns
from bench.workload import Workload, encode, full_args, names_args

Mode = Literal["full", "names"]
Verb = Literal["filter", "prioritize"]
MODES: Final[tuple[Mode, ...]] = ("full", "names")
VERBS: Final[tuple[Verb, ...]] = ("filter", "prioritize")
HEADERS: Final = {"Content-Type": "application/json", "Accept": "application/json"}


@dataclass(frozen=True)
class Measurement:
    """The latency of one verb in one mode, as the client saw it (send to last byte)."""

    nodes: int
    mode: Mode
    verb: Verb
    latency: Summary
    request_bytes: int
    response_bytes: int
    problems: list[str] = field(default_factory=list)  # empty: the replies are correct

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class KeepAliveClient:
    """POSTs over one HTTP/1.1 connection, reopened only if the server closes it."""

    def __init__(self, base_url: str, timeout: float = 60.0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"expected an http:// URL, got {base_url!r}")
        self._host, self._port = parts.hostname, parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            conn.connect()
            # no Nagle delay between the headers and the body of a request
            assert conn.sock is not None
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conn = conn
        return self._conn

    def post(self, verb: str, body: bytes) -> tuple[int, bytes]:
        conn = self._connection()
        conn.request("POST", f"{self._prefix}/{verb}", body=body, headers=HEADERS)
        response = conn.getresponse()
        data = response.read()
        if response.will_close:
            self.close()
        return response.status, data

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def time_requests(
    client: KeepAliveClient, verb: str, body: bytes, requests: int, warmup: int
) -> tuple[list[int], bytes]:
    """Send `warmup` untimed requests, then `requests` timed ones; return the latencies in
    nanoseconds and the last reply."""
    reply = b""
    for _ in range(warmup):
        reply = _expect_ok(client, verb, body)
    samples: list[int] = []
    for _ in range(requests):
        start = time.perf_counter_ns()
        reply = _expect_ok(client, verb, body)
        samples.append(time.perf_counter_ns() - start)
    return samples, reply


def _expect_ok(client: KeepAliveClient, verb: str, body: bytes) -> bytes:
    status, data = client.post(verb, body)
    if status != 200:
        raise RuntimeError(f"{verb}: HTTP {status}: {data[:300]!r}")
    return data


def measure_server(
    base_url: str,
    workload: Workload,
    *,
    modes: Iterable[Mode] = MODES,
    verbs: Iterable[Verb] = VERBS,
    requests: int = 200,
    warmup: int = 20,
) -> list[Measurement]:
    """Time each verb in each mode against a running extender at `base_url`.

    In "names" mode the server must already know the workload's nodes (loaded from the
    snapshot of the same workload). Each verb's reply is checked against the reference
    policy; problems are reported in the measurement, not raised, so one wrong answer does
    not hide the other figures.
    """
    expected = policy.Reference(workload.nodes, workload.pods).verdicts(workload.pod)
    bodies = {"full": encode(full_args(workload)), "names": encode(names_args(workload))}
    client = KeepAliveClient(base_url)
    results = []
    try:
        for mode in modes:
            for verb in verbs:
                samples, reply = time_requests(client, verb, bodies[mode], requests, warmup)
                results.append(
                    Measurement(
                        nodes=len(workload.nodes),
                        mode=mode,
                        verb=verb,
                        latency=summarize_ns(samples),
                        request_bytes=len(bodies[mode]),
                        response_bytes=len(reply),
                        problems=check_reply(verb, mode, reply, workload, expected),
                    )
                )
    finally:
        client.close()
    return results


# --- checking replies ------------------------------------------------------------------


def field_of(obj: Mapping[str, Any], name: str) -> Any:
    """A field of a reply, matched without regard to case, as the scheduler decodes it."""
    for key, value in obj.items():
        if key.lower() == name.lower():
            return value
    return None


def check_reply(
    verb: Verb, mode: Mode, reply: bytes, workload: Workload, expected: policy.Verdicts
) -> list[str]:
    """What is wrong with a reply (empty: nothing)."""
    if verb == "prioritize":
        return check_scores(reply, expected)
    return check_filter(reply, mode, workload, expected)


def check_filter(
    reply: bytes, mode: Mode, workload: Workload, expected: policy.Verdicts
) -> list[str]:
    """What is wrong with a filter reply (empty: nothing)."""
    try:
        decoded = json.loads(reply)
    except ValueError as e:
        return [f"filter: the reply is not JSON: {e}"]
    if not isinstance(decoded, dict):
        return ["filter: the reply is not an ExtenderFilterResult object"]
    return _check_filter(decoded, mode, workload, expected)


def check_scores(reply: bytes, expected: policy.Verdicts) -> list[str]:
    """What is wrong with a prioritize reply (empty: nothing)."""
    try:
        decoded = json.loads(reply)
    except ValueError as e:
        return [f"prioritize: the reply is not JSON: {e}"]
    return _check_scores(decoded, expected)


def _check_filter(
    result: dict[str, Any], mode: Mode, workload: Workload, expected: policy.Verdicts
) -> list[str]:
    problems = []
    if field_of(result, "Error"):
        problems.append(f"filter: Error = {field_of(result, 'Error')!r}")
    if mode == "names":
        names = field_of(result, "NodeNames")
        if not isinstance(names, list):
            return [*problems, "filter: NodeNames mode, but the reply has no NodeNames list"]
    else:
        nodes = field_of(result, "Nodes")
        items = field_of(nodes, "items") if isinstance(nodes, dict) else None
        if not isinstance(items, list):
            return [*problems, "filter: NodeList mode, but the reply has no Nodes.items"]
        names = [item["metadata"]["name"] for item in items]
        originals = {n["metadata"]["name"]: n for n in workload.nodes}
        # the scheduler goes on with the node objects it gets back: they must be intact
        changed = [
            name for name, item in zip(names, items, strict=True) if item != originals.get(name)
        ]
        if changed:
            problems.append(
                f"filter: {len(changed)} returned nodes differ from those sent, e.g. {changed[0]}"
            )
    # the scheduler does not care about the order of the feasible nodes
    if sorted(names) != sorted(expected.feasible):
        missing = sorted(set(expected.feasible) - set(names))
        extra = sorted(set(names) - set(expected.feasible))
        problems.append(
            f"filter: {len(names)} feasible nodes instead of {len(expected.feasible)}"
            f" (missing e.g. {missing[:2]}, unexpected e.g. {extra[:2]})"
        )
    failed: set[str] = set()
    for key in ("FailedNodes", "FailedAndUnresolvableNodes"):
        failed |= set(field_of(result, key) or {})
    if failed != set(expected.rejected):
        problems.append(
            f"filter: {len(failed)} nodes reported failed, {len(expected.rejected)} expected"
        )
    return problems


def _check_scores(decoded: object, expected: policy.Verdicts) -> list[str]:
    if not isinstance(decoded, list):
        return ["prioritize: the reply is not a HostPriorityList array"]
    problems = []
    scores: dict[str, object] = {}
    for entry in decoded:
        host, score = field_of(entry, "Host"), field_of(entry, "Score")
        scores[str(host)] = score
        if type(score) is not int:
            problems.append(f"prioritize: score of {host} is {score!r}, not an integer")
            break
    if set(scores) != set(expected.scores):
        problems.append(f"prioritize: scored {len(scores)} hosts, {len(expected.scores)} expected")
    wrong = [h for h, s in expected.scores.items() if scores.get(h) != s]
    if wrong:
        h = wrong[0]
        problems.append(
            f"prioritize: {len(wrong)} wrong scores, e.g. {h}: {scores.get(h)!r} instead of"
            f" {expected.scores[h]}"
        )
    return problems
