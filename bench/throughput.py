"""`python -m bench.throughput`: kube-scheduler's throughput with and without policyext.

One real control plane (the e2e harness's etcd and kube-apiserver), fake Nodes, and per
round several runs on the same cluster: the stock scheduler; a scheduler calling the Go
baseline extender of `python -m bench` (the same benchmark policy, compiled in; what any
extender costs on this machine); and schedulers calling policyext as `policyext config`
configures them (filter, prioritize, preempt; nodeCacheCapable), serving the benchmark
policy of bench/policy.py, the same with `--bind` (policyext binds), and serving the
example policies of rules/. Each run creates its pods while no scheduler of theirs is
running, starts the scheduler, and times the bindings as a watch sees them: the rate from
the first binding to the last is the scheduler's own, without its start-up or the pods'
creation. The pods are deleted before the next run, so every run sees empty nodes. Writes
docs/benchmarks-throughput.md (and bench/results/).
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench import policy, targets
from bench.pods import pending_pods
from bench.recording import RecordingProxy, merge
from bench.report import describe_machine
from bench.workload import GPU_LABEL, GPU_RESOURCE
from tests.e2e.binaries import KUBERNETES_VERSION, ensure_binaries
from tests.e2e.controlplane import (
    POLICYEXT,
    ControlPlane,
    KubeClient,
    fake_node,
    free_port,
)
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
    scheduler_ms: dict[str, float] = field(default_factory=dict)  # mean per pod, by phase
    round: int = 0

    @property
    def pods_per_second(self) -> float:
        return (self.pods - 1) / self.seconds if self.seconds > 0 else 0.0

    @property
    def extender_ms_per_pod(self) -> float | None:
        """The extender's CPU time (user and system, every process of it) per pod."""
        cpu = self.cpu_seconds.get("extender")
        return None if cpu is None else 1000 * cpu / self.pods


# --------------------------------------------------------------------------- measuring


class BindWatch:
    """Watches a namespace's pods and notes when each is first seen bound."""

    def __init__(self, client: KubeClient, namespace: str, keep: bool = False) -> None:
        self.client = client
        self.namespace = namespace
        self.bound: dict[str, float] = {}
        # with `keep`: each pod as first seen bound, and when (a recording's pod events)
        self.kept: list[tuple[float, Json]] | None = [] if keep else None
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
                self.bound[name] = seen = time.monotonic()
                if self.kept is not None:
                    self.kept.append((seen, {"pod": obj}))


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


GPU_NODE_SHARE = 0.10  # enough GPUs for the pods that ask for them (10 %, 1 to 4 each)
GPUS_PER_NODE = "8"
RUNTIME_CLASS = "kata"


def create_nodes(admin: KubeClient, count: int) -> None:
    zones = ("eu-west-1a", "eu-west-1b", "eu-west-1c")

    def one(i: int) -> None:
        labels = {"topology.kubernetes.io/zone": zones[i % 3]}
        if i % 10 < 3:
            labels["lifecycle"] = "spot"  # 30 %, as in the bench/ workload
        else:
            labels["lifecycle"] = "on-demand"
        gpu = i % round(1 / GPU_NODE_SHARE) == 9
        if gpu:
            labels[GPU_LABEL] = "true"
        manifest = fake_node(f"bench-{i:04d}", cpu="8", memory="32Gi", labels=labels)
        if gpu:
            for resources in (manifest["status"]["capacity"], manifest["status"]["allocatable"]):
                resources[GPU_RESOURCE] = GPUS_PER_NODE
        admin.create_fake_node(manifest)

    _parallel(count, one)
    # the pods with an overhead name this RuntimeClass; admission copies its overhead in
    admin.create(
        "/apis/node.k8s.io/v1/runtimeclasses",
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": RUNTIME_CLASS},
            "handler": RUNTIME_CLASS,
            "overhead": {"podFixed": {"cpu": "250m", "memory": "160Mi"}},
        },
    )


def pod_manifest(shape: Json, name: str, scheduler: str) -> Json:
    """A pending pod of `bench.pods` as a user creates it: its labels, annotations,
    containers, init containers and RuntimeClass (whose overhead admission fills in)."""
    meta = shape["metadata"]
    spec = shape["spec"]

    def container(c: Json) -> Json:
        return {"name": c["name"], "image": "e2e.invalid/app:1", "resources": c["resources"]}

    out: Json = {
        "schedulerName": scheduler,
        "automountServiceAccountToken": False,
        "containers": [container(c) for c in spec["containers"]],
    }
    if spec.get("initContainers"):
        out["initContainers"] = [container(c) for c in spec["initContainers"]]
    if spec.get("runtimeClassName"):
        out["runtimeClassName"] = RUNTIME_CLASS
    metadata: Json = {"name": name, "labels": {**meta.get("labels", {}), "app": "bench"}}
    if meta.get("annotations"):
        metadata["annotations"] = meta["annotations"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": out}


def create_pods(admin: KubeClient, namespace: str, scheduler: str, count: int) -> None:
    # the same shapes in every run, so the runs compare
    shapes = pending_pods(count)

    def one(i: int) -> None:
        admin.create(
            f"/api/v1/namespaces/{namespace}/pods",
            pod_manifest(shapes[i], f"p-{i:04d}", scheduler),
        )

    _parallel(count, one)


class GoExtender:
    """The Go baseline extender of `python -m bench`, serving a snapshot of the Nodes (the
    benchmark policy reads nothing of the pods, and the nodes do not change)."""

    def __init__(self, snapshot: Path, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.snapshot = snapshot
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30) -> None:
        argv = [str(targets.GO_BINARY), "-listen", f"127.0.0.1:{self.port}"]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(  # its own group: its CPU time is counted alone
                [*argv, "-snapshot", str(self.snapshot)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/healthz")
                if connection.getresponse().status == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise SystemExit(f"the Go extender did not start (see {self.log})")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)


def write_node_snapshot(admin: KubeClient, path: Path) -> Path:
    items = admin.get("/api/v1/nodes")["items"]
    path.write_text(json.dumps({"kind": "List", "items": [{**n, "kind": "Node"} for n in items]}))
    return path


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


# kube-scheduler's own histograms: mean milliseconds per pod of each phase
SCHEDULER_PHASES = {
    "attempt": ("scheduler_scheduling_attempt_duration_seconds", ""),
    "algorithm": ("scheduler_scheduling_algorithm_duration_seconds", ""),
    "bind": ("scheduler_framework_extension_point_duration_seconds", 'extension_point="Bind"'),
}


def scheduler_phases(admin: KubeClient, component: Any) -> dict[str, float]:
    """Where a scheduler's time per pod went, from its /metrics (read with the admin
    token: the scheduler delegates the check to the API server)."""
    port = next(int(a.split("=", 1)[1]) for a in component.argv if a.startswith("--secure-port="))
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=admin.context, timeout=10)
    try:
        connection.request("GET", "/metrics", headers={"Authorization": f"Bearer {admin.token}"})
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    out: dict[str, float] = {}
    for phase, (name, selector) in SCHEDULER_PHASES.items():
        totals = {"_sum": 0.0, "_count": 0.0}
        for line in text.splitlines():
            for suffix in totals:
                if line.startswith(name + suffix) and selector in line:
                    totals[suffix] += float(line.rsplit(" ", 1)[1])
        if totals["_count"]:
            out[phase] = round(1000 * totals["_sum"] / totals["_count"], 2)
    return out


class Profiler:
    """py-spy sampling the extender's processes while the scheduler runs (only the
    threads holding the GIL: where its CPU goes), written as collapsed stacks."""

    def __init__(self, pid: int, output: Path) -> None:
        self.output = output
        beside = Path(sys.executable).parent / "py-spy"  # installed in the same venv
        spy = shutil.which("py-spy") or (str(beside) if beside.exists() else None)
        if spy is None:
            raise SystemExit("--profile needs py-spy (pip install py-spy)")
        self.process = subprocess.Popen(
            [
                spy,
                "record",
                "--pid",
                str(pid),
                "--subprocesses",
                "--gil",
                "--nonblocking",
                "--rate",
                "250",
                "--format",
                "raw",
                "--output",
                str(output),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)
        print(f"profile of the extender: {self.output}", flush=True)


def scheduler_name_of(label: str) -> str:
    """The schedulerName of a run's pods (and what an extender that binds them binds for)."""
    slug = "-".join("".join(c if c.isalnum() else " " for c in label.lower()).split())
    return f"bench-{slug}"


def run_once(
    plane: ControlPlane,
    admin: KubeClient,
    label: str,
    config: str,
    pods: int,
    timeout: float,
    extender: Extender | GoExtender | None = None,
    profile: Path | None = None,
    recorder: tuple[RecordingProxy, Path] | None = None,
) -> RunResult:
    scheduler_name = scheduler_name_of(label)
    namespace = f"{scheduler_name}-{int(time.time())}"
    admin.create_namespace(namespace)
    document = yaml.safe_load(config)
    document["profiles"] = [
        {**p, "schedulerName": scheduler_name} for p in document.get("profiles") or [{}]
    ]
    document["clientConnection"] = dict(CLIENT_CONNECTION)
    create_pods(admin, namespace, scheduler_name, pods)
    watch = BindWatch(admin, namespace, keep=recorder is not None)
    watch.start()
    groups = {
        "kube-apiserver": plane.components["kube-apiserver"],
        "etcd": plane.components["etcd"],
    }
    pids = {name: c.process.pid for name, c in groups.items() if c.process}
    if isinstance(extender, Extender) and extender.component.process:
        pids["extender"] = extender.component.process.pid
    elif isinstance(extender, GoExtender) and extender.process:
        pids["extender"] = extender.process.pid
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    profiler = None
    if profile is not None and isinstance(extender, Extender) and "extender" in pids:
        profiler = Profiler(pids["extender"], profile)
    started = time.monotonic()
    scheduler = plane.start_scheduler(yaml.safe_dump(document), name=scheduler_name)
    try:
        if not watch.wait(pods, timeout):
            raise SystemExit(f"{label}: only {len(watch.bound)} of {pods} pods bound in time")
        assert scheduler.process is not None
        pids["kube-scheduler"] = scheduler.process.pid
        before["kube-scheduler"] = 0.0
        cpu = {
            name: round(cpu_seconds(pid) - before.get(name, 0.0), 2) for name, pid in pids.items()
        }
        phases = scheduler_phases(admin, scheduler)
    finally:
        if profiler is not None:
            profiler.stop()
        watch.stop()
        plane.stop_component(scheduler_name)
    times = sorted(watch.bound.values())
    result = RunResult(
        scheduler=label,
        pods=pods,
        seconds=times[-1] - times[0],
        startup_seconds=times[0] - started,
        cpu_seconds=cpu,
        extender_ms=_verb_means(extender) if isinstance(extender, Extender) else {},
        scheduler_ms=phases,
    )
    if recorder is not None and watch.kept is not None:
        proxy, path = recorder
        nodes = admin.get("/api/v1/nodes")["items"]
        merge(proxy.calls, watch.kept, nodes).write(path)
        print(f"recorded {len(proxy.calls)} calls and {len(watch.kept)} pods: {path}")
    admin.request(
        "DELETE", f"/api/v1/namespaces/{namespace}/pods", query={"gracePeriodSeconds": "0"}
    )
    return result


# --------------------------------------------------------------------------- report

STOCK = "stock"


@dataclass(frozen=True)
class Variant:
    policies: str  # "rules" (rules/) or "bench" (bench/policy.py)
    bind: bool = False  # the extender binds (`policyext config --bind`), or the scheduler
    go: bool = False  # the Go baseline extender instead of policyext


GO = "Go extender, bench policy"
HEADLINE = "policyext, bench policy"
VARIANTS: dict[str, Variant] = {
    GO: Variant("bench", go=True),
    HEADLINE: Variant("bench"),
    "policyext, bench policy, --bind": Variant("bench", bind=True),
    "policyext, rules/": Variant("rules"),
}
POLICIES = {
    "rules": "the example policies of `rules/`",
    "bench": "the benchmark policy of `bench/policy.py`",
}


def render(results: Sequence[RunResult], settings: Json, machine: dict[str, str]) -> str:
    out: list[str] = []
    add = out.append
    add("# Scheduler throughput with and without policyext\n")
    add(
        f"Generated by `python -m bench.throughput` (`make bench-throughput`) on"
        f" {settings['date']}. Rerun it rather than edit this page.\n"
    )
    workers, threads = settings["workers"], settings["threads"]
    setup = [
        f"kube-scheduler {KUBERNETES_VERSION} schedules {settings['pods']:,} pods onto",
        f"{settings['nodes']} fake Nodes of one real etcd and kube-apiserver, all on the",
        "machine below together with the extender and the benchmark itself. Per round (the",
        "order of the runs turns by one from round to round, so that no run always follows",
        "the same other: a run leaves the API server and etcd busier for a moment): the",
        "stock scheduler; one calling the Go baseline extender of `python -m bench`",
        "(`bench/go-extender/`, the benchmark policy compiled in, its nodes from a snapshot):",
        "what any extender costs here; and ones calling policyext as `policyext config`",
        "configures them (filter, prioritize and preempt, the scheduler binding;",
        "`nodeCacheCapable: true`), serving",
        f"{POLICIES['bench']}, the same with `--bind` (policyext binds), and",
        f"{POLICIES['rules']}; policyext with `--workers {workers} --threads {threads}`,",
        "as the `policyext` identity with the chart's RBAC, watching Nodes and Pods. The pods",
        "are the varied pods of `bench/pods.py` (the same shapes in every run: CPU from 100m",
        "to 4 cores in mixed formats, a third `critical`, a preferred zone or none, 10 %",
        "asking for GPUs, init containers, a RuntimeClass overhead; no two alike in what the",
        "policy reads of them, so no reply memo answers one from another); 30 % of the nodes",
        f"are spot nodes, {GPU_NODE_SHARE:.0%} GPU nodes. The rate counts from",
        "the first binding to the last, as a watch sees them (not the scheduler's start nor",
        "the pods' creation); the client rate limit of every scheduler is raised to",
        f"{CLIENT_CONNECTION['qps']} QPS. *Extender CPU ms per pod*: the user and system time",
        "of the extender's processes (from /proc/<pid>/stat, before and after the run)",
        "divided by the pods. The Go extender reads its nodes from a snapshot taken before",
        "the run and keeps no pod watch (its pod cache is empty: the benchmark policy's",
        "`nodeInfo.free` is then the allocatable CPU), so its CPU is a lower bound for an",
        "informer-fed extender.\n",
    ]
    add(" ".join(setup))
    add("## Machine\n")
    add("| CPU | cores | OS | Python | load average at start |\n|---|---|---|---|---|")
    m = machine
    add(f"| {m['cpu']} | {m['cores']} | {m['os']} | {m['python']} | {m.get('load', '?')} |\n")
    add("## Results\n")
    add(
        "| round | scheduler | pods/s | seconds | ratio to stock | CPU s: scheduler | apiserver"
        " | etcd | extender | extender CPU ms per pod | ms per call in policyext"
        " | ms per pod in the scheduler |\n" + "|---" * 12 + "|"
    )
    stock_by_round = {r.round: r for r in results if r.scheduler == STOCK}
    for r in results:
        stock = stock_by_round.get(r.round)
        ratio = r.pods_per_second / stock.pods_per_second if stock and stock.pods_per_second else 0
        c = r.cpu_seconds
        calls = ", ".join(f"{v} {ms:.1f}" for v, ms in sorted(r.extender_ms.items()))
        phases = ", ".join(f"{p} {ms:.1f}" for p, ms in r.scheduler_ms.items())
        per_pod = r.extender_ms_per_pod
        add(
            f"| {r.round} | {r.scheduler} | {r.pods_per_second:.0f} | {r.seconds:.2f}"
            f" | {ratio:.2f} | {c.get('kube-scheduler', 0):.1f} | {c.get('kube-apiserver', 0):.1f}"
            f" | {c.get('etcd', 0):.1f} | {c.get('extender', '')}"
            f" | {'' if per_pod is None else f'{per_pod:.2f}'} | {calls} | {phases} |"
        )
    add("")
    stock_rate = statistics.median(r.pods_per_second for r in results if r.scheduler == STOCK)
    lines = [f"- stock kube-scheduler: **{stock_rate:.0f} pods/s**"]
    medians = {
        label: statistics.median(r.pods_per_second for r in results if r.scheduler == label)
        for label in VARIANTS
        if any(r.scheduler == label for r in results)
    }
    go_rate = medians.get(GO)
    cpu_per_pod = {
        label: statistics.median(
            ms
            for r in results
            if r.scheduler == label and (ms := r.extender_ms_per_pod) is not None
        )
        for label in medians
        if any(r.scheduler == label and r.extender_ms_per_pod is not None for r in results)
    }
    go_cpu = cpu_per_pod.get(GO)
    for label, rate in medians.items():
        line = (
            f"- {label}: **{rate:.0f} pods/s**, the extender costs"
            f" **{1 - rate / stock_rate:.0%}** of the scheduler's throughput"
        )
        if go_rate and label != GO:
            line += f" ({rate / go_rate:.2f}x the Go extender's rate"
            paired = paired_ratio(results, label, GO)
            if paired is not None:
                line += f"; {paired:.2f}x in the median of the rounds, each against its own"
            line += ")"
        cpu = cpu_per_pod.get(label)
        if cpu is not None:
            line += f"; extender CPU **{cpu:.2f} ms per pod**"
            if go_cpu and label != GO:
                line += f" ({cpu / go_cpu:.1f}x the Go extender's {go_cpu:.2f} ms)"
        lines.append(line)
    add("Medians over the rounds (the goal: the extender costs at most 20 %):\n")
    add("\n".join(lines) + "\n")
    add("## Reading it\n")
    add(
        "kube-scheduler calls filter and prioritize inside its scheduling cycle, one pod at a"
        " time, so their round trips add to every pod's time; binding (the scheduler's own,"
        " or ours with `--bind`) runs beside the next pods' cycles. *algorithm* is the"
        " scheduler's own measure of filtering and scoring per pod, extender calls included:"
        " its growth over the stock run is what the extender costs. The stock scheduler"
        " already keeps both cores busy (its CPU seconds, the API server's and etcd's add up"
        " to about twice the run's length), so every CPU millisecond an extender adds per pod"
        " (its own, and the scheduler's encoding and decoding of the calls) comes out of the"
        " scheduler's rate: the Go extender, which spends almost nothing on the policy, shows"
        " what the protocol alone costs on this machine, and the gap between it and policyext"
        " is what policyext itself costs. *attempt* (a scheduling cycle plus its binding) and"
        " *bind* grow with the binds in flight when the API server is the bottleneck, which is"
        " why the stock scheduler's are long: they do not limit the rate. The machine's speed"
        " drifts over minutes, the Go extender's and policyext's rates alike (each moved by"
        " half between rounds of one run on the machine of these pages): besides the ratio of"
        " the medians, each policyext line gives the median of its rounds' own ratios, each"
        " run against the Go extender's of the same round, a minute apart.\n"
    )
    add(settings.get("notes", ""))
    return "\n".join(out).rstrip() + "\n"


def paired_ratio(results: Sequence[RunResult], label: str, other: str) -> float | None:
    """The median over the rounds of `label`'s rate divided by `other`'s in the same round
    (None without a round that ran both). The machine's speed drifts over minutes (the same
    scheduler's rate moved by half between rounds of one run): a ratio taken within a round
    compares runs made a minute apart, where the ratio of the two medians may compare a
    fast minute of one with a slow minute of the other."""
    rates: dict[int, dict[str, float]] = {}
    for r in results:
        rates.setdefault(r.round, {})[r.scheduler] = r.pods_per_second
    ratios = [by[label] / by[other] for by in rates.values() if label in by and by.get(other)]
    return statistics.median(ratios) if ratios else None


# --------------------------------------------------------------------------- main


def _bench_rules(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "benchmark.json").write_text(json.dumps(policy.scheduling_policy()))
    return folder


def _run_variant(
    plane: ControlPlane,
    admin: KubeClient,
    label: str,
    args: argparse.Namespace,
    kubeconfig: Path,
    rules: dict[str, Path],
    snapshot: Path,
) -> RunResult:
    if label == STOCK:
        config = f"profiles:\n  - schedulerName: bench-{label}\n"
        return run_once(plane, admin, label, config, args.pods, args.timeout)
    # a fresh extender per run: its metrics count this run alone, and an idle one would
    # still spend CPU on the other runs' watch events
    variant = VARIANTS[label]
    extender: Extender | GoExtender
    if variant.go:
        extender = GoExtender(snapshot, plane.logdir / "go-extender.log")
    else:
        extender = Extender(
            plane,
            kubeconfig,
            [rules[variant.policies]],
            args=("--threads", str(args.threads), "--workers", str(args.workers)),
            binds_for=scheduler_name_of(label) if variant.bind else None,
        )
    extender.start(timeout=60)
    # recording: kube-scheduler calls a proxy that notes each call on its way to policyext
    proxy = RecordingProxy(extender.url).start() if args.record else None
    try:
        url = proxy.url if proxy is not None else extender.url
        config = scheduler_config(url, "bench", bind=variant.bind)
        recorder = (proxy, args.record) if proxy is not None else None
        return run_once(
            plane, admin, label, config, args.pods, args.timeout, extender, args.profile, recorder
        )
    finally:
        if proxy is not None:
            proxy.stop()
        extender.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.throughput", description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=4, help="the extender's --threads")
    parser.add_argument("--workers", type=int, default=1, help="the extender's --workers")
    parser.add_argument("--timeout", type=float, default=300, help="per run, seconds")
    parser.add_argument("--no-write", action="store_true", help="print, do not write docs")
    parser.add_argument("--notes", default="", help="a paragraph appended to the page")
    parser.add_argument(
        "--only",
        choices=(STOCK, *VARIANTS),
        help="one scheduler (e.g. to profile the extender); implies --no-write",
    )
    parser.add_argument(
        "--render", metavar="JSON", help="only write the page again from a saved run's results"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="FILE",
        help="with --only: sample policyext with py-spy (installed apart) into FILE",
    )
    parser.add_argument(
        "--record",
        type=Path,
        metavar="FILE",
        help="with --only and one round of a policyext run: record the calls and the bound pods"
        " into FILE, for `python -m bench.replay` (bench/recording.py)",
    )
    args = parser.parse_args(argv)
    if args.profile and not args.only:
        parser.error("--profile goes with --only (the profiler costs CPU the others would see)")
    if args.record and (
        not args.only or args.only not in VARIANTS or VARIANTS[args.only].go or args.rounds != 1
    ):
        parser.error("--record goes with --only, a policyext run, and --rounds 1")
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        runs = [RunResult(**run) for run in saved["runs"]]
        DOCS_PAGE.write_text(render(runs, saved["settings"], saved["machine"]))
        return 0
    # stopped from outside: unwind, so the control plane stops and its folder goes
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
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
        rules = {"rules": RULES, "bench": _bench_rules(Path(work) / "bench-rules")}
        print(f"creating {args.nodes} nodes", flush=True)
        create_nodes(admin, args.nodes)
        snapshot = write_node_snapshot(admin, Path(work) / "nodes.json")
        if not args.only or VARIANTS.get(args.only, Variant("")).go:
            targets.build_go_extender()
        runs = (STOCK, *VARIANTS)
        for round_ in range(1, args.rounds + 1):
            turn = (round_ - 1) % len(runs)
            for label in runs[turn:] + runs[:turn]:
                if args.only and label != args.only:
                    continue
                result = _run_variant(plane, admin, label, args, kubeconfig, rules, snapshot)
                result.round = round_
                results.append(result)
                print(
                    f"round {round_} {label}: {result.pods_per_second:.0f} pods/s"
                    f" ({result.seconds:.2f} s) cpu {result.cpu_seconds}"
                    f" extender ms {result.extender_ms} scheduler ms {result.scheduler_ms}",
                    flush=True,
                )
    if args.only:
        return 0
    settings = {
        "date": date,
        "nodes": args.nodes,
        "pods": args.pods,
        "threads": args.threads,
        "workers": args.workers,
        "notes": args.notes,
    }
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
