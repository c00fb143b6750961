"""`policyext simulate --cluster` against the real API server: the live nodes ranked for a
pod file, the pending pods compared under the current and a candidate rule set, and a
one-line reason when the API server cannot be reached or refuses."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.e2e.controlplane import NOBODY, ControlPlane, KubeClient, fake_node, free_port, pod

pytestmark = pytest.mark.e2e

MOST_FREE_CPU = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: most-free-cpu}
spec:
  scores:
  - name: most-free-cpu
    expression: "nodeInfo.free.cpu.asApproximateFloat()"
    normalize: MinMax
"""
GPU_ONLY = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: gpu}
spec:
  filters:
  - name: gpu-pods-on-gpu-nodes
    expression: "pod.metadata.?labels.?gpu.orValue('') != 'true' || node.metadata.?labels.?gpu.orValue('') == 'true'"
"""
CANDIDATE = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: placement}
spec:
  filters:
  - name: critical-off-spot
    expression: "pod.metadata.?labels.?critical.orValue('') != 'true' || node.metadata.?labels.?lifecycle.orValue('') != 'spot'"
  - name: team-nodes
    expression: "pod.metadata.?labels.?team.orValue('') == '' || node.metadata.?labels.?team.orValue('') == pod.metadata.labels.team"
"""


@dataclass(frozen=True)
class Scene:
    """Three fake nodes; `busy` runs a 5-CPU pod, so only counting it makes `free` the
    freest of the two ordinary nodes; four pods pending for a scheduler of their own."""

    folder: Path
    namespace: str
    scheduler: str
    spot: str
    free: str
    busy: str

    @property
    def current(self) -> Path:
        return self.folder / "current"

    @property
    def candidate(self) -> Path:
        return self.folder / "candidate"


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def scene(admin: KubeClient, namespace: str, tmp_path: Path) -> Scene:
    spot, free, busy = _unique("spot"), _unique("free"), _unique("busy")
    admin.create_fake_node(fake_node(spot, cpu="16", labels={"lifecycle": "spot"}))
    admin.create_fake_node(fake_node(free, cpu="4"))
    admin.create_fake_node(fake_node(busy, cpu="8"))
    scheduler = _unique("whatif")
    running = pod("running", scheduler_name=scheduler, cpu="5")
    running["spec"]["nodeName"] = busy
    pods = f"/api/v1/namespaces/{namespace}/pods"
    admin.create(pods, running)
    for name, labels in (
        ("critical", {"critical": "true"}),
        ("gpu", {"gpu": "true"}),
        ("team", {"team": "payments"}),
        ("plain", {}),
    ):
        admin.create(pods, pod(name, scheduler_name=scheduler, cpu="1", labels=labels))
    (tmp_path / "current").mkdir()
    (tmp_path / "current" / "most-free-cpu.yaml").write_text(MOST_FREE_CPU)
    (tmp_path / "current" / "gpu.yaml").write_text(GPU_ONLY)
    (tmp_path / "candidate").mkdir()
    (tmp_path / "candidate" / "most-free-cpu.yaml").write_text(MOST_FREE_CPU)
    (tmp_path / "candidate" / "placement.yaml").write_text(CANDIDATE)
    critical = pod("critical", labels={"critical": "true"})
    (tmp_path / "critical-pod.yaml").write_text(yaml.safe_dump(critical))
    return Scene(tmp_path, namespace, scheduler, spot, free, busy)


def _simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "policyext.cli", "simulate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_simulate_cluster_ranks_the_live_nodes_counting_the_pods_bound_to_them(
    control_plane: ControlPlane, scene: Scene
) -> None:
    common = ["--pod", str(scene.folder / "critical-pod.yaml"), "--cluster"]
    kubeconfig = ["--kubeconfig", str(control_plane.admin_kubeconfig)]
    table = _simulate("--rules", str(scene.candidate), *common, *kubeconfig)
    assert table.returncode == 0, table.stderr
    assert f"best node is {scene.free} (score " in table.stdout.splitlines()[-1]
    data = _simulate("--rules", str(scene.candidate), *common, *kubeconfig, "-o", "json")
    assert data.returncode == 0, data.stderr
    nodes = {n["name"]: n for n in json.loads(data.stdout)["nodes"]}
    assert nodes[scene.spot]["rejections"][0]["rule"] == "critical-off-spot"
    # free CPU: `free` 4 - 0, `busy` 8 - 5 (the running pod counts): MinMax 10 and 0
    assert (nodes[scene.free]["score"], nodes[scene.busy]["score"]) == (10, 0)
    # and the emulated scheduler counts the running pod too: busy is the fuller node
    fit = {
        name: next(
            s["score"]
            for s in nodes[name]["scheduler"]["scores"]
            if s["plugin"] == "NodeResourcesFit"
        )
        for name in (scene.free, scene.busy)
    }
    assert fit[scene.free] > fit[scene.busy]


def test_simulate_cluster_matches_a_namespace_selector_against_the_live_namespaces_labels(
    control_plane: ControlPlane, admin: KubeClient, scene: Scene
) -> None:
    # the running pod's namespace gets a label of its own; a pod elsewhere keeps away
    # from every pod of the namespaces that carry it
    owner = _unique("owner")
    admin.merge_patch(
        f"/api/v1/namespaces/{scene.namespace}", {"metadata": {"labels": {"owner": owner}}}
    )
    away = pod("away")
    away["metadata"]["namespace"] = "default"
    term = {
        "labelSelector": {},
        "namespaceSelector": {"matchLabels": {"owner": owner}},
        "topologyKey": "kubernetes.io/hostname",
    }
    away["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    }
    (scene.folder / "away.yaml").write_text(yaml.safe_dump(away))
    run = _simulate(
        *("--rules", str(scene.current), "--pod", str(scene.folder / "away.yaml"), "--cluster"),
        *("--kubeconfig", str(control_plane.admin_kubeconfig), "-o", "json"),
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["scheduler"]["namespacesKnown"] is True
    rejected = {
        n["name"]: n["scheduler"]["rejection"]["reasons"]
        for n in data["nodes"]
        if n["scheduler"]["rejection"]
    }
    assert rejected == {scene.busy: ["node(s) didn't match pod anti-affinity rules"]}


@pytest.mark.parametrize("current_from", ["path", "configmap"])
def test_pending_shows_which_pods_a_candidate_rule_set_helps_or_hurts(
    control_plane: ControlPlane, admin: KubeClient, scene: Scene, current_from: str
) -> None:
    if current_from == "path":
        current = ["--current", str(scene.current)]
    else:
        data = {p.name: p.read_text() for p in scene.current.iterdir()}
        data["README.md"] = "not a policy: only the policy keys are read"
        configmap = {"metadata": {"name": "rules"}, "data": data}
        admin.create(f"/api/v1/namespaces/{scene.namespace}/configmaps", configmap)
        current = ["--current-configmap", f"{scene.namespace}/rules"]
    args = [
        "--rules",
        str(scene.candidate),
        "--pending",
        *current,
        "--cluster",
        "--kubeconfig",
        str(control_plane.admin_kubeconfig),
        "--scheduler-name",
        scene.scheduler,
    ]
    data = _simulate(*args, "-o", "yaml")
    assert data.returncode == 0, data.stderr
    pods = {p["name"]: p for p in yaml.safe_load(data.stdout)["pods"]}
    assert {name: p["verdict"] for name, p in pods.items()} == {
        "critical": "best node changes",
        "gpu": "becomes schedulable",
        "team": "becomes unschedulable",
        "plain": "unchanged",
    }
    critical = pods["critical"]
    assert (critical["before"]["best"], critical["after"]["best"]) == (scene.spot, scene.free)
    assert (critical["before"]["feasible"], critical["after"]["feasible"]) == (3, 2)
    assert pods["team"]["after"]["rejections"] == {"placement/team-nodes": 3}
    table = _simulate(*args)
    assert table.returncode == 0, table.stderr
    assert f"{scene.namespace}/gpu " in table.stdout
    assert "rejected by placement/team-nodes on 3 nodes" in table.stdout
    assert table.stdout.rstrip().endswith(
        "4 pending pods: 1 becomes unschedulable, 1 becomes schedulable, "
        "1 best node changes, 1 unchanged"
    )


def test_an_identity_without_rbac_is_told_which_permission_it_lacks(
    control_plane: ControlPlane, scene: Scene, tmp_path: Path
) -> None:
    # not `policyext`: the session may have granted it the extender's RBAC already
    kubeconfig = control_plane.write_kubeconfig(NOBODY, tmp_path / "nobody.kubeconfig")
    run = _simulate(
        "--rules",
        str(scene.candidate),
        "--pod",
        str(scene.folder / "critical-pod.yaml"),
        "--cluster",
        "--kubeconfig",
        str(kubeconfig),
    )
    assert run.returncode == 1
    assert run.stderr.startswith(f"error: the API server at {control_plane.server} forbids it")
    assert "needs the permission `list` on `nodes` cluster-wide" in run.stderr
    assert run.stderr.count("\n") == 1  # one line, no traceback


def test_an_unreachable_api_server_is_one_line_and_status_1(
    control_plane: ControlPlane, scene: Scene, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "nowhere.kubeconfig"
    document = yaml.safe_load(control_plane.admin_kubeconfig.read_text())
    document["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"
    kubeconfig.write_text(yaml.safe_dump(document))
    run = _simulate(
        "--rules",
        str(scene.candidate),
        "--pending",
        "--current",
        str(scene.current),
        "--cluster",
        "--kubeconfig",
        str(kubeconfig),
    )
    assert run.returncode == 1
    assert run.stderr.startswith("error: cannot reach the Kubernetes API at https://127.0.0.1:")
    assert run.stderr.count("\n") == 1
