"""`policyext simulate --pending` from a snapshot file, and the flags that go with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from policyext.cli import main

POLICY = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {{name: p}}
spec:
  filters:
  - name: f
    expression: "{expression}"
  scores:
  - name: biggest
    expression: "int(node.metadata.labels.size)"
"""


def _node(name: str, size: int) -> dict[str, object]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"size": str(size)}, "resourceVersion": "1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _pod(name: str, node: str | None = None, scheduler: str = "default-scheduler") -> object:
    spec: dict[str, object] = {"schedulerName": scheduler, "containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    phase = "Running" if node else "Pending"
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "uid": name},
        "spec": spec,
        "status": {"phase": phase},
    }


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """current/: every node but `small`; candidate/: neither `big` nor `small`; a snapshot
    with three nodes, one running pod and two pending pods (one for another scheduler)."""
    for folder, expression in (
        ("current", "node.metadata.name != 'small'"),
        ("candidate", "!(node.metadata.name in ['big', 'small'])"),
    ):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "p.yaml").write_text(POLICY.format(expression=expression))
    items = [
        _node("small", 1),
        _node("mid", 2),
        _node("big", 3),
        _pod("running", node="mid"),
        _pod("waiting"),
        _pod("other", scheduler="policy-scheduler"),
    ]
    snapshot = {"apiVersion": "v1", "kind": "List", "items": items}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(snapshot))
    return tmp_path


def _args(files: Path, *extra: str) -> list[str]:
    return [
        "simulate",
        "--rules",
        str(files / "candidate"),
        "--pending",
        "--current",
        str(files / "current"),
        "--snapshot",
        str(files / "cluster.yaml"),
        "--policies-only",  # the rules' own comparison: scores on their 0..10 scale
        *extra,
    ]


def test_pending_lists_every_pending_pod_with_its_best_node_before_and_after(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_args(files)) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("POD"))
    rows = [line.split() for line in lines[header + 1 : header + 3]]
    assert rows[0][:6] == ["shop/other", "2", "->", "1", "big", "(3)"]
    assert rows[1][:9] == ["shop/waiting", "2", "->", "1", "big", "(3)", "->", "mid", "(2)"]
    assert lines[-1] == (
        "2 pending pods: 0 becomes unschedulable, 0 becomes schedulable, "
        "2 best node changes, 0 unchanged"
    )


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_pending_prints_the_same_comparison_as_data_for_one_scheduler(
    output: str, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_args(files, "--scheduler-name", "policy-scheduler", "-o", output)) == 0
    text = capsys.readouterr().out
    data = json.loads(text) if output == "json" else yaml.safe_load(text)
    (only,) = data["pods"]
    assert only["name"] == "other"
    assert only["verdict"] == "best node changes"
    assert (only["before"]["best"], only["after"]["best"]) == ("big", "mid")
    assert only["after"]["rejections"] == {"p/f": 2}
    assert data["nodes"] == 3


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--pending", "--snapshot", "s.yaml"], "give --current PATH or --current-configmap"),
        (["--pending", "--current", "r", "--nodes", "n.yaml"], "not --nodes"),
        (
            ["--pending", "--current-configmap", "ns/cm", "--snapshot", "s.yaml"],
            "goes with --cluster",
        ),
        (["--pending", "--current-configmap", "cm", "--cluster"], "NAMESPACE/NAME"),
        (["--pod", "p.yaml", "--current", "r", "--snapshot", "s.yaml"], "go with --pending"),
        (["--pod", "p.yaml", "--snapshot", "s.yaml", "--kubeconfig", "k"], "go with --cluster"),
    ],
)
def test_flags_that_do_not_go_together_are_a_usage_error(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--rules", "rules", *args]) == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
        ["--pod", "p.yaml", "--pending", "--snapshot", "s.yaml"],
        ["--pod", "p.yaml", "--cluster", "--snapshot", "s.yaml"],
        ["--pending", "--current", "r", "--current-configmap", "a/b", "--cluster"],
    ],
)
def test_exclusive_flags_are_refused_by_the_parser(args: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "--rules", "rules", *args])
    assert exit_info.value.code == 2


def test_invalid_current_rules_are_reported_with_status_1(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (files / "current" / "p.yaml").write_text(POLICY.format(expression="node.nope("))
    assert main(_args(files)) == 1
    assert "p.yaml" in capsys.readouterr().err
