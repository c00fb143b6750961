"""`python -m bench`: build, serve, measure, write docs/benchmarks.md and bench/results/.

One command rewrites the whole page. The headline is pods never seen before (`bench.
distinct`): each server gets the same pods, and the run fails loudly (exit status 1, the
page left as it was) unless every server decided alike on every node for every pod.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import policy
from bench.celpy_eval import RuleTimings, run_cel_benchmarks
from bench.distinct import Bodies, compare_decisions, measure_distinct
from bench.engine_eval import EngineTiming, run_engine_benchmarks
from bench.http_client import MODES, Mode, measure_server
from bench.pods import pending_pods
from bench.report import Run, TargetResult, render_markdown, write_json
from bench.stats import Summary
from bench.targets import (
    REPO_ROOT,
    CommandTarget,
    LaunchSpec,
    default_targets,
    free_port,
    tree_rss_mb,
)
from bench.workload import DEFAULT_SEED, Json, Workload, encode, full_args, generate, names_args
from bench.workload import write_snapshot as save_snapshot

RESULTS_DIR = REPO_ROOT / "bench" / "results"
DOCS_PAGE = REPO_ROOT / "docs" / "benchmarks.md"


@dataclass(frozen=True)
class Settings:
    requests: int
    warmup: int
    pods: int  # distinct pods measured in NodeNames mode
    list_pods: int  # distinct pods measured in NodeList mode, on the first cluster
    large_list_pods: int  # ... on the large cluster (0: not measured)
    warmup_pods: int  # distinct pods sent first, untimed
    nodes: int
    large_nodes: int  # 0: skip the large cluster
    celpy_nodes: int
    seed: int
    http: bool
    cel: bool
    docs: bool
    only: tuple[str, ...]


def parse_args(argv: Sequence[str]) -> Settings:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run of ~30 s (no docs)")
    parser.add_argument(
        "--pods", type=int, help="distinct pods measured, NodeNames mode (default 400)"
    )
    parser.add_argument(
        "--list-pods", type=int, help="distinct pods measured, NodeList mode (default 100)"
    )
    parser.add_argument(
        "--large-list-pods",
        type=int,
        help="distinct pods measured, NodeList mode, large cluster (default 20; 0: skip)",
    )
    parser.add_argument(
        "--warmup-pods", type=int, help="distinct pods sent first, untimed (default 20)"
    )
    parser.add_argument(
        "--requests", type=int, help="timed requests per repeated series (default 200)"
    )
    parser.add_argument("--warmup", type=int, help="untimed repeated requests first (default 20)")
    parser.add_argument("--nodes", type=int, default=500, help="nodes per request (default 500)")
    parser.add_argument(
        "--large-nodes", type=int, default=5000, help="cluster of the NodeNames-only run (0: skip)"
    )
    parser.add_argument("--celpy-nodes", type=int, help="nodes celpy is timed on (default 40)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--no-http", action="store_true", help="skip the extender round trips")
    parser.add_argument("--no-cel", action="store_true", help="skip the CEL micro-benchmark")
    parser.add_argument(
        "--docs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write docs/benchmarks.md (default: yes, except with --quick)",
    )
    parser.add_argument("--only", action="append", default=[], help="measure only this target")
    a = parser.parse_args(argv)
    return Settings(
        pods=a.pods or (20 if a.quick else 400),
        list_pods=a.list_pods or (5 if a.quick else 100),
        large_list_pods=a.large_list_pods
        if a.large_list_pods is not None
        else (0 if a.quick else 20),
        warmup_pods=a.warmup_pods if a.warmup_pods is not None else (3 if a.quick else 20),
        requests=a.requests or (20 if a.quick else 200),
        warmup=a.warmup if a.warmup is not None else (3 if a.quick else 20),
        nodes=a.nodes,
        large_nodes=a.large_nodes,
        celpy_nodes=a.celpy_nodes or (8 if a.quick else 40),
        seed=a.seed,
        http=not a.no_http,
        cel=not a.no_cel,
        docs=a.docs if a.docs is not None else not a.quick,
        only=tuple(a.only),
    )


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def describe(workloads: Sequence[Workload]) -> dict[str, Any]:
    main = workloads[0]
    verdicts = policy.Reference(main.nodes, main.pods).verdicts(main.pod)
    bodies = {}
    for w in workloads:
        n = len(w.nodes)
        if w is main:
            bodies[f"{n:,} nodes, NodeList of every node"] = len(encode(full_args(w)))
        bodies[f"{n:,} nodes, NodeNames of every node"] = len(encode(names_args(w)))
        sent = Bodies(w)
        bodies[f"{n:,} nodes, a new pod's filter ({sent.window_size:,} names)"] = len(
            sent.filter(main.pod, "names", sent.window(0))
        )
    return {
        "seed": main.seed,
        "nodes": len(main.nodes),
        "node_kb": statistics.fmean(len(encode(n)) for n in main.nodes) / 1000,
        "pods_per_node": len(main.pods) / len(main.nodes),
        "terminated_pods": sum(
            (p.get("status") or {}).get("phase") in policy.TERMINATED_PHASES for p in main.pods
        ),
        "bound_pods": len(main.pods),
        "feasible": len(verdicts.feasible),
        "bodies": bodies,
    }


@dataclass(frozen=True)
class Step:
    """What one server is asked on one cluster."""

    workload: Workload
    snapshot: Path
    bodies: Bodies
    reference: policy.Reference
    distinct: tuple[tuple[Mode, int], ...]  # (mode, pods measured)
    repeated: tuple[Mode, ...]  # modes of the repeated-request series


def measure_targets(
    targets: Sequence[CommandTarget],
    plan: Sequence[Step],
    settings: Settings,
    policy_file: Path,
    pending: Sequence[Json],
) -> list[TargetResult]:
    """Every target on every cluster of the plan. The servers of one cluster run side by
    side: the pods never seen before go to each in turn (`measure_distinct`), then each
    answers its repeated requests alone."""
    results = [TargetResult(t.name) for t in targets]
    ready: list[tuple[CommandTarget, TargetResult]] = []
    for target, result in zip(targets, results, strict=True):
        reason = target.unavailable()
        if reason:
            result.note = reason
            log(f"{target.name}: skipped ({reason})")
            continue
        try:
            if target.build:
                log(f"{target.name}: building")
                target.build()
        except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
            result.note = f"failed: {e}".splitlines()[0]
            log(f"{target.name}: {e}")
            continue
        ready.append((target, result))
    for step in plan:
        _measure_step(ready, step, settings, policy_file, pending)
    return results


def _measure_step(
    ready: Sequence[tuple[CommandTarget, TargetResult]],
    step: Step,
    settings: Settings,
    policy_file: Path,
    pending: Sequence[Json],
) -> None:
    w = step.workload
    nodes = len(w.nodes)
    warmup, measured = pending[: settings.warmup_pods], pending[settings.warmup_pods :]
    with contextlib.ExitStack() as stack:
        serving: dict[str, tuple[str, CommandTarget, TargetResult]] = {}
        for target, result in ready:
            if result.note:
                continue  # failed on an earlier cluster
            slug = target.name.lower().replace(" ", "-")
            spec = LaunchSpec(
                port=free_port(),
                snapshot=step.snapshot,
                policy=policy_file,
                log=RESULTS_DIR / f"{slug}-{nodes}.log",
            )
            try:
                url = stack.enter_context(target.serve(spec))
            except (OSError, RuntimeError) as e:
                # one target that cannot start must not cost the figures of the others
                result.note = f"failed: {e}".splitlines()[0]
                log(f"{target.name}: {e}")
                continue
            serving[target.name] = (url, target, result)
        log(f"{nodes} nodes: " + ", ".join(serving))
        # pods never seen before first, on servers that have answered only the warm-up;
        # each mode gets pods of its own, so none was seen by the same server before
        offset = 0
        urls = {name: url for name, (url, _, _) in serving.items()}
        for mode, count in step.distinct:
            pods = measured[offset : offset + count]
            offset += count
            runs = measure_distinct(urls, w, step.reference, step.bodies, mode, pods, warmup)
            for name, run in runs.items():
                _, _, result = serving[name]
                result.distinct += run.series
                result.decisions[(nodes, mode)] = run.decisions
                for d in run.series:
                    _log_series(name, "new pods", d.mode, d.verb, d.latency, d.problems)
        for name, (url, target, result) in serving.items():
            measured_again = measure_server(
                url, w, modes=step.repeated, requests=settings.requests, warmup=settings.warmup
            )
            result.measurements += measured_again
            for m in measured_again:
                _log_series(name, "repeated", m.mode, m.verb, m.latency, m.problems)
            result.memory_mb[nodes] = tree_rss_mb(target.last_pid[0])
            log(f"  {name}: resident memory {result.memory_mb[nodes]:.0f} MiB with {nodes} nodes")


def _log_series(
    name: str, kind: str, mode: str, verb: str, latency: Summary, problems: list[str]
) -> None:
    flag = "" if not problems else f"  WRONG ({len(problems)}): " + "; ".join(problems[:3])
    log(
        f"  {name[:14]:14} {kind:8} {mode:5} {verb:10} p50 {latency.p50:8.2f} ms"
        f"  p99 {latency.p99:8.2f} ms{flag}"
    )


def cross_check(targets: Sequence[TargetResult]) -> list[str]:
    """Where a server decided otherwise than the first (the Go baseline) for the same pods
    on the same cluster: empty when they decided alike on every node."""
    if not targets:
        return []
    baseline = targets[0]
    out: list[str] = []
    for other in targets[1:]:
        for key, decisions in other.decisions.items():
            theirs = baseline.decisions.get(key)
            if theirs is None:
                continue
            nodes, mode = key
            for difference in compare_decisions(decisions, theirs):
                out.append(f"{other.name} vs {baseline.name}, {nodes} nodes, {mode}: {difference}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    settings = parse_args(sys.argv[1:] if argv is None else argv)
    started = datetime.now(UTC)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")

    log(
        f"generating {settings.nodes} nodes"
        + (f" and {settings.large_nodes}" if settings.large_nodes else "")
    )
    workloads = [generate(settings.nodes, settings.seed)]
    if settings.large_nodes and settings.http:
        workloads.append(generate(settings.large_nodes, settings.seed))
    policy_file = RESULTS_DIR / "benchmark-policy.json"
    policy_file.parent.mkdir(parents=True, exist_ok=True)
    policy_file.write_bytes(encode(policy.scheduling_policy()))
    pending = pending_pods(
        settings.warmup_pods + settings.pods + max(settings.list_pods, settings.large_list_pods),
        settings.seed,
    )

    targets: list[TargetResult] = []
    if settings.http:
        plan: list[Step] = []
        for i, w in enumerate(workloads):
            snapshot = save_snapshot(w, RESULTS_DIR / f"snapshot-{len(w.nodes)}.json")
            list_pods = settings.list_pods if i == 0 else settings.large_list_pods
            distinct: tuple[tuple[Mode, int], ...] = (("names", settings.pods),)
            if list_pods:
                distinct += (("full", list_pods),)
            plan.append(
                Step(
                    workload=w,
                    snapshot=snapshot,
                    bodies=Bodies(w),
                    reference=policy.Reference(w.nodes, w.pods),
                    distinct=distinct,
                    # the scheduler never sends thousands of whole nodes twice alike
                    repeated=MODES if i == 0 else ("names",),
                )
            )
        chosen = [t for t in default_targets() if not settings.only or t.name in settings.only]
        targets = measure_targets(chosen, plan, settings, policy_file, pending)

    engine: list[EngineTiming] = []
    if settings.cel:
        log("engine in process: cached and uncached")
        engine = run_engine_benchmarks(workloads)
        for e in engine:
            log(
                f"  {e.nodes:5} nodes {e.verb:10} cached {e.cached_ms:7.2f} ms"
                f"  uncached {e.uncached_ms:7.2f} ms"
            )

    cel: list[RuleTimings] = []
    if settings.cel:
        log(f"CEL micro-benchmark (celpy on {settings.celpy_nodes} nodes)")
        cel = run_cel_benchmarks(workloads[0], celpy_nodes=settings.celpy_nodes)
        for row in cel:
            celpy, ours = _fmt(row.celpy.median_us), _fmt(row.ours_portable.median_us)
            policy_form = _fmt(row.ours_policy.median_us)
            log(f"  {row.rule:24} celpy {celpy}  ours {ours}  ours (policy form) {policy_form}")

    run = Run(
        date=started.strftime("%Y-%m-%d %H:%M UTC"),
        settings={
            "pods": settings.pods,
            "list_pods": settings.list_pods,
            "large_list_pods": settings.large_list_pods,
            "warmup_pods": settings.warmup_pods,
            "requests": settings.requests,
            "warmup": settings.warmup,
            "celpy_nodes": settings.celpy_nodes,
            "seed": settings.seed,
        },
        workload=describe(workloads),
        targets=targets,
        cel=cel,
        engine=engine,
        mismatches=cross_check(targets),
    )
    path = write_json(run, RESULTS_DIR, stamp)
    log(f"results: {path.relative_to(REPO_ROOT)}")
    wrong = [
        f"{t.name}: {p}"
        for t in targets
        for series in (*t.distinct, *t.measurements)
        for p in series.problems
    ]
    if wrong or run.mismatches:
        # loud: a fast answer that differs from the baseline's is no figure
        log("FAILED: the servers did not all answer correctly and alike; docs left as they were")
        for line in [*run.mismatches, *wrong][:40]:
            log(f"  {line}")
        return 1
    if settings.docs:
        DOCS_PAGE.parent.mkdir(parents=True, exist_ok=True)
        DOCS_PAGE.write_text(render_markdown(run))
        log(f"wrote {DOCS_PAGE.relative_to(REPO_ROOT)}")
    log(f"done in {(datetime.now(UTC) - started).total_seconds():.0f} s")
    return 0


def _fmt(us: float | None) -> str:
    return "     n/a" if us is None else f"{us:8.1f} µs"


if __name__ == "__main__":
    sys.exit(main())
