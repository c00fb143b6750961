"""The Go baseline, served and measured the way `python -m bench` does it."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bench import policy
from bench.distinct import Bodies, Decision, compare_decisions, measure_distinct
from bench.http_client import measure_server
from bench.pods import pending_pods
from bench.targets import (
    GO_BASELINE,
    GO_DIR,
    GO_ENV,
    POLICYEXT,
    LaunchSpec,
    build_go_extender,
    free_port,
)
from bench.workload import encode, generate, write_snapshot
from tests.unavailable import skip_or_fail


@pytest.fixture(scope="module")
def go() -> None:
    """Without Go: a skip with the reason, a failure under POLICYEXT_REQUIRE_ALL=1 (CI)."""
    if shutil.which("go") is None:
        skip_or_fail("the Go baseline needs the Go toolchain (go on PATH)")


@pytest.fixture(scope="module")
def built(go: None) -> None:
    build_go_extender()


def test_the_go_unit_tests_pass(go: None) -> None:
    run = subprocess.run(
        ["go", "test", "./..."],
        cwd=GO_DIR,
        env={**os.environ, **GO_ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("node_count", [40])
def test_the_go_baseline_answers_like_the_reference_in_both_modes(
    built: None, tmp_path: Path, node_count: int
) -> None:
    workload = generate(node_count)
    spec = LaunchSpec(
        port=free_port(),
        snapshot=write_snapshot(workload, tmp_path / "snapshot.json"),
        policy=tmp_path / "policy.json",
        log=tmp_path / "go.log",
    )
    spec.policy.write_bytes(encode(policy.scheduling_policy()))
    with GO_BASELINE.serve(spec) as base_url:
        results = measure_server(base_url, workload, requests=3, warmup=1)
    assert [(m.mode, m.verb) for m in results] == [
        ("full", "filter"),
        ("full", "prioritize"),
        ("names", "filter"),
        ("names", "prioritize"),
    ]
    assert [m.problems for m in results] == [[]] * 4
    assert all(m.latency.count == 3 and m.latency.p50 > 0 for m in results)


def test_the_go_baseline_and_policyext_decide_alike_for_new_pods(
    built: None, tmp_path: Path
) -> None:
    workload = generate(40)
    reference = policy.Reference(workload.nodes, workload.pods)
    bodies = Bodies(workload)
    pods = pending_pods(14)
    policy_file = tmp_path / "policy.json"
    policy_file.write_bytes(encode(policy.scheduling_policy()))
    snapshot = write_snapshot(workload, tmp_path / "snapshot.json")
    decisions: dict[str, list[Decision]] = {GO_BASELINE.name: [], POLICYEXT.name: []}
    with contextlib.ExitStack() as stack:
        # both served at once, each pod sent to each in turn, as `python -m bench` does
        urls = {
            target.name: stack.enter_context(
                target.serve(LaunchSpec(free_port(), snapshot, policy_file, tmp_path / f"{i}.log"))
            )
            for i, target in enumerate((GO_BASELINE, POLICYEXT))
        }
        for mode in ("names", "full"):
            runs = measure_distinct(urls, workload, reference, bodies, mode, pods[2:], pods[:2])
            assert list(runs) == [GO_BASELINE.name, POLICYEXT.name]
            for name, run in runs.items():
                assert [s.problems for s in run.series] == [[], []], name
                assert [s.latency.count for s in run.series] == [12, 12]
                decisions[name] += run.decisions

    go, ours = decisions[GO_BASELINE.name], decisions[POLICYEXT.name]
    assert compare_decisions(ours, go) == []
    assert len({d.feasible for d in go}) > 3  # the pods were answered differently
