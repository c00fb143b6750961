"""`python -m bench`: build, serve, measure, write docs/benchmarks.md and bench/results/."""

from __future__ import annotations

import argparse
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
from bench.engine_eval import EngineTiming, run_engine_benchmarks
from bench.http_client import MODES, Measurement, Mode, measure_server
from bench.report import Run, TargetResult, render_markdown, write_json
from bench.targets import (
    REPO_ROOT,
    CommandTarget,
    LaunchSpec,
    default_targets,
    free_port,
    tree_rss_mb,
)
from bench.workload import DEFAULT_SEED, Workload, encode, full_args, generate, names_args
from bench.workload import write_snapshot as save_snapshot

RESULTS_DIR = REPO_ROOT / "bench" / "results"
DOCS_PAGE = REPO_ROOT / "docs" / "benchmarks.md"


@dataclass(frozen=True)
class Settings:
    requests: int
    warmup: int
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
    parser.add_argument("--requests", type=int, help="timed requests per series (default 200)")
    parser.add_argument("--warmup", type=int, help="untimed requests first (default 20)")
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
    verdicts = policy.evaluate(main.pod, main.nodes)
    bodies = {}
    for w in workloads:
        n = len(w.nodes)
        if w is main:
            bodies[f"{n:,} nodes, NodeList"] = len(encode(full_args(w)))
        bodies[f"{n:,} nodes, NodeNames"] = len(encode(names_args(w)))
    return {
        "seed": main.seed,
        "nodes": len(main.nodes),
        "node_kb": statistics.fmean(len(encode(n)) for n in main.nodes) / 1000,
        "pods_per_node": len(main.pods) / len(main.nodes),
        "feasible": len(verdicts.feasible),
        "bodies": bodies,
    }


def measure_target(
    target: CommandTarget,
    plan: Sequence[tuple[Workload, Path, tuple[Mode, ...]]],
    settings: Settings,
    policy_file: Path,
) -> TargetResult:
    result = TargetResult(target.name)
    reason = target.unavailable()
    if reason:
        result.note = reason
        log(f"{target.name}: skipped ({reason})")
        return result
    try:
        if target.build:
            log(f"{target.name}: building")
            target.build()
        for w, snapshot, modes in plan:
            result.measurements += _measure_workload(
                target, w, snapshot, modes, settings, policy_file, result.memory_mb
            )
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        # one target that cannot start must not cost the figures of the others
        result.note = f"failed: {e}".splitlines()[0]
        log(f"{target.name}: {e}")
    return result


def _measure_workload(
    target: CommandTarget,
    w: Workload,
    snapshot: Path,
    modes: tuple[Mode, ...],
    settings: Settings,
    policy_file: Path,
    memory: dict[int, float],
) -> list[Measurement]:
    slug = target.name.lower().replace(" ", "-")
    spec = LaunchSpec(
        port=free_port(),
        snapshot=snapshot,
        policy=policy_file,
        log=RESULTS_DIR / f"{slug}-{len(w.nodes)}.log",
    )
    log(f"{target.name}: {len(w.nodes)} nodes, modes {', '.join(modes)}")
    with target.serve(spec) as base_url:
        measured = measure_server(
            base_url, w, modes=modes, requests=settings.requests, warmup=settings.warmup
        )
        memory[len(w.nodes)] = tree_rss_mb(target.last_pid[0])
    log(f"  resident memory {memory[len(w.nodes)]:.0f} MiB with {len(w.nodes)} nodes loaded")
    for m in measured:
        flag = "" if not m.problems else "  WRONG: " + "; ".join(m.problems)
        p50, p99 = m.latency.p50, m.latency.p99
        log(f"  {m.mode:5} {m.verb:10} p50 {p50:8.2f} ms  p99 {p99:8.2f} ms{flag}")
    return measured


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

    targets: list[TargetResult] = []
    if settings.http:
        plan: list[tuple[Workload, Path, tuple[Mode, ...]]] = []
        for i, w in enumerate(workloads):
            snapshot = save_snapshot(w, RESULTS_DIR / f"snapshot-{len(w.nodes)}.json")
            # the scheduler never sends thousands of whole nodes (percentageOfNodesToScore)
            plan.append((w, snapshot, MODES if i == 0 else ("names",)))
        for target in default_targets():
            if settings.only and target.name not in settings.only:
                continue
            targets.append(measure_target(target, plan, settings, policy_file))

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
            "requests": settings.requests,
            "warmup": settings.warmup,
            "celpy_nodes": settings.celpy_nodes,
            "seed": settings.seed,
        },
        workload=describe(workloads),
        targets=targets,
        cel=cel,
        engine=engine,
    )
    path = write_json(run, RESULTS_DIR, stamp)
    log(f"results: {path.relative_to(REPO_ROOT)}")
    if settings.docs:
        DOCS_PAGE.parent.mkdir(parents=True, exist_ok=True)
        DOCS_PAGE.write_text(render_markdown(run))
        log(f"wrote {DOCS_PAGE.relative_to(REPO_ROOT)}")
    log(f"done in {(datetime.now(UTC) - started).total_seconds():.0f} s")
    wrong = any(m.problems for t in targets for m in t.measurements)
    return 1 if wrong else 0


def _fmt(us: float | None) -> str:
    return "     n/a" if us is None else f"{us:8.1f} µs"


if __name__ == "__main__":
    sys.exit(main())
