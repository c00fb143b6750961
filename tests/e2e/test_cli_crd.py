"""`policyext simulate --cluster --rules-crd` and `policyext explain NS/POD --cluster
--rules-crd` against the real API server: the policies are the cluster's SchedulingPolicy
objects, listed once and loaded as `serve --rules-crd` loads them; one that does not load
is left out, and said by its field path."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from tests.e2e.controlplane import ControlPlane, KubeClient
from tests.e2e.test_crd import POLICIES, STRICT, crd, policies  # noqa: F401 - fixtures
from tests.e2e.test_simulate_cluster import CANDIDATE, MOST_FREE_CPU, Scene, scene  # noqa: F401

pytestmark = pytest.mark.e2e

TYPO = {
    "apiVersion": "policyext.io/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "typo"},
    "spec": {"filters": [{"name": "t", "expression": "node.metadata.labelz.size() == 0"}]},
}
LEFT_OUT = (
    "warning: left out: schedulingpolicy/typo: spec.filters[0].expression: 1:15: "
    "no field 'labelz' in ObjectMeta"
)


def _policyext(control_plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "policyext.cli",
            *args,
            "--cluster",
            "--rules-crd",
            "--kubeconfig",
            str(control_plane.admin_kubeconfig),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_simulate_and_explain_read_the_clusters_schedulingpolicy_objects(
    policies: KubeClient,  # noqa: F811 - the fixture imported above
    control_plane: ControlPlane,
    scene: Scene,  # noqa: F811
) -> None:
    for text in (CANDIDATE, MOST_FREE_CPU):
        policies.request("POST", POLICIES, yaml.safe_load(text), query=STRICT)
    policies.request("POST", POLICIES, TYPO, query=STRICT)  # no webhook: written, never served

    simulated = _policyext(
        control_plane, "simulate", "--pod", str(scene.folder / "critical-pod.yaml")
    )
    assert simulated.returncode == 0, simulated.stderr
    assert LEFT_OUT in simulated.stderr
    nodes = {n["name"]: n for n in json.loads(simulated.stdout)["nodes"]}
    assert nodes[scene.spot]["rejections"][0]["rule"] == "critical-off-spot"
    assert (nodes[scene.free]["score"], nodes[scene.busy]["score"]) == (10, 0)

    explained = _policyext(control_plane, "explain", f"{scene.namespace}/critical")
    assert explained.returncode == 0, explained.stderr
    assert LEFT_OUT in explained.stderr
    sides = {n["name"]: n["rejectedBy"] for n in json.loads(explained.stdout)["nodes"]}
    assert sides[scene.spot] == "policies"
    assert sides[scene.free] is None and sides[scene.busy] is None
