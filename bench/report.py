"""Writing the results: JSON for machines (bench/results/), Markdown for people (docs/)."""

from __future__ import annotations

import json
import os
import platform
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench import pods, policy, workload
from bench.celpy_eval import RuleTimings, Timing
from bench.distinct import Decision, DistinctSeries
from bench.engine_eval import EngineTiming
from bench.http_client import Measurement
from bench.targets import go_version


def describe_machine() -> dict[str, str]:
    return {
        "cpu": _cpu_model(),
        "cores": str(os.cpu_count() or "?"),
        "os": f"{platform.system()} {platform.release()}",
        "python": describe_python(),
        "go": go_version() or "not installed",
        # other work on the machine skews the figures: say how busy it was
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def describe_python() -> str:
    """The interpreter (policyext's servers run on it too), with what it says of its build:
    the same code runs faster on an optimised build (profile-guided and link-time optimised,
    libpython linked in) than on a plain one with a shared libpython."""
    config = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    build = [flag for option, flag in _BUILD_OPTIONS if option in config]
    try:
        shared = "libpython" in Path("/proc/self/maps").read_text()
    except OSError:
        shared = bool(sysconfig.get_config_var("Py_ENABLE_SHARED"))
    build.append("shared libpython" if shared else "libpython linked in")
    name = f"{platform.python_implementation()} {platform.python_version()}"
    return f"{name} ({', '.join(build)})"


# configure options that say an interpreter was optimised (the official images pass them; a
# distribution may optimise its own build without them showing here, as Debian's does)
_BUILD_OPTIONS: Final = (("--enable-optimizations", "PGO"), ("--with-lto", "LTO"))


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass
class TargetResult:
    name: str
    distinct: list[DistinctSeries] = field(default_factory=list)  # pods never seen before
    measurements: list[Measurement] = field(default_factory=list)  # one request repeated
    note: str = ""  # why it was not measured, when it was not
    memory_mb: dict[int, float] = field(default_factory=dict)  # resident, by nodes loaded
    # what the server decided for each measured pod, by (nodes, mode): for the cross-check
    decisions: dict[tuple[int, str], list[Decision]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "note": self.note,
            "memory_mb": self.memory_mb,
            "distinct": [d.as_json() for d in self.distinct],
            "measurements": [m.as_json() for m in self.measurements],
        }


@dataclass
class Run:
    date: str
    settings: dict[str, Any]
    workload: dict[str, Any]
    targets: list[TargetResult]
    cel: list[RuleTimings]
    engine: list[EngineTiming] = field(default_factory=list)
    # where the servers decided differently for the same pods (empty: alike everywhere)
    mismatches: list[str] = field(default_factory=list)
    machine: dict[str, str] = field(default_factory=describe_machine)

    def as_json(self) -> dict[str, Any]:
        return {
            "date": self.date,
            "machine": self.machine,
            "settings": self.settings,
            "workload": self.workload,
            "http": [t.as_json() for t in self.targets],
            "mismatches": self.mismatches,
            "cel": [r.as_json() for r in self.cel],
            "engine": [e.as_json() for e in self.engine],
        }


def write_json(run: Run, directory: Path, stamp: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(run.as_json(), indent=2)
    path = directory / f"results-{stamp}.json"
    path.write_text(text)
    (directory / "latest.json").write_text(text)
    return path


# --- Markdown --------------------------------------------------------------------------

_MODE_NAMES = {"full": "NodeList", "names": "NodeNames"}


def _ms(value: float) -> str:
    # three significant figures: the noise is larger than that anyway
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _us(timing: Timing) -> str:
    return "n/a" if timing.median_us is None else f"{timing.median_us:.1f}"


def _size(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e6 else f"{n / 1e3:.1f} KB"


def render_markdown(run: Run) -> str:
    out: list[str] = []
    add = out.append
    add("# Benchmarks\n")
    add(
        f"Generated by `python -m bench` (`make bench`) on {run.date}. Rerun it rather than edit"
        " this page: every figure below comes from one run on one machine, so the ratios compare"
        " servers measured side by side.\n"
    )
    add(
        "kube-scheduler's throughput with and without policyext (a real control plane, 500"
        " nodes, 1,000 pods) is measured separately: [benchmarks-throughput.md]"
        "(benchmarks-throughput.md), by `python -m bench.throughput`. The live caches at SIG"
        " Scalability's envelope (5,000 nodes and 150,000 pods, in process and through a real"
        " API server beside kube-scheduler: time to ready, memory, watch events, the filter at"
        " that size) are measured separately too: [benchmarks-scale.md](benchmarks-scale.md),"
        " by `make bench-scale`.\n"
    )
    add("## Machine\n")
    m = run.machine
    add("| CPU | cores | OS | Python | Go | load average at start |\n|---|---|---|---|---|---|")
    add(
        f"| {m['cpu']} | {m['cores']} | {m['os']} | {m['python']} | {m['go']}"
        f" | {m.get('load', '?')} |\n"
    )
    add(
        "*Python*: the interpreter the benchmark ran on, and policyext's servers with it (that of"
        " the virtual environment: `make bench PYTHON=... VENV=...` picks another), with what it"
        " says of its build. The image's base, `python:3.11-slim`, is built with profile-guided"
        " and link-time optimisation; a plain build (no optimisation, a shared libpython) runs"
        " the same calls about a tenth slower: docs/performance.md has both measured side by"
        " side.\n"
    )
    out.extend(_workload_section(run))
    out.extend(_distinct_section(run))
    out.extend(_http_section(run))
    out.extend(_engine_section(run))
    out.extend(_cel_section(run))
    out.extend(_method_section())
    return "\n".join(out)


def _workload_section(run: Run) -> list[str]:
    w = run.workload
    lines = [
        "## Workload\n",
        f"Generated by `bench/workload.py` (seed {w['seed']}): EKS-like Nodes as the scheduler"
        f" sends them, {w['node_kb']:.1f} KB of JSON each on average (15 labels, 4 annotations,"
        " taints, capacity and allocatable, 4 conditions, addresses, nodeInfo, 8 to 20 images),"
        f" and {w['pods_per_node']:.1f} Pods bound to each node ({w['terminated_pods']:,} of the"
        f" {w['bound_pods']:,} Succeeded or Failed, which must not count; some with an init"
        " container or a RuntimeClass overhead), so `nodeInfo.requested` and `nodeInfo.free`"
        " are real. Shares of the nodes:"
        f" {workload.SPOT_FRACTION:.0%} spot, {workload.NOT_READY_FRACTION:.0%} not Ready,"
        f" {workload.GPU_FRACTION:.0%} GPU nodes (tainted), {workload.CORDONED_FRACTION:.0%}"
        f" cordoned, {workload.SMALL_FRACTION:.0%} too small for most pods.\n",
        "The pods to schedule (`bench/pods.py`, pods never seen before): CPU from 100m to 4"
        ' cores written as people write it ("250m", "0.5", "2"), memory as "512Mi" or "1G",'
        f" {pods.CRITICAL_SHARE:.0%} `critical`, the preferred-zone annotation present, absent"
        f" or naming a zone without nodes, {pods.GPU_SHARE:.0%} asking for GPUs,"
        f" {pods.INIT_SHARE:.0%} with an init container, {pods.OVERHEAD_SHARE:.0%} with a"
        " RuntimeClass overhead. No two pods share what the policy reads of them (effective"
        " CPU, critical, GPU, preferred zone), so no server can answer one from what it kept"
        f" of another. The repeated-request table uses one pod (two containers, 500m and 100m"
        f' CPU, `critical: "true"`, preferring {workload.PREFERRED_ZONE}), which passes the'
        f" filters on {w['feasible']} of {w['nodes']} nodes.\n",
        "| request body | size |\n|---|---|",
    ]
    for label, size in w["bodies"].items():
        lines.append(f"| {label} | {_size(size)} |")
    filters = sum(r.kind == "filter" for r in policy.RULES)
    lines += [
        "",
        f"The policy, {filters} filters and {len(policy.RULES) - filters} scores"
        " (`bench/policy.py`; hard-coded in `bench/go-extender/policy.go`):\n",
        "| rule | kind | weight | CEL |\n|---|---|---|---|",
    ]
    for r in policy.RULES:
        weight = str(r.weight) if r.kind == "score" else ""
        lines.append(f"| {r.name} | {r.kind} | {weight} | `{r.expression}` |")
    lines.append(
        "\nScores are clamped to 0..10; a node's score is ⌊Σ w·s / Σ w + 0.5⌋, an integer 0..10.\n"
    )
    return lines


def _distinct_section(run: Run) -> list[str]:
    measured = [t for t in run.targets if t.distinct]
    if not measured:
        return []
    s = run.settings
    baseline = measured[0]
    lines = [
        "## Pods never seen before (the headline)\n",
        "kube-scheduler calls filter and then prioritize once per pod, and almost never with"
        " the same pod twice while nothing changed. Each measured pod is sent once, to a"
        f" server that has answered only {s['warmup_pods']} other pods before (the warm-up):"
        " filter with the nodes kube-scheduler would send for it, then prioritize with the"
        " nodes that passed, in the order the filter reply gave them. Between the two the"
        " client checks the filter reply, where kube-scheduler runs its own score plugins:"
        " policyext works out the prioritize reply it expects in that time (docs/"
        'performance.md, "prioritize worked out while the scheduler scores"), so its'
        " prioritize figure is mostly the round trip, and the scoring, the same work as"
        " before, is done off both calls' latency (its CPU counts in the throughput"
        " benchmark's CPU per pod). kube-scheduler does not"
        " send every node: it walks its node list from where the last pod's walk stopped,"
        " round the list, until its own plugins have passed its share of the cluster (the"
        " default, adaptive `percentageOfNodesToScore`: 230 of 500 nodes, 500 of 5,000), and"
        " it sends those in the order its parallel filters finished them, a different order"
        " every time. Here every node passes the scheduler's own plugins, and the order is a"
        " shuffle (the same for every server)."
        " The servers run side by side and take turns pod by pod (the first of each turn"
        " rotating), so that a change in the machine's speed during the run touches each"
        " alike. One keep-alive HTTP/1.1 connection per server, one call at a time, the"
        " latency as the client sees it (request sent to last reply byte). *NodeNames*:"
        " `nodeCacheCapable: true`, the server reads its own node and pod cache (loaded from"
        " the snapshot); *NodeList*: the request carries the nodes. Medians (p90 in"
        " brackets) over the pods;"
        f" *vs {baseline.name}*: the median divided by its median (below 1: faster).\n",
    ]
    others = measured[1:]
    header = ["nodes", "mode", "verb", "pods"] + [f"{t.name} ms" for t in measured]
    header += [f"{t.name} vs {baseline.name}" for t in others]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|---" * len(header) + "|")
    by_target = [{(d.nodes, d.mode, d.verb): d for d in t.distinct} for t in measured]
    for key, base in by_target[0].items():
        nodes, mode, verb = key
        row = [f"{nodes:,}", _MODE_NAMES[mode], verb, str(base.latency.count)]
        for series in by_target:
            d = series.get(key)
            row.append(f"{_ms(d.latency.p50)} ({_ms(d.latency.p90)})" if d else "n/a")
        for series in by_target[1:]:
            d = series.get(key)
            row.append(f"**{d.latency.p50 / base.latency.p50:.2f}x**" if d else "n/a")
        lines.append("| " + " | ".join(row) + " |")
    pods_checked = sum(len(v) for v in baseline.decisions.values())
    if run.mismatches:
        lines.append("\n**The servers decided differently:**\n")
        lines += [f"- {m}" for m in run.mismatches]
    else:
        lines.append(
            f"\nDecisions: every server's feasible nodes, failed nodes and scores were the same"
            f" as {baseline.name}'s and the reference's (`bench/policy.py`) on every node, for"
            f" each of the {pods_checked:,} pods measured (every cluster and mode).\n"
        )
    return lines


def _http_section(run: Run) -> list[str]:
    s = run.settings
    lines = [
        "## Repeated requests (the reply memo's case)\n",
        "**Not the headline**: one request sent again and again, the same bytes every time,"
        " which policyext's reply memo answers from the third on (a call repeated while no"
        " node changes; kube-scheduler's node lists differ from pod to pod, and in a live"
        " cluster every binding changes a node, so whole replies rarely repeat). Latency of"
        f" one call over {s['requests']} requests after"
        f" {s['warmup']} warm-up requests, one keep-alive HTTP/1.1 connection, one request at"
        " a time; prioritize gets every node. vs Go: p50 divided by the Go baseline's p50"
        " (below 1: faster).\n",
        "| server | nodes | mode | verb | p50 ms | p99 ms | min ms | vs Go | replies |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    baseline = {
        (m.nodes, m.mode, m.verb): m.latency.p50
        for m in (run.targets[0].measurements if run.targets else [])
    }
    for target in run.targets:
        if target.note:
            lines.append(f"| {target.name} | | | | | | | | not measured: {target.note} |")
        for m in target.measurements:
            base = baseline.get((m.nodes, m.mode, m.verb))
            ratio = f"{m.latency.p50 / base:.2f}" if base else "n/a"
            verdict = "correct" if not m.problems else "WRONG: " + "; ".join(m.problems)
            lines.append(
                f"| {target.name} | {m.nodes:,} | {_MODE_NAMES[m.mode]} | {m.verb} |"
                f" {_ms(m.latency.p50)} | {_ms(m.latency.p99)} | {_ms(m.latency.min)} | {ratio}"
                f" | {verdict} |"
            )
    lines += [
        "",
        "Resident memory of each server (all its processes) after the runs, with the"
        " snapshot's nodes and pods loaded:\n",
        "| server | nodes loaded | resident MiB |",
        "|---|---|---|",
    ]
    for target in run.targets:
        for nodes, mib in sorted(target.memory_mb.items()):
            lines.append(f"| {target.name} | {nodes:,} | {mib:.0f} |")
    lines.append("")
    return lines


def _engine_section(run: Run) -> list[str]:
    if not run.engine:
        return []
    lines = [
        "## The engine alone\n",
        "Median milliseconds of one `evaluate` call in process (no HTTP, no JSON) for the"
        " repeated-request pod. *Cached*: what the rules read of each node version is kept"
        " from earlier requests (any request after the first that named the node in that"
        " version: what a NodeNames request costs, whatever the pod). *Uncached*: every node"
        " value evaluated again for every node, as for Nodes sent in a request that the node"
        " source does not hold in the versions sent: the worst case.\n",
        "| nodes | verb | cached ms | uncached ms |",
        "|---|---|---|---|",
    ]
    for e in run.engine:
        lines.append(f"| {e.nodes:,} | {e.verb} | {e.cached_ms:.2f} | {e.uncached_ms:.2f} |")
    lines.append("")
    return lines


def _cel_section(run: Run) -> list[str]:
    s = run.settings
    lines = [
        "## CEL evaluation\n",
        "Median microseconds to evaluate one rule for one (pod, node). *celpy*: the"
        f" `cel-python` interpreter, on {s['celpy_nodes']} nodes spread over the workload;"
        f" *policyext*: our engine, on all {run.workload['nodes']} nodes. *Same text* runs the"
        " rule's portable form (no optional fields, no Kubernetes libraries, which celpy does"
        " not parse) in both engines; *policy form* is the expression as written in the policy"
        " table above.\n",
        "| rule | celpy µs | policyext µs, same text | celpy / policyext"
        " | policyext µs, policy form |",
        "|---|---|---|---|---|",
    ]
    notes: list[str] = []

    def cell(t: Timing) -> str:
        text = _us(t)
        if t.mismatches:
            text += f" ({t.mismatches} WRONG)"
        if t.median_us is None and t.note:
            if t.note not in notes:
                notes.append(t.note)
            text += f" [{notes.index(t.note) + 1}]"
        return text

    for row in run.cel:
        a, b = row.celpy.median_us, row.ours_portable.median_us
        ratio = f"{a / b:.0f}×" if a is not None and b else "n/a"
        lines.append(
            f"| {row.rule} | {cell(row.celpy)} | {cell(row.ours_portable)} | {ratio} |"
            f" {cell(row.ours_policy)} |"
        )
    if notes:
        lines.append("")
        lines += [f"[{i}] {note}  " for i, note in enumerate(notes, 1)]
    lines.append("")
    return lines


def _method_section() -> list[str]:
    return [
        "## Method\n",
        "- The Go baseline (`bench/go-extender/`) is written as the classic extender samples are:"
        " `net/http`, `encoding/json`, typed structs of the extender/v1 and core/v1 types,"
        " quantities parsed while decoding (as `resource.Quantity` is), the pod's facts worked out"
        " once per request. In NodeNames mode it looks nodes up in a map loaded at start; in both"
        " modes it reads each node's requested CPU from a pod cache summed once at start (init"
        " containers and overhead counted as kube-scheduler counts them, Succeeded and Failed"
        " pods left out), as an informer-fed Go extender keeps it.",
        "- Every reply is checked against the reference verdicts of `bench/policy.py` (feasible"
        " set, failed nodes, integer scores; in NodeList mode the returned node objects must"
        " equal the ones sent), and each server's decisions for the new pods are compared with"
        " the Go baseline's node by node: a difference fails the run (exit status 1) and leaves"
        " this page as it was.",
        "- p50 is the median; p90 and p99 are nearest-rank percentiles. The client runs on the"
        " same machine as the server and its time (sending up to 2.8 MB, reading the reply) is"
        " included, as the scheduler's would be.",
        "- On a small shared machine other work slows some runs down (see the load average"
        " above): compare the servers within one run, and rerun before trusting a change of a"
        " few percent. The min column is the least disturbed call.",
        "- Raw figures: `bench/results/` (JSON, not in git).",
        "",
    ]
