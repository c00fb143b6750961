"""`python -m bench.throughput`: kube-scheduler's throughput with and without policyext.

One real control plane (the e2e harness's etcd and kube-apiserver), fake Nodes, and per
round two runs on the same cluster: the stock scheduler, then a scheduler calling our
extender exactly as `policyext config --bind` configures it (filter, prioritize, preempt,
bind; nodeCacheCapable) with the policies in rules/. Each run creates its pods while no
scheduler of theirs is running, starts the scheduler, and times the bindings as a watch
sees them: the rate from the first binding to the last is the scheduler's own, without
its start-up or the pods' creation. The pods are deleted before the next run, so every run
sees empty nodes. Writes docs/benchmarks-throughput.md (and bench/results/).
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.report import describe_machine
from tests.e2e.binaries import KUBERNETES_VERSION, ensure_binaries
from tests.e2e.controlplane import POLICYEXT, ControlPlane, KubeClient, fake_node, pod
from tests.e2e.extender import Extender, scheduler_config
from tests.e2e.rbac import grant_extender_rbac, wait_until_granted

REPO_ROOT = Path(__file__).resolve().parent.parent
DOCS_PAGE = REPO_ROOT / "docs" / "benchmarks-throughput.md"
RESULTS = REPO_ROOT / "bench" / "results"
RULES = REPO_ROOT / "rules"
CLIENT_THREADS = 8
# the scheduler's API client: kube-scheduler's default (50 QPS) would measure the limiter,
# not the scheduler; scheduler_perf raises it the same way
CLIENT_CONNECTION = {"qps": 5000, "burst": 5000}

Json = dict[str, Any]


@dataclass
class RunResult:
    scheduler: str
    pods: int
    seconds: float  # first binding to last
    startup_seconds: float  # scheduler process start to its first binding
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    extender_ms: dict[str, float] = field(default_factory=dict)  # mean per call, by verb

    @property
    def pods_per_second(self) -> float:
        return (self.pods - 1) / self.seconds if self.seconds > 0 else 0.0


# --------------------------------------------------------------------------- measuring


class BindWatch:
    """Watches a namespace's pods and notes when each is first seen bound."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.bound: dict[str, float] = {}
        self._done = threading.Event()
        version = client.get(f"/api/v1/namespaces/{namespace}/pods")["metadata"]
        self._version = str(version["resourceVersion"])
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._connection: http.client.HTTPSConnection | None = None

    def start(self) -> None:
        self._thread.start()

    def wait(self, count: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while len(self.bound) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        return len(self.bound) >= count

    def stop(self) -> None:
        self._done.set()
        connection = self._connection
        if connection is not None and connection.sock is not None:
            connection.sock.close()

    def _run(self) -> None:
        while not self._done.is_set():
            try:
                self._stream()
            except (OSError, http.client.HTTPException, ValueError):
                if self._done.is_set():
                    return
                time.sleep(0.2)

    def _stream(self) -> None:
        connection = http.client.HTTPSConnection(
            "127.0.0.1", self.client.port, context=self.client.context, timeout=600
        )
        self._connection = connection
        path = (
            f"/api/v1/namespaces/{self.namespace}/pods?watch=1"
            f"&resourceVersion={self._version}&allowWatchBookmarks=true"
        )
        connection.request("GET", path, headers={"Authorization": f"Bearer {self.client.token}"})
        response = connection.getresponse()
        while line := response.readline():
            event = json.loads(line)
            obj = event.get("object") or {}
            meta = obj.get("metadata") or {}
            self._version = str(meta.get("resourceVersion", self._version))
            name = meta.get("name", "")
            if (obj.get("spec") or {}).get("nodeName") and name not in self.bound:
                self.bound[name] = time.monotonic()


def cpu_seconds(group: int) -> float:
    """User and system CPU time of every live process in a process group."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:  # pgrp
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _parallel(count: int, action: Any) -> None:
    with ThreadPoolExecutor(CLIENT_THREADS) as pool:
        list(pool.map(action, range(count)))


def create_nodes(admin: KubeClient, count: int) -> None:
    zones = ("eu-west-1a", "eu-west-1b", "eu-west-1c")

    def one(i: int) -> None:
        labels = {"topology.kubernetes.io/zone": zones[i % 3]}
        if i % 10 < 3:
            labels["lifecycle"] = "spot"  # 30 %, as in the bench/ workload
        admin.create_fake_node(fake_node(f"bench-{i:04d}", cpu="8", memory="32Gi", labels=labels))

    _parallel(count, one)


def create_pods(admin: KubeClient, namespace: str, scheduler: str, count: int) -> None:
    def one(i: int) -> None:
        labels = {"app": "bench", "critical": "true"} if i % 3 == 0 else {"app": "bench"}
        admin.create(
            f"/api/v1/namespaces/{namespace}/pods",
            pod(f"p-{i:04d}", scheduler_name=scheduler, cpu="100m", labels=labels),
        )

    _parallel(count, one)


def _verb_means(extender: Extender) -> dict[str, float]:
    _, text = extender.get("/metrics")
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    for line in str(text).splitlines():
        for suffix, into in (("_sum", sums), ("_count", counts)):
            prefix = f'policyext_request_duration_seconds{suffix}{{verb="'
            if line.startswith(prefix):
                verb = line[len(prefix) :].split('"', 1)[0]
                into[verb] = float(line.rsplit(" ", 1)[1])
    return {v: 1000 * sums[v] / counts[v] for v in sums if counts.get(v)}


def run_once(
    plane: ControlPlane,
    admin: KubeClient,
    label: str,
    config: str,
    pods: int,
    timeout: float,
    extender: Extender | None,
) -> RunResult:
    namespace = f"bench-{label}-{int(time.time())}"
    admin.create_namespace(namespace)
    scheduler_name = f"bench-{label}"
    document = yaml.safe_load(config)
    document["profiles"] = [
        {**p, "schedulerName": scheduler_name} for p in document.get("profiles") or [{}]
    ]
    document["clientConnection"] = dict(CLIENT_CONNECTION)
    create_pods(admin, namespace, scheduler_name, pods)
    watch = BindWatch(admin, namespace)
    watch.start()
    groups = {
        "kube-apiserver": plane.components["kube-apiserver"],
        "etcd": plane.components["etcd"],
    }
    if extender is not None:
        groups["policyext"] = extender.component
    before = {name: cpu_seconds(c.process.pid) for name, c in groups.items() if c.process}
    started = time.monotonic()
    scheduler = plane.start_scheduler(yaml.safe_dump(document), name=scheduler_name)
    try:
        if not watch.wait(pods, timeout):
            raise SystemExit(f"{label}: only {len(watch.bound)} of {pods} pods bound in time")
        assert scheduler.process is not None
        groups["kube-scheduler"] = scheduler
        before["kube-scheduler"] = 0.0
        cpu = {
            name: round(cpu_seconds(c.process.pid) - before.get(name, 0.0), 2)
            for name, c in groups.items()
            if c.process
        }
    finally:
        watch.stop()
        plane.stop_component(scheduler_name)
    times = sorted(watch.bound.values())
    result = RunResult(
        scheduler=label,
        pods=pods,
        seconds=times[-1] - times[0],
        startup_seconds=times[0] - started,
        cpu_seconds=cpu,
        extender_ms=_verb_means(extender) if extender is not None else {},
    )
    admin.request(
        "DELETE", f"/api/v1/namespaces/{namespace}/pods", query={"gracePeriodSeconds": "0"}
    )
    return result


# --------------------------------------------------------------------------- report


def render(results: Sequence[RunResult], settings: Json, machine: dict[str, str]) -> str:
    out: list[str] = []
    add = out.append
    add("# Scheduler throughput with and without policyext\n")
    add(
        f"Generated by `python -m bench.throughput` (`make bench-throughput`) on"
        f" {settings['date']}. Rerun it rather than edit this page.\n"
    )
    add(
        f"kube-scheduler {KUBERNETES_VERSION} schedules {settings['pods']:,} pods onto"
        f" {settings['nodes']} fake Nodes of one real etcd and kube-apiserver, all on the"
        " machine below together with the extender and the benchmark itself. Per round:"
        " the stock scheduler, then one calling policyext as `policyext config --bind`"
        " configures it (filter, prioritize, preempt and bind; `nodeCacheCapable: true`),"
        f" serving the policies in `rules/` with `--workers 1 --threads {settings['threads']}`."
        " A third of the pods are `critical` (the spot filter applies to them); 30 % of the"
        " nodes are spot nodes. The rate counts from the first binding to the last, as a"
        " watch sees them (not the scheduler's start nor the pods' creation); the client"
        f" rate limit of both schedulers is raised to {CLIENT_CONNECTION['qps']} QPS.\n"
    )
    add("## Machine\n")
    add("| CPU | cores | OS | Python | load average at start |\n|---|---|---|---|---|")
    m = machine
    add(f"| {m['cpu']} | {m['cores']} | {m['os']} | {m['python']} | {m.get('load', '?')} |\n")
    add("## Results\n")
    add(
        "| round | scheduler | pods/s | seconds | ratio to stock | CPU s: scheduler | apiserver"
        " | etcd | policyext |\n|---|---|---|---|---|---|---|---|---|"
    )
    by_round: dict[int, dict[str, RunResult]] = {}
    for i, r in enumerate(results):
        by_round.setdefault(i // 2, {})[r.scheduler] = r
    for index, pair in sorted(by_round.items()):
        stock = pair.get("stock")
        for r in pair.values():
            ratio = (
                f"{r.pods_per_second / stock.pods_per_second:.2f}"
                if stock and stock.pods_per_second
                else ""
            )
            c = r.cpu_seconds
            add(
                f"| {index + 1} | {r.scheduler} | {r.pods_per_second:.0f} | {r.seconds:.2f}"
                f" | {ratio} | {c.get('kube-scheduler', 0):.1f} | {c.get('kube-apiserver', 0):.1f}"
                f" | {c.get('etcd', 0):.1f} | {c.get('policyext', '') or ''} |"
            )
    stock_rates = [r.pods_per_second for r in results if r.scheduler == "stock"]
    ours = [r.pods_per_second for r in results if r.scheduler == "policyext"]
    cost = 1 - statistics.median(ours) / statistics.median(stock_rates)
    add("")
    add(
        f"**Median over the rounds: {statistics.median(stock_rates):.0f} pods/s stock,"
        f" {statistics.median(ours):.0f} pods/s with policyext: the extender costs"
        f" {cost:.0%} of the scheduler's throughput** (the goal is at most 20 %).\n"
    )
    means = [r.extender_ms for r in results if r.extender_ms]
    if means:
        last = means[-1]
        add(
            "Mean time inside the extender per call (from its `/metrics`, cumulative over the"
            " rounds): "
            + ", ".join(f"{verb} {ms:.2f} ms" for verb, ms in sorted(last.items()))
            + ".\n"
        )
    add(settings.get("notes", ""))
    return "\n".join(out).rstrip() + "\n"


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.throughput", description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4, help="the extender's --threads")
    parser.add_argument("--timeout", type=float, default=300, help="per run, seconds")
    parser.add_argument("--no-write", action="store_true", help="print, do not write docs")
    parser.add_argument("--notes", default="", help="a paragraph appended to the page")
    parser.add_argument(
        "--only",
        choices=("stock", "policyext"),
        help="one scheduler (to profile); implies --no-write",
    )
    args = parser.parse_args(argv)
    machine = describe_machine()
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    results: list[RunResult] = []
    with (
        tempfile.TemporaryDirectory(prefix="policyext-throughput-") as work,
        ControlPlane(ensure_binaries(), Path(work)) as plane,
    ):
        admin = plane.client()
        grant_extender_rbac(admin)
        wait_until_granted(plane.client(POLICYEXT))
        kubeconfig = plane.write_kubeconfig(POLICYEXT, Path(work) / "policyext.kubeconfig")
        print(f"creating {args.nodes} nodes", flush=True)
        create_nodes(admin, args.nodes)
        extender = Extender(plane, kubeconfig, [RULES], args=("--threads", str(args.threads)))
        extender.start(timeout=60)
        try:
            ours = scheduler_config(extender.url, "bench-policyext")
            stock = "profiles:\n  - schedulerName: bench-stock\n"
            for round_ in range(args.rounds):
                for label, config, ext in (
                    ("stock", stock, None),
                    ("policyext", ours, extender),
                ):
                    if args.only and label != args.only:
                        continue
                    result = run_once(plane, admin, label, config, args.pods, args.timeout, ext)
                    results.append(result)
                    print(
                        f"round {round_ + 1} {label}: {result.pods_per_second:.0f} pods/s"
                        f" ({result.seconds:.2f} s) cpu {result.cpu_seconds}"
                        f" extender {result.extender_ms}",
                        flush=True,
                    )
        finally:
            extender.stop()
    settings = {
        "date": date,
        "nodes": args.nodes,
        "pods": args.pods,
        "threads": args.threads,
        "notes": args.notes,
    }
    if args.only:
        return 0
    page = render(results, settings, machine)
    print(page)
    if not args.no_write:
        DOCS_PAGE.write_text(page)
        RESULTS.mkdir(exist_ok=True)
        stamp = date.replace(" ", "T").replace(":", "")
        (RESULTS / f"throughput-{stamp}.json").write_text(
            json.dumps(
                {"settings": settings, "machine": machine, "runs": [asdict(r) for r in results]},
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
