"""No overcommit while two extender replicas bind (issue 41 item 4): a burst of pods onto
nearly full nodes, kube-scheduler's bind verb going through a load balancer to two
`policyext serve --bind-verb` processes; after the burst no node's requested CPU exceeds
its allocatable, and every free slot is taken.

Why it holds (kube-scheduler's pkg/scheduler/schedule_one.go and backend/cache): one
scheduler (the leader) decides every pod in turn. At the end of a pod's scheduling cycle it
*assumes* the pod on the chosen node in its own cache, then binds in the background
(`extendersBinding`: the extender's /bind); the next pod's NodeResourcesFit filter already
counts the assumed pod, whichever replica binds it and whenever that replica's watch hears
of it. A failed bind is *forgotten* (`ForgetPod`): the room comes back and the pod is tried
again. A replica binds only the node the scheduler asked for, after its own Enforce filters
pass: a replica whose pod cache lags sees more free room, never less, so it adds no
refusal either. docs/reliability.md ("Binding with several replicas") says where this
stops holding: a policy that is the only check of some capacity (NodeResourcesFit
disabled, or a resource the scheduler ignores).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from tests.e2e.balancer import Balancer, behind_balancer
from tests.e2e.controlplane import ControlPlane, KubeClient, fake_node, pod
from tests.e2e.extender import Extender, bind_count
from tests.waiting import PATIENCE, eventually

pytestmark = pytest.mark.e2e

SCHEDULER: Final = "policy-overcommit"
POOL: Final = "e2e-overcommit-pool"
# The replicas' own check of the room left, evaluated again at each bind on the replica's
# pod cache: what a policy reading nodeInfo.free does while that cache lags
POLICY: Final = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: e2e-room
spec:
  filters:
    - name: cpu-left
      expression: "nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0"
      message: "not enough CPU left on this node"
  scores:
    - name: most-free-cpu
      expression: "nodeInfo.free.cpu.asApproximateFloat()"
"""
NODE_CPU_MILLI: Final = 2000
POD_CPU_MILLI: Final = 100
# CPU taken on each node before the burst: 8, 7, 6 and 5 pods' worth left (26 slots)
TAKEN_MILLI: Final = (1200, 1300, 1400, 1500)
SLOTS: Final = sum((NODE_CPU_MILLI - t) // POD_CPU_MILLI for t in TAKEN_MILLI)
BURST: Final = 50  # pods: nearly twice the room


@dataclass
class Binders:
    replicas: dict[str, Extender]
    balancer: Balancer


@pytest.fixture(scope="module")
def binders(
    control_plane: ControlPlane,
    policyext_kubeconfig: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Binders]:
    folder = tmp_path_factory.mktemp("overcommit")
    rules = folder / "rules"
    rules.mkdir()
    (rules / "e2e-room.yaml").write_text(POLICY)
    pair = {
        name: Extender(
            control_plane,
            policyext_kubeconfig,
            [rules],
            name=f"policyext-bind-{name}",
            binds_for=SCHEDULER,
            ops=True,
        )
        for name in ("a", "b")
    }
    with behind_balancer(
        control_plane, folder, pair, SCHEDULER, bind=True, tests="the overcommit test"
    ) as balancer:
        yield Binders(pair, balancer)


def _full_nodes(admin: KubeClient, namespace: str) -> tuple[str, dict[str, str]]:
    """Nodes of a pool of their own, each with a pod bound to it that takes most of its
    CPU. Returns the pool's label value and node name -> the bound pod's name."""
    pool = uuid.uuid4().hex[:6]
    taken = {}
    for i, milli in enumerate(TAKEN_MILLI):
        name = f"full-{i}-{pool}"
        admin.create_fake_node(
            fake_node(name, cpu=f"{NODE_CPU_MILLI}m", memory="64Gi", labels={POOL: pool})
        )
        manifest = pod(f"resident-{i}", cpu=f"{milli}m")
        manifest["spec"]["nodeName"] = name  # bound at creation, as a DaemonSet's pod
        admin.create(f"/api/v1/namespaces/{namespace}/pods", manifest)
        taken[name] = f"resident-{i}"
    return pool, taken


def _pods(admin: KubeClient, namespace: str) -> list[dict[str, Any]]:
    return list(admin.get(f"/api/v1/namespaces/{namespace}/pods")["items"])


def _failed_pods(admin: KubeClient, namespace: str) -> set[str]:
    """The pods kube-scheduler reported unschedulable at least once."""
    events = admin.get(
        f"/api/v1/namespaces/{namespace}/events", fieldSelector="reason=FailedScheduling"
    )["items"]
    return {e["involvedObject"]["name"] for e in events}


def _milli(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


def test_two_replicas_binding_a_burst_onto_nearly_full_nodes_overcommit_no_node(
    binders: Binders, admin: KubeClient, namespace: str
) -> None:
    pool, _ = _full_nodes(admin, namespace)
    before = {name: bind_count(r.ops_url) for name, r in binders.replicas.items()}
    for i in range(BURST):
        manifest = pod(f"burst-{i:03d}", scheduler_name=SCHEDULER, cpu=f"{POD_CPU_MILLI}m")
        manifest["spec"]["nodeSelector"] = {POOL: pool}
        admin.create(f"/api/v1/namespaces/{namespace}/pods", manifest)

    def settled() -> list[dict[str, Any]] | None:
        """The pods once every slot is taken and every other burst pod was found not to
        fit (the burst is over)."""
        pods = _pods(admin, namespace)
        burst = [p for p in pods if p["metadata"]["name"].startswith("burst-")]
        waiting = {p["metadata"]["name"] for p in burst if not p["spec"].get("nodeName")}
        bound = len(burst) - len(waiting)
        return pods if bound >= SLOTS and waiting <= _failed_pods(admin, namespace) else None

    pods = eventually(settled, timeout=4 * PATIENCE, interval=0.2)

    requested: dict[str, int] = {}
    for p in pods:
        node = p["spec"].get("nodeName")
        if node:
            cpu = p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            requested[node] = requested.get(node, 0) + _milli(cpu)
    over = {n: m for n, m in requested.items() if m > NODE_CPU_MILLI}
    assert over == {}, f"nodes whose requested CPU exceeds the allocatable {NODE_CPU_MILLI}m"
    bound = sum(
        1 for p in pods if p["metadata"]["name"].startswith("burst-") and p["spec"].get("nodeName")
    )
    assert bound == SLOTS  # every free slot taken: no bind was refused for a stale view
    binds = {name: bind_count(r.ops_url) - before[name] for name, r in binders.replicas.items()}
    assert sum(binds.values()) == SLOTS
    assert all(binds.values()), f"one replica bound every pod: nothing was tested ({binds})"
    events = admin.get(
        f"/api/v1/namespaces/{namespace}/events", fieldSelector="reason=FailedScheduling"
    )["items"]
    print(
        f"\n{bound} of {BURST} pods bound onto {SLOTS} free slots; binds per replica: {binds}; "
        f"a pod left pending: {events[0]['message'] if events else '(none)'}"
    )
