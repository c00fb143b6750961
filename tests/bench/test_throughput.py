"""The throughput report: rates, ratios to the stock scheduler of the same round, and the
cost of the extender against the 20 % goal."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import pytest

from bench import throughput
from bench.throughput import STOCK, RunResult, cpu_seconds, render

MACHINE = {"cpu": "test CPU", "cores": "2", "os": "Linux", "python": "CPython 3", "load": "0.1"}
SETTINGS = {"date": "2026-01-01 00:00 UTC", "nodes": 500, "pods": 1001, "threads": 4, "workers": 1}


def _run(scheduler: str, seconds: float, round_: int = 1) -> RunResult:
    return RunResult(
        scheduler=scheduler, pods=1001, seconds=seconds, startup_seconds=1.0, round=round_
    )


@pytest.mark.parametrize(
    ("seconds", "pods_per_second"),
    [(10.0, 100.0), (4.0, 250.0), (0.0, 0.0)],
)
def test_the_rate_counts_the_intervals_between_the_first_and_the_last_binding(
    seconds: float, pods_per_second: float
) -> None:
    assert _run(STOCK, seconds).pods_per_second == pods_per_second


@pytest.mark.parametrize(
    ("stock_seconds", "ours_seconds", "row", "cost"),
    [
        (10.0, 10.0, "| 1 | policyext, rules/ | 100 | 10.00 | 1.00 |", "costs **0%**"),
        (10.0, 12.5, "| 1 | policyext, rules/ | 80 | 12.50 | 0.80 |", "costs **20%**"),
        (10.0, 40.0, "| 1 | policyext, rules/ | 25 | 40.00 | 0.25 |", "costs **75%**"),
    ],
)
def test_each_run_is_compared_with_the_stock_scheduler_of_its_round(
    stock_seconds: float, ours_seconds: float, row: str, cost: str
) -> None:
    results = [_run(STOCK, stock_seconds), _run("policyext, rules/", ours_seconds)]

    page = render(results, SETTINGS, MACHINE)

    assert row in page
    assert f"policyext, rules/: **{1000 / ours_seconds:.0f} pods/s**, the extender {cost}" in page
    assert "test CPU" in page and "2026-01-01 00:00 UTC" in page


def test_the_medians_take_every_round() -> None:
    results = [
        _run(STOCK, 10.0, 1),
        _run("policyext, rules/", 20.0, 1),
        _run(STOCK, 10.0, 2),
        _run("policyext, rules/", 10.0, 2),
        _run(STOCK, 5.0, 3),
        _run("policyext, rules/", 40.0, 3),
    ]

    page = render(results, SETTINGS, MACHINE)

    assert "| 2 | policyext, rules/ | 100 | 10.00 | 1.00 |" in page
    assert "stock kube-scheduler: **100 pods/s**" in page
    assert "policyext, rules/: **50 pods/s**, the extender costs **50%**" in page


def test_policyext_is_also_compared_with_the_go_extender_of_the_same_runs() -> None:
    results = [
        _run(STOCK, 5.0),
        _run(throughput.GO, 10.0),
        _run(throughput.HEADLINE, 20.0),
    ]

    page = render(results, SETTINGS, MACHINE)

    assert f"{throughput.GO}: **100 pods/s**, the extender costs **50%**" in page
    assert "costs **75%** of the scheduler's throughput (0.50x the Go extender's rate;" in page
    assert page.count("the Go extender's rate") == 1  # not for the Go extender itself


# seconds per round of the Go extender's run and of policyext's: the ratio of the medians
# (Go 100 pods/s, policyext 50) against the median of each round's own ratio
PAIRED = {
    "the machine as fast in every round": ([(10.0, 20.0), (10.0, 20.0), (10.0, 20.0)], 0.50),
    "a fast round for one, a slow one for the other": (
        [(10.0, 12.5), (5.0, 20.0), (20.0, 25.0)],
        0.80,
    ),
}


@pytest.mark.parametrize(("rounds", "paired"), PAIRED.values(), ids=list(PAIRED))
def test_policyext_is_compared_with_the_go_extender_round_by_round_too(
    rounds: list[tuple[float, float]], paired: float
) -> None:
    results = []
    for n, (go, ours) in enumerate(rounds, 1):
        results += [
            _run(STOCK, 5.0, n),
            _run(throughput.GO, go, n),
            _run(throughput.HEADLINE, ours, n),
        ]

    page = render(results, SETTINGS, MACHINE)

    assert throughput.paired_ratio(results, throughput.HEADLINE, throughput.GO) == paired
    expected = f"(0.50x the Go extender's rate; {paired:.2f}x in the median of the rounds"
    assert expected + ", each against its own)" in page


def test_the_cpu_time_of_a_process_group_includes_this_process() -> None:
    assert cpu_seconds(os.getpgrp()) > 0


def test_a_saved_run_renders_the_same_page_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = [_run(STOCK, 10.0), _run("policyext, rules/", 12.5)]
    saved = tmp_path / "run.json"
    saved.write_text(
        json.dumps({"settings": SETTINGS, "machine": MACHINE, "runs": [asdict(r) for r in results]})
    )
    page = tmp_path / "page.md"
    monkeypatch.setattr(throughput, "DOCS_PAGE", page)

    assert throughput.main(["--render", str(saved)]) == 0

    assert page.read_text() == render(results, SETTINGS, MACHINE)


def test_the_extender_cpu_per_pod_is_shown_beside_the_go_extender_s() -> None:
    go = _run(throughput.GO, 10.0)
    go.cpu_seconds = {"extender": 1.001}
    ours = _run(throughput.HEADLINE, 20.0)
    ours.cpu_seconds = {"extender": 5.005}

    page = render([_run(STOCK, 5.0), go, ours], SETTINGS, MACHINE)

    assert go.extender_ms_per_pod == pytest.approx(1.0)
    assert "| 1.00 |" in page and "| 5.00 |" in page
    assert "extender CPU **5.00 ms per pod** (5.0x the Go extender's 1.00 ms)" in page
    assert _run(STOCK, 5.0).extender_ms_per_pod is None


@pytest.mark.parametrize("index", range(40))
def test_each_varied_pod_becomes_a_manifest_the_api_server_accepts(index: int) -> None:
    shape = throughput.pending_pods(40)[index]

    manifest = throughput.pod_manifest(shape, "p-0001", "bench-x")

    spec = manifest["spec"]
    assert manifest["metadata"]["name"] == "p-0001" and "namespace" not in manifest["metadata"]
    assert spec["schedulerName"] == "bench-x"
    # nothing admission would refuse: no service account, priority or overhead of our own
    assert not {"serviceAccountName", "priority", "overhead", "nodeName"} & set(spec)
    requests = [c["resources"]["requests"] for c in spec["containers"]]
    assert requests == [c["resources"]["requests"] for c in shape["spec"]["containers"]]
    assert ("runtimeClassName" in spec) == ("overhead" in shape["spec"])
    assert manifest["metadata"]["labels"]["app"] == "bench"
