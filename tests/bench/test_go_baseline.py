"""The Go baseline, served and measured the way `python -m bench` does it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bench import policy
from bench.http_client import measure_server
from bench.targets import GO_BASELINE, GO_DIR, GO_ENV, LaunchSpec, build_go_extender, free_port
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
