"""`policyext explain NAMESPACE/POD --snapshot FILE`: every node with the scheduler's and
the policies' reasons, and the pod's last FailedScheduling event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyext.cli import main
from tests.cli.run import FIXTURES, REPO


def _event(message: str, when: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"finetune-bert-0.{when}", "namespace": "ml"},
        "involvedObject": {"kind": "Pod", "name": "finetune-bert-0", "namespace": "ml"},
        "reason": "FailedScheduling",
        "message": message,
        "lastTimestamp": when,
    }


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    """The example cluster with a GPU pod too big for every node, pending, and two of its
    FailedScheduling events."""
    cluster = yaml.safe_load((FIXTURES / "cluster.yaml").read_text())
    pending = yaml.safe_load((FIXTURES / "gpu-pod.yaml").read_text())
    pending["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "14"
    pending["status"] = {"phase": "Pending"}
    cluster["items"] += [
        pending,
        _event("older", "2026-03-14T20:00:00Z"),
        _event("0/6 nodes are available: newest.", "2026-03-14T20:59:00Z"),
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(cluster))
    return path


def _explain(snapshot: Path, *extra: str) -> list[str]:
    return [
        "explain",
        "ml/finetune-bert-0",
        "--rules",
        str(REPO / "rules"),
        "--snapshot",
        str(snapshot),
        *extra,
    ]


def test_explain_shows_every_node_with_the_side_that_rejects_it_and_the_last_event(
    snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_explain(snapshot)) == 0
    out = capsys.readouterr().out
    assert (
        "gpu-a       no            -  rejected by scheduler NodeResourcesFit: Insufficient cpu"
        in out
    )
    assert "rejected by scheduler TaintToleration: node(s) had untolerated taint(s)" in out
    # a node the scheduler rejects still shows what the policies say of it
    assert "rejected by team-dedicated-nodes/team-namespaces-only" in out
    assert "kube-scheduler would report: 0/6 nodes are available: 1 node(s) had untolerated" in out
    assert out.rstrip().endswith(
        "last FailedScheduling event (2026-03-14T20:59:00Z): 0/6 nodes are available: newest."
    )


def test_explain_prints_the_same_as_data(
    snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_explain(snapshot, "-o", "json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pod"] == "ml/finetune-bert-0"
    assert data["best"] is None
    assert data["unschedulable"].startswith("0/6 nodes are available: ")
    nodes = {n["name"]: n for n in data["nodes"]}
    assert nodes["payments-b"]["rejectedBy"] == "scheduler"
    assert nodes["payments-b"]["rejections"][0]["rule"] == "team-namespaces-only"
    assert nodes["general-a"]["scheduler"]["rejection"]["unresolvable"] is True  # no GPU at all
    assert data["lastFailedScheduling"]["message"] == "0/6 nodes are available: newest."


@pytest.mark.parametrize(
    ("pod", "error"),
    [
        ("ml/nobody", "error: no pod ml/nobody in "),
        ("ml/train-resnet-0", "error: pod ml/train-resnet-0 is bound to gpu-a"),
    ],
)
def test_explain_refuses_a_pod_it_cannot_explain(
    snapshot: Path, capsys: pytest.CaptureFixture[str], pod: str, error: str
) -> None:
    args = _explain(snapshot)
    args[1] = pod
    assert main(args) == 1
    assert capsys.readouterr().err.startswith(error)


def test_explain_wants_namespace_slash_name(
    snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _explain(snapshot)
    args[1] = "finetune-bert-0"
    assert main(args) == 2
    assert "NAMESPACE/NAME" in capsys.readouterr().err
