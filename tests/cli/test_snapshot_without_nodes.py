"""A snapshot with no Node in it (a Service saved by mistake, an empty file) stands for no
cluster: every command that reads one says so and fails, instead of ranking 0 of 0 nodes or
serving a cache in which every node is unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.run import FIXTURES, RULES, policyext

SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
PENDING_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\n"
    "spec: {containers: [{name: web, image: nginx}]}\nstatus: {phase: Pending}\n"
)
NO_NODE = "no Node in the file, so no node to schedule on"


@pytest.fixture(params=["a Service", "an empty file", "a pending Pod alone"])
def nodeless(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    text = {"a Service": SERVICE, "an empty file": "", "a pending Pod alone": PENDING_POD}
    path = tmp_path / "snapshot.yaml"
    path.write_text(text[request.param])
    return path


def _says_no_node(stderr: str, path: Path) -> None:
    assert f"{path}: {NO_NODE}" in stderr
    assert "Nodes but no Pods" not in stderr
    # how to save a snapshot that works
    assert "kubectl get nodes,pods,namespaces -A -o yaml" in stderr


@pytest.mark.parametrize("no_pods", [[], ["--no-pods"]], ids=["", "--no-pods"])
def test_simulate_refuses_a_snapshot_without_nodes(nodeless: Path, no_pods: list[str]) -> None:
    done = policyext(
        "simulate", RULES, "--pod", FIXTURES / "web-pod.yaml", "--snapshot", nodeless, *no_pods
    )
    assert done.returncode == 1
    _says_no_node(done.stderr, nodeless)
    assert done.stdout == ""


def test_simulate_refuses_a_nodes_file_without_nodes(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(SERVICE)
    done = policyext("simulate", RULES, "--pod", FIXTURES / "web-pod.yaml", "--nodes", path)
    assert done.returncode == 1
    assert f"{path}: {NO_NODE}" in done.stderr


def test_explain_refuses_a_snapshot_without_nodes(nodeless: Path) -> None:
    done = policyext("explain", "shop/web", "--rules", RULES, "--snapshot", nodeless)
    assert done.returncode == 1
    assert f"{nodeless}: {NO_NODE}" in done.stderr


def test_serve_refuses_to_start_on_a_snapshot_without_nodes(nodeless: Path) -> None:
    done = policyext("serve", "--rules", RULES, "--snapshot", nodeless, "--bind", "127.0.0.1:0")
    assert done.returncode == 1
    _says_no_node(done.stderr, nodeless)
    assert "Listening at" not in done.stderr  # refused before gunicorn starts


def test_a_snapshot_with_nodes_and_no_pods_still_asks_for_no_pods(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {}\n"
        "status: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}\n"
    )
    args = ["simulate", RULES, "--pod", FIXTURES / "web-pod.yaml", "--snapshot", path]
    refused = policyext(*args)
    assert refused.returncode == 1
    assert "Nodes but no Pods" in refused.stderr
    done = policyext(*args, "--no-pods")
    assert done.returncode == 0, done.stderr
    assert "of 1 node" in done.stdout
