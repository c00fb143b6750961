"""The Go baseline, served and measured the way `python -m bench` does it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bench import policy
from bench.distinct import Bodies, compare_decisions, measure_distinct
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

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain")


@pytest.fixture(scope="module")
def built() -> None:
    build_go_extender()


def test_the_go_unit_tests_pass() -> None:
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
    spec = LaunchSpec(
        port=free_port(),
        snapshot=write_snapshot(workload, tmp_path / "snapshot.json"),
        policy=tmp_path / "policy.json",
        log=tmp_path / "server.log",
    )
    spec.policy.write_bytes(encode(policy.scheduling_policy()))
    results = []
    for target in (GO_BASELINE, POLICYEXT):
        decisions = []
        with target.serve(spec) as base_url:
            for mode in ("names", "full"):
                run = measure_distinct(
                    base_url, workload, reference, bodies, mode, pods[2:], pods[:2]
                )
                assert [s.problems for s in run.series] == [[], []], target.name
                assert [s.latency.count for s in run.series] == [12, 12]
                decisions += run.decisions
        results.append(decisions)

    assert compare_decisions(results[0], results[1]) == []
    assert len({d.feasible for d in results[0]}) > 3  # the pods were answered differently
