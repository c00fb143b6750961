"""`python -m bench.load`: many keep-alive clients against one `policyext serve`, bounded in
time and in requests, on loopback; optionally rewriting the policy folder while it runs.

The server serves the benchmark workload (its snapshot; default 500 nodes) and a policy
folder laid out as kubelet projects a ConfigMap. Two valid sets are used:

- A: the benchmark policy, plus a filter refusing the nodes of zone eu-west-1a;
- B: the benchmark policy, plus a filter refusing the nodes of zone eu-west-1c;

so every filter reply is exactly A's answer, exactly B's, or wrong. Scores are the
benchmark policy's in both. With `--reload`, the folder is swapped atomically every
`--reload-every` seconds through A, an invalid set, B, the invalid set, A... (a new hidden
folder, then one rename of the `..data` link). The run fails (exit 1) on any failed
request, any reply that is neither A's nor B's, or, with --reload, if B was never served.

Each client keeps one HTTP/1.1 connection and sends filter and prioritize calls, mostly
with NodeNames and a share (`--full-share`) with the whole NodeList. The worker's resident
memory is sampled every second.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import platform
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from bench import policy
from bench.http_client import KeepAliveClient, Mode, Verb, check_reply
from bench.server import Running, rss_mb, serve
from bench.stats import summarize_ns
from bench.workload import Workload, encode, full_args, generate, names_args, write_snapshot

ZONE_LABEL: Final = "topology.kubernetes.io/zone"
ZONE_OF_A: Final = "eu-west-1a"  # the zone set A refuses
ZONE_OF_B: Final = "eu-west-1c"  # the zone set B refuses
# a syntax error: a set with it is never served
BROKEN: Final = """apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: broken}
spec:
  filters:
    - {name: bad, expression: "node.metadata.name ==", message: x}
"""


def _zone_policy(name: str, zone: str) -> str:
    document = {
        "apiVersion": "policyext.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": name},
        "spec": {
            "filters": [
                {
                    "name": "not-in-zone",
                    "expression": f"node.metadata.?labels[?'{ZONE_LABEL}'].orValue('') != '{zone}'",
                    "message": f"set {name} keeps pods out of {zone}",
                }
            ]
        },
    }
    return json.dumps(document, indent=1)


SETS: Final = {
    "A": {"extra.yaml": _zone_policy("set-a", ZONE_OF_A)},
    "B": {"extra.yaml": _zone_policy("set-b", ZONE_OF_B)},
    "invalid": {"extra.yaml": BROKEN},
}


def expected_verdicts(workload: Workload, zone: str) -> policy.Verdicts:
    """The benchmark policy's verdicts, with the nodes of `zone` refused as well."""
    base = policy.Reference(workload.nodes, workload.pods).verdicts(workload.pod)
    in_zone = {
        n["metadata"]["name"]
        for n in workload.nodes
        if (n["metadata"].get("labels") or {}).get(ZONE_LABEL) == zone
    }
    rejected = {name: list(rules) for name, rules in base.rejected.items()}
    for name in in_zone:
        rejected.setdefault(name, []).append("not-in-zone")
    feasible = [n for n in base.feasible if n not in in_zone]
    return policy.Verdicts(feasible, rejected, base.scores)


# -- the policy folder, updated as kubelet updates a projected ConfigMap -----------------------
class PolicyFolder:
    def __init__(self, root: Path, base_policy: str) -> None:
        self.root = root
        self.base = base_policy
        self.versions = itertools.count(1)
        root.mkdir(parents=True, exist_ok=True)

    def show(self, set_name: str) -> None:
        """Make the folder show `set_name` in one atomic step (the `..data` rename)."""
        files = {"base.yaml": self.base, **SETS[set_name]}
        data = self.root / "..data"
        old = data.resolve() if data.is_symlink() else None
        version = self.root / f"..{next(self.versions):06d}-{set_name}"
        version.mkdir()
        for name, content in files.items():
            (version / name).write_text(content, encoding="utf-8")
        staging = self.root / "..data_tmp"
        staging.symlink_to(version.name)
        os.replace(staging, data)
        for name in files:
            if not (self.root / name).is_symlink():
                (self.root / name).symlink_to(f"..data/{name}")
        if old is not None:
            for leftover in old.iterdir():
                leftover.unlink()
            old.rmdir()


# -- the run -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    clients: int = 50
    duration: float = 60.0
    max_requests: int = 1_000_000
    nodes: int = 500
    full_share: float = 0.05
    reload: bool = False
    reload_every: float = 1.0
    workers: int = 1
    threads: int = 4
    seed: int = 1
    output: Path | None = None


@dataclass
class ClientTally:
    latencies: list[int] = field(default_factory=list)
    answers: Counter[str] = field(default_factory=Counter)  # "filter/names A", ...
    failures: Counter[str] = field(default_factory=Counter)  # what went wrong, counted
    wrong: list[str] = field(default_factory=list)  # the first few wrong replies


class Classifier:
    """Says whose answer a reply is: "A", "B", "A=B" (both agree: prioritize) or "wrong".
    Replies repeat byte for byte, so each distinct body is checked once."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.expected = {
            "A": expected_verdicts(workload, ZONE_OF_A),
            "B": expected_verdicts(workload, ZONE_OF_B),
        }
        self._seen: dict[tuple[str, str, bytes], tuple[str, str]] = {}
        self._lock = threading.Lock()

    def classify(self, verb: Verb, mode: Mode, body: bytes) -> tuple[str, str]:
        key = (verb, mode, hashlib.blake2b(body, digest_size=16).digest())
        with self._lock:
            known = self._seen.get(key)
        if known is not None:
            return known
        problems = {
            name: check_reply(verb, mode, body, self.workload, verdicts)
            for name, verdicts in self.expected.items()
        }
        matching = [name for name, p in problems.items() if not p]
        if matching:
            result = ("=".join(matching), "")
        else:
            result = ("wrong", "; ".join(problems["A"][:1] + problems["B"][:1]))
        with self._lock:
            self._seen[key] = result
        return result


def _client(
    index: int,
    settings: Settings,
    url: str,
    bodies: dict[Mode, bytes],
    classifier: Classifier,
    stop: threading.Event,
    issued: itertools.count[int],
    tally: ClientTally,
) -> None:
    rng = random.Random(f"{settings.seed}:{index}")
    client = KeepAliveClient(url, timeout=30.0)
    try:
        while not stop.is_set():
            if next(issued) >= settings.max_requests:
                stop.set()
                break
            verb: Verb = "filter" if rng.random() < 0.5 else "prioritize"
            mode: Mode = "full" if rng.random() < settings.full_share else "names"
            started = time.perf_counter_ns()
            try:
                status, data = client.post(verb, bodies[mode])
            except OSError as e:
                tally.failures[f"{verb}/{mode}: {type(e).__name__}"] += 1
                client.close()
                continue
            tally.latencies.append(time.perf_counter_ns() - started)
            if status != 200:
                tally.failures[f"{verb}/{mode}: HTTP {status}"] += 1
                continue
            whose, problem = classifier.classify(verb, mode, data)
            tally.answers[f"{verb}/{mode} {whose}"] += 1
            if whose == "wrong" and len(tally.wrong) < 3:
                tally.wrong.append(problem)
    finally:
        client.close()


@dataclass
class Sample:
    at: float  # seconds since the start
    requests: int
    rss_mb: float


def _sampler(
    server: Running,
    tallies: list[ClientTally],
    started: float,
    stop: threading.Event,
    out: list[Sample],
) -> None:
    while not stop.wait(1.0):
        workers = server.worker_pids()
        requests = sum(len(t.latencies) for t in tallies)
        out.append(
            Sample(
                round(time.monotonic() - started, 1),
                requests,
                round(sum(rss_mb(p) for p in workers), 1),
            )
        )


def _reloader(
    folder: PolicyFolder, every: float, stop: threading.Event, shown: Counter[str]
) -> None:
    cycle = itertools.cycle(["invalid", "B", "invalid", "A"])
    while not stop.wait(every):
        name = next(cycle)
        folder.show(name)
        shown[name] += 1


def run(settings: Settings, log: Path | None = None) -> dict[str, Any]:
    workload = generate(settings.nodes)
    bodies: dict[Mode, bytes] = {
        "names": encode(names_args(workload)),
        "full": encode(full_args(workload)),
    }
    classifier = Classifier(workload)
    with tempfile.TemporaryDirectory(prefix="policyext-load-") as tmp:
        snapshot = write_snapshot(workload, Path(tmp) / "snapshot.json")
        folder = PolicyFolder(Path(tmp) / "rules", json.dumps(policy.scheduling_policy(), indent=1))
        folder.show("A")
        flags = ["--workers", str(settings.workers), "--threads", str(settings.threads)]
        with serve([folder.root], snapshot, log or Path(tmp) / "server.log", *flags) as server:
            for verb, mode in itertools.product(("filter", "prioritize"), ("names", "full")):
                status, _ = KeepAliveClient(server.url).post(verb, bodies[mode])  # warm up
                assert status == 200
            workers_before = server.worker_pids()
            stop = threading.Event()
            issued = itertools.count()
            tallies = [ClientTally() for _ in range(settings.clients)]
            samples: list[Sample] = []
            shown: Counter[str] = Counter()
            started = time.monotonic()
            threads = [
                threading.Thread(
                    target=_client,
                    args=(i, settings, server.url, bodies, classifier, stop, issued, tallies[i]),
                    daemon=True,
                )
                for i in range(settings.clients)
            ]
            threads.append(
                threading.Thread(
                    target=_sampler, args=(server, tallies, started, stop, samples), daemon=True
                )
            )
            if settings.reload:
                threads.append(
                    threading.Thread(
                        target=_reloader,
                        args=(folder, settings.reload_every, stop, shown),
                        daemon=True,
                    )
                )
            for t in threads:
                t.start()
            stop.wait(settings.duration)
            stop.set()
            for t in threads:
                t.join(60)
            elapsed = time.monotonic() - started
            status, listing = server.get("/policies")
            reloads = json.loads(listing).get("reloads", {}) if status == 200 else {}
            workers_after = server.worker_pids()
    latencies = [x for t in tallies for x in t.latencies]
    answers: Counter[str] = sum((t.answers for t in tallies), Counter())
    failures: Counter[str] = sum((t.failures for t in tallies), Counter())
    wrong = [w for t in tallies for w in t.wrong][:5]
    summary = summarize_ns(latencies) if latencies else None
    rss = [s.rss_mb for s in samples if s.rss_mb > 0]
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "settings": {
            k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(settings).items()
        },
        "seconds": round(elapsed, 1),
        "requests": len(latencies) + sum(failures.values()),
        "per_second": round(len(latencies) / elapsed, 1) if elapsed else 0.0,
        "failed": sum(failures.values()),
        "failures": dict(failures),
        "answers": dict(sorted(answers.items())),
        "wrong": sum(n for k, n in answers.items() if k.endswith("wrong")),
        "wrong_examples": wrong,
        "latency_ms": None
        if summary is None
        else {
            "p50": round(summary.p50, 2),
            "p99": round(summary.p99, 2),
            "max": round(summary.max, 2),
        },
        "rss_mb": None
        if not rss
        else {"start": rss[0], "end": rss[-1], "max": max(rss), "samples": len(rss)},
        # (requests so far, worker RSS in MiB) at about ten moments of the run
        "rss_by_requests": [
            (s.requests, s.rss_mb) for s in samples[:: max(1, len(samples) // 10)] + samples[-1:]
        ],
        "swaps": dict(shown),
        "server_reloads": reloads,
        "same_workers": workers_before == workers_after,
    }


def verdict(result: dict[str, Any], settings: Settings) -> list[str]:
    """What makes the run a failure (empty: it passed)."""
    problems = []
    if result["failed"]:
        problems.append(f"{result['failed']} failed requests: {result['failures']}")
    if result["wrong"]:
        problems.append(
            f"{result['wrong']} replies neither A's nor B's: {result['wrong_examples']}"
        )
    if not result["same_workers"]:
        problems.append("a worker was replaced during the run")
    if settings.reload and not any(
        k.startswith("filter") and k.endswith(" B") for k in result["answers"]
    ):
        problems.append("set B was never served: the folder was not reloaded")
    return problems


def parse_args(argv: Sequence[str]) -> Settings:
    parser = argparse.ArgumentParser(
        prog="python -m bench.load",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds (default 60)")
    parser.add_argument("--max-requests", type=int, default=1_000_000, help="stop after this many")
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--full-share", type=float, default=0.05, help="share of NodeList calls")
    parser.add_argument("--reload", action="store_true", help="swap A, invalid, B... while it runs")
    parser.add_argument("--reload-every", type=float, default=1.0, metavar="SECONDS")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", type=Path, help="also write the result as JSON here")
    a = parser.parse_args(argv)
    return Settings(
        a.clients,
        a.duration,
        a.max_requests,
        a.nodes,
        a.full_share,
        a.reload,
        a.reload_every,
        a.workers,
        a.threads,
        a.seed,
        a.output,
    )


def main(argv: Sequence[str] | None = None) -> int:
    settings = parse_args(sys.argv[1:] if argv is None else argv)
    result = run(settings)
    text = json.dumps(result, indent=2)
    print(text)
    if settings.output is not None:
        settings.output.parent.mkdir(parents=True, exist_ok=True)
        settings.output.write_text(text + "\n")
    problems = verdict(result, settings)
    for p in problems:
        print(f"FAILED: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
