"""`policyext simulate` and `policyext test` through their command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from policyext.cli import main
from tests.cli.run import FIXTURES, REPO

SIMULATE = [
    "simulate",
    "--rules",
    str(REPO / "rules"),
    "--pod",
    str(FIXTURES / "critical-pod.yaml"),
    "--snapshot",
    str(FIXTURES / "cluster.yaml"),
    "--now",
    "2026-03-14T21:00:00Z",
]


def test_simulate_ranks_the_nodes_and_names_the_best_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(SIMULATE) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("NODE"))
    first_row = lines[header + 1].split()
    assert first_row[:3] == ["general-b", "yes", "467"]  # the best node comes first
    assert (
        "rejected by critical-off-spot/no-spot-nodes: critical pods do not run on spot nodes" in out
    )
    assert "rejected by scheduler TaintToleration: node(s) had untolerated taint(s)" in out
    assert "3 of 6 nodes feasible" in out
    assert out.rstrip().endswith("best node is general-b (score 467)")


def test_simulate_policies_only_leaves_the_scheduler_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*SIMULATE, "--policies-only"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("scheduler: not emulated (--policies-only)")
    assert "TaintToleration" not in out
    assert out.rstrip().endswith("best node is general-b (score 3)")


def test_simulate_sends_a_tolerating_pod_where_the_scheduler_would(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the web pod tolerates no taint: the freest node, tainted gpu-a, is not a choice
    args = ["simulate", "--rules", str(REPO / "rules" / "most-free-cpu.yaml")]
    args += ["--pod", str(FIXTURES / "web-pod.yaml"), "--snapshot", str(FIXTURES / "cluster.yaml")]
    assert main([*args, "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["best"] == "general-b"
    nodes = {n["name"]: n for n in data["nodes"]}
    assert nodes["gpu-a"]["rejectedBy"] == "scheduler"
    assert nodes["gpu-a"]["scheduler"]["rejection"]["plugin"] == "TaintToleration"
    assert main([*args, "--policies-only", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["best"] == "gpu-a"


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_simulate_prints_the_same_decision_as_data(
    output: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*SIMULATE, "-o", output]) == 0
    text = capsys.readouterr().out
    data = json.loads(text) if output == "json" else yaml.safe_load(text)
    assert data["best"] == "general-b"
    feasible = sorted(n["name"] for n in data["nodes"] if n["feasible"])
    assert feasible == ["general-a", "general-b", "general-c"]
    spot = next(n for n in data["nodes"] if n["name"] == "spot-c")
    assert spot["unresolvable"] is True
    assert spot["rejections"][0]["rule"] == "no-spot-nodes"


def test_simulate_with_nodes_only_reports_that_pod_information_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = yaml.safe_load((FIXTURES / "cluster.yaml").read_text())
    nodes = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [i for i in cluster["items"] if i["kind"] == "Node"],
    }
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(nodes))
    args = [*SIMULATE[:5], "--nodes", str(tmp_path / "nodes.yaml"), "-o", "json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    errors = [
        r["error"]
        for n in data["nodes"]
        for r in n["rejections"] + n["ignoredErrors"] + n["scores"]
        if "error" in r
    ]
    assert any("needs the pods of the cluster" in e for e in errors)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--pod", "/nonexistent/pod.yaml"], "/nonexistent/pod.yaml"),
        (["--now", "yesterday"], "invalid timestamp"),
    ],
)
def test_simulate_reports_bad_input_on_stderr_with_status_1(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = list(SIMULATE)
    flag = args[0]
    base[base.index(flag) + 1] = args[1]
    assert main(base) == 1
    assert says in capsys.readouterr().err


def test_policy_test_reports_each_case_and_the_differences_of_a_failing_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "p.yaml").write_text(
        "apiVersion: policyext.io/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: p}\n"
        "spec:\n  filters:\n  - {name: big, expression: \"node.metadata.name == 'general-b'\"}\n"
    )
    (tmp_path / "p.test.yaml").write_text(
        "apiVersion: policyext.io/v1alpha1\nkind: PolicyTest\nmetadata: {name: p}\n"
        f"spec:\n  policies: [p.yaml]\n  snapshot: {FIXTURES / 'cluster.yaml'}\n  cases:\n"
        "  - name: right\n    pod: {metadata: {name: a, namespace: shop}, spec: {containers: []}}\n"
        "    expect: {feasible: [general-b]}\n"
        "  - name: wrong\n    pod: {metadata: {name: a, namespace: shop}, spec: {containers: []}}\n"
        "    expect: {feasible: [general-a], best: general-a}\n"
    )
    assert main(["test", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "  PASS right" in out
    assert "  FAIL wrong" in out
    assert "feasible: expected ['general-a'], got ['general-b']" in out
    assert "best: expected general-a, got general-b" in out
    assert out.rstrip().endswith("1 passed, 1 failed")


@pytest.mark.parametrize(
    ("emulation", "feasible"),
    [
        (True, ["general-a", "general-b", "general-c", "spot-c"]),
        (False, ["general-a", "general-b", "general-c", "gpu-a", "payments-b", "spot-c"]),
    ],
)
def test_a_policy_test_is_judged_with_the_scheduler_unless_it_turns_the_emulation_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], emulation: bool, feasible: list[str]
) -> None:
    test = {
        "apiVersion": "policyext.io/v1alpha1",
        "kind": "PolicyTest",
        "metadata": {"name": "emulation"},
        "spec": {
            "policies": [str(REPO / "rules" / "most-free-cpu.yaml")],
            "snapshot": str(FIXTURES / "cluster.yaml"),
            "schedulerEmulation": emulation,
            "cases": [
                {
                    "name": "the web pod",
                    "pod": str(FIXTURES / "web-pod.yaml"),
                    "expect": {"feasible": feasible},
                }
            ],
        },
    }
    path = tmp_path / "emulation.test.yaml"
    path.write_text(yaml.safe_dump(test))
    assert main(["test", str(path)]) == 0, capsys.readouterr().out
