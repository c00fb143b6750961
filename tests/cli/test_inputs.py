"""The inputs users have: `--pod` takes a Pod, a workload's pod template or a List of them
and refuses anything else by name; a snapshot without Pods is refused unless `--no-pods`
says so; `policyext test` that finds no PolicyTest fails and says where it looked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.run import FIXTURES, RULES, policyext

CRITICAL_RULES = str(RULES / "critical-off-spot.yaml")
CLUSTER = str(FIXTURES / "cluster.yaml")
SPOT_RULE = "critical-off-spot/no-spot-nodes"

TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "checkout", "critical": "true"}},
    "spec": {"containers": [{"name": "app", "image": "checkout:1", "resources": {"requests": {}}}]},
}


def _workload(kind: str, name: str = "checkout") -> dict[str, Any]:
    """A workload in the shop namespace whose pods are critical."""
    api = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    spec: dict[str, Any] = {"template": TEMPLATE}
    if kind == "CronJob":
        spec = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": TEMPLATE}}}
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": "shop"},
        "spec": spec,
    }


def _simulate(pod_file: Path, *extra: str) -> Any:
    done = policyext(
        "simulate", CRITICAL_RULES, "--pod", pod_file, "--snapshot", CLUSTER, "-o", "json", *extra
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _rejected_by(result: dict[str, Any], node: str) -> list[str]:
    verdict = next(n for n in result["nodes"] if n["name"] == node)
    return [f"{r['policy']}/{r['rule']}" for r in verdict["rejections"]]


@pytest.mark.parametrize(
    "kind", ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"]
)
def test_simulate_takes_the_pod_template_of_a_workload(tmp_path: Path, kind: str) -> None:
    manifest = tmp_path / "workload.yaml"
    manifest.write_text(yaml.safe_dump(_workload(kind)))
    result = _simulate(manifest)
    # the template's critical label reached the policy: the spot node is off limits
    assert _rejected_by(result, "spot-c") == [SPOT_RULE]
    assert [p["applies"] for p in result["policies"]] == [True]


def _both_pods(result: list[dict[str, Any]]) -> None:
    assert [(r["pod"], r["from"]) for r in result] == [
        ("shop/web", "Pod shop/web"),
        ("shop/checkout", "Deployment shop/checkout"),
    ]
    assert _rejected_by(result[0], "spot-c") == []  # the plain pod may use spot nodes
    assert _rejected_by(result[1], "spot-c") == [SPOT_RULE]


PLAIN_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"containers": [{"name": "web", "image": "web:1"}]},
}


def test_simulate_simulates_each_object_of_a_list(tmp_path: Path) -> None:
    listed = tmp_path / "list.yaml"
    listed.write_text(
        yaml.safe_dump(
            {"apiVersion": "v1", "kind": "List", "items": [PLAIN_POD, _workload("Deployment")]}
        )
    )
    _both_pods(_simulate(listed))


def test_simulate_simulates_each_document_of_a_multi_document_file(tmp_path: Path) -> None:
    documents = tmp_path / "pods.yaml"
    documents.write_text(yaml.safe_dump_all([PLAIN_POD, _workload("Deployment")]))
    _both_pods(_simulate(documents))


def test_the_table_of_several_pods_names_each_pod_and_where_it_came_from(tmp_path: Path) -> None:
    documents = tmp_path / "pods.yaml"
    documents.write_text(yaml.safe_dump_all([PLAIN_POD, _workload("Deployment")]))
    done = policyext("simulate", CRITICAL_RULES, "--pod", documents, "--snapshot", CLUSTER)
    assert done.returncode == 0, done.stderr
    assert "== pod shop/web (from Pod shop/web)" in done.stdout
    assert "== pod shop/checkout (from Deployment shop/checkout)" in done.stdout
    assert done.stdout.count("best node is") == 2


@pytest.mark.parametrize(
    ("document", "says"),
    [
        (
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}},
            "object 1: kind 'Service' is not a pod; give a Pod, a Deployment",
        ),
        (
            {"apiVersion": "v1", "kind": "List", "items": [PLAIN_POD, {"kind": "ConfigMap"}]},
            "object 2: kind 'ConfigMap' is not a pod",
        ),
        ({"metadata": {"name": "web"}}, "object 1: an object without a kind is not a pod"),
        (
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}},
            "object 1: Deployment d has no pod template",
        ),
    ],
    ids=["a Service", "a List with a ConfigMap", "no kind", "a Deployment without template"],
)
def test_simulate_refuses_an_object_that_is_no_pod_and_names_its_kind(
    tmp_path: Path, document: dict[str, Any], says: str
) -> None:
    given = tmp_path / "object.yaml"
    given.write_text(yaml.safe_dump(document))
    done = policyext("simulate", CRITICAL_RULES, "--pod", given, "--snapshot", CLUSTER)
    assert done.returncode == 1
    assert f"{given}: {says}" in done.stderr
    assert done.stdout == ""


def _nodes_only(tmp_path: Path) -> Path:
    cluster = yaml.safe_load(Path(CLUSTER).read_text())
    nodes = [item for item in cluster["items"] if item["kind"] == "Node"]
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}))
    return path


def test_a_snapshot_without_pods_is_refused(tmp_path: Path) -> None:
    snapshot = _nodes_only(tmp_path)
    pod = FIXTURES / "web-pod.yaml"
    done = policyext("simulate", CRITICAL_RULES, "--pod", pod, "--snapshot", snapshot)
    assert done.returncode == 1
    assert f"{snapshot}: Nodes but no Pods" in done.stderr
    assert "--no-pods" in done.stderr


def test_no_pods_says_a_snapshot_without_pods_is_meant(tmp_path: Path) -> None:
    snapshot = _nodes_only(tmp_path)
    pod = FIXTURES / "web-pod.yaml"
    done = policyext("simulate", CRITICAL_RULES, "--pod", pod, "--snapshot", snapshot, "--no-pods")
    assert done.returncode == 0, done.stderr
    assert "4 of 6 nodes feasible" in done.stdout  # gpu-a and payments-b are tainted


def test_pending_refuses_a_snapshot_without_pods_as_well(tmp_path: Path) -> None:
    snapshot = _nodes_only(tmp_path)
    done = policyext(
        "simulate", "--rules", CRITICAL_RULES, "--pending", "--current", CRITICAL_RULES,
        "--snapshot", snapshot,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Nodes but no Pods" in done.stderr


def test_no_pods_goes_with_a_snapshot_only() -> None:
    pod = FIXTURES / "web-pod.yaml"
    done = policyext("simulate", CRITICAL_RULES, "--pod", pod, "--nodes", CLUSTER, "--no-pods")
    assert done.returncode == 2
    assert "--no-pods goes with --snapshot" in done.stderr


@pytest.mark.parametrize("content", [None, "policy"], ids=["an empty folder", "policies only"])
def test_test_that_finds_no_policy_test_fails_and_says_where_it_looked(
    tmp_path: Path, content: str | None
) -> None:
    if content:
        (tmp_path / "p.yaml").write_text(Path(CRITICAL_RULES).read_text())
    done = policyext("test", tmp_path)
    assert done.returncode == 1
    assert f"no PolicyTest found: looked in {tmp_path}" in done.stderr
    assert f"({1 if content else 0} YAML or JSON file" in done.stderr


def test_a_policy_test_case_takes_a_workload_file_as_its_pod(tmp_path: Path) -> None:
    (tmp_path / "deploy.yaml").write_text(yaml.safe_dump(_workload("Deployment")))
    (tmp_path / "t.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "policyext.io/v1alpha1",
                "kind": "PolicyTest",
                "metadata": {"name": "workload"},
                "spec": {
                    "policies": [CRITICAL_RULES],
                    "snapshot": CLUSTER,
                    "cases": [
                        {
                            "name": "the deployment's pods stay off the spot node",
                            "pod": "deploy.yaml",
                            "expect": {"rejected": {"spot-c": SPOT_RULE}},
                        }
                    ],
                },
            }
        )
    )
    done = policyext("test", tmp_path / "t.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS the deployment's pods stay off the spot node" in done.stdout


ALIASED_NODES = """\
apiVersion: v1
kind: List
items:
- &node {kind: Node, metadata: {name: a}, status: {allocatable: {cpu: "1"}}}
- *node
"""


ALIASED = "aliased.yaml"
WEB_POD = str(FIXTURES / "web-pod.yaml")


@pytest.mark.parametrize(
    "inputs",
    [
        ["--pod", WEB_POD, "--snapshot", ALIASED],
        ["--pod", WEB_POD, "--nodes", ALIASED],
        ["--pod", ALIASED, "--snapshot", CLUSTER],
    ],
    ids=["a snapshot", "nodes", "a pod"],
)
def test_a_yaml_alias_in_a_snapshot_nodes_or_pod_file_is_refused_at_the_aliased_value(
    tmp_path: Path, inputs: list[str]
) -> None:
    aliased = tmp_path / ALIASED
    aliased.write_text(ALIASED_NODES)
    done = policyext("simulate", CRITICAL_RULES, *inputs, cwd=tmp_path)
    assert done.returncode == 1
    assert f"{ALIASED}:4:3: YAML alias of this value is not accepted" in done.stderr
    assert "Traceback" not in done.stderr
