"""Two extender replicas behind a load balancer (tests/e2e/balancer.py: HAProxy in TCP
mode, checking /readyz, as a Service with readiness), kube-scheduler calling them through
it, and a burst of pods while a replica leaves: restarted one after the other (SIGTERM,
its drain window, a new one), or killed (SIGKILL). Every pod is bound where the policies
put it, as in a run where no replica leaves; a drained replica fails no call, a killed
one's failed calls are retried by kube-scheduler.

The burst comes in waves, each created at a moment of the restarts (while a replica
drains, while the new one starts), so that the scheduler is calling at those moments
whatever the machine's speed. The figures (calls a leaving replica answered while it
drained, the time to bind every pod, the scheduler's failed attempts) are printed with
`-s` and written in docs/reliability.md.
"""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from tests.e2e.balancer import Balancer, behind_balancer
from tests.e2e.controlplane import ControlPlane, KubeClient, fake_node, pod
from tests.e2e.extender import Extender
from tests.waiting import PATIENCE, eventually

pytestmark = pytest.mark.e2e

SCHEDULER: Final = "policy-replicas"
GROUP: Final = "e2e-ha-group"
FORBIDDEN: Final = "e2e-ha-forbidden"
# pods with a group label go to the node of their group; never to a forbidden node (one of
# which has group a too: without the filter, it would tie with the node of group a)
POLICY: Final = f"""\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: e2e-ha
spec:
  match:
    conditions:
      - name: has-group
        expression: "pod.metadata.?labels[?'{GROUP}'].hasValue()"
  filters:
    - name: not-forbidden
      expression: "node.metadata.?labels[?'{FORBIDDEN}'].orValue('') != 'true'"
      message: "this node is forbidden to grouped pods"
  scores:
    - name: own-group
      expression: "node.metadata.?labels[?'{GROUP}'].orValue('') == pod.metadata.labels['{GROUP}'] ? 10 : 0"
"""
# the drain window of each replica: well above the balancer's reaction (its check interval)
DRAIN: Final = 3.0
WAVE: Final = 50  # pods per wave; five waves a burst
WAVES: Final = 5
# the node each group's pods belong on, by role (node names carry a suffix per test)
EXPECTED: Final = {"a": "group-a", "b": "group-b"}
# the calls of a wave a replica answers before it is killed (filter and prioritize: a pod
# is two calls)
MID_WAVE: Final = 20
# pods whose prioritize call a kill may cut: those in flight on the connection it cut, and
# those sent in the balancer's reaction time (one check interval) to the dead replica
MAX_MISSED: Final = 5


@dataclass
class Replicas:
    control_plane: ControlPlane
    replicas: dict[str, Extender]
    balancer: Balancer

    def ready(self) -> None:
        """Both replicas running, ready, and taken by the balancer."""
        for replica in self.replicas.values():
            if not replica.component.running():
                replica.start()
            replica.wait_ready()
        self.balancer.wait_up(*self.replicas)


@pytest.fixture(scope="module")
def replicas(
    control_plane: ControlPlane,
    policyext_kubeconfig: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Replicas]:
    folder = tmp_path_factory.mktemp("replicas")
    rules = folder / "rules"
    rules.mkdir()
    (rules / "e2e-ha.yaml").write_text(POLICY)
    pair = {
        name: Extender(
            control_plane,
            policyext_kubeconfig,
            [rules],
            name=f"policyext-{name}",
            args=("--shutdown-delay", f"{DRAIN:g}"),
            ops=True,
        )
        for name in ("a", "b")
    }
    with behind_balancer(
        control_plane, folder, pair, SCHEDULER, bind=False, tests="the replica tests"
    ) as balancer:
        yield Replicas(control_plane, pair, balancer)


def _nodes(admin: KubeClient) -> dict[str, str]:
    """The nodes of a test: role -> name. Roomy, so that filling them moves no score."""
    suffix = uuid.uuid4().hex[:6]
    labels: dict[str, dict[str, str]] = {
        "group-a": {GROUP: "a"},
        "group-b": {GROUP: "b"},
        "any": {},
        "forbidden": {GROUP: "a", FORBIDDEN: "true"},
    }
    names = {}
    for role, node_labels in labels.items():
        name = f"ha-{role}-{suffix}"
        admin.create_fake_node(
            fake_node(name, cpu="1000", memory="4000Gi", pods=2000, labels=node_labels)
        )
        names[role] = name
    return names


@dataclass
class Burst:
    """Pods created in waves; each pod's group is its index's parity."""

    admin: KubeClient
    namespace: str
    created: int = 0
    started: float = 0.0

    def wave(self) -> None:
        if not self.started:
            self.started = time.monotonic()
        first = self.created
        self.created += WAVE

        def create(i: int) -> None:
            manifest = pod(f"p{i:04d}", scheduler_name=SCHEDULER, labels={GROUP: "ab"[i % 2]})
            self.admin.create(f"/api/v1/namespaces/{self.namespace}/pods", manifest)

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(create, range(first, self.created)))

    def placements(self) -> dict[str, str]:
        """Pod -> node, once every pod created is bound; and the seconds since the first
        wave when that was seen."""
        items = self.admin.get(f"/api/v1/namespaces/{self.namespace}/pods")["items"]
        return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in items}

    def all_bound(self) -> tuple[dict[str, str], float]:
        def bound() -> dict[str, str] | None:
            found = self.placements()
            return found if len(found) == self.created and all(found.values()) else None

        found = eventually(bound, timeout=4 * PATIENCE, interval=0.1)
        return found, time.monotonic() - self.started

    def failed_attempts(self) -> list[dict[str, Any]]:
        """The scheduler's FailedScheduling Events in the namespace."""
        return list(
            self.admin.get(
                f"/api/v1/namespaces/{self.namespace}/events",
                fieldSelector="reason=FailedScheduling",
            )["items"]
        )


def _roles(placements: dict[str, str], nodes: dict[str, str]) -> dict[str, str]:
    role_of = {name: role for role, name in nodes.items()}
    return {pod_name: role_of.get(node, node) for pod_name, node in placements.items()}


def _decisions(replica: Extender) -> int:
    """The decision lines (filter and prioritize answers) in the replica's log so far."""
    count = 0
    for line in replica.component.log_path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                count += "verb" in json.loads(line)
            except ValueError:
                continue
    return count


def _fresh_namespace(admin: KubeClient) -> str:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    admin.create_namespace(name)
    return name


def _run(
    admin: KubeClient, namespace: str, between: Callable[[int], None]
) -> tuple[Burst, dict[str, str], float]:
    """A burst of WAVES waves; `between(i)` runs after wave i (but the last)."""
    burst = Burst(admin, namespace)
    for i in range(WAVES):
        burst.wave()
        if i < WAVES - 1:
            between(i)
    placements, seconds = burst.all_bound()
    return burst, placements, seconds


def _expected_roles(placements: dict[str, str]) -> dict[str, str]:
    return {name: EXPECTED["ab"[int(name[1:]) % 2]] for name in placements}


def test_replicas_restarted_one_after_the_other_mid_burst_fail_no_call_and_lose_no_pod(
    replicas: Replicas, admin: KubeClient, namespace: str
) -> None:
    replicas.ready()
    nodes = _nodes(admin)

    baseline_burst, baseline, baseline_seconds = _run(
        admin, _fresh_namespace(admin), lambda _i: None
    )
    assert _roles(baseline, nodes) == _expected_roles(baseline)
    assert baseline_burst.failed_attempts() == []

    drained: dict[str, int] = {}

    def restart(name: str) -> Callable[[], None]:
        replica = replicas.replicas[name]
        before = _decisions(replica)
        assert replica.component.process is not None
        replica.component.process.send_signal(signal.SIGTERM)  # the arbiter, as the kubelet

        def finish() -> None:
            assert replica.component.process is not None
            assert replica.component.process.wait(PATIENCE) == 0
            drained[name] = _decisions(replica) - before
            replica.start(wait=False)

        return finish

    steps: list[Callable[[], None]] = []

    def between(i: int) -> None:
        # wave 1 arrives while a drains, wave 2 while the new a starts; 3 and 4 the same
        # for b, once the new a is ready (a rolling update waits for it: maxUnavailable 0)
        if i == 2:
            replicas.ready()
        if i in (0, 2):
            steps.append(restart("a" if i == 0 else "b"))
        else:
            steps.pop()()  # the drain is over: a new replica starts

    burst, placements, seconds = _run(admin, namespace, between)
    replicas.ready()

    assert len(placements) == WAVES * WAVE
    assert _roles(placements, nodes) == _roles(baseline, nodes) == _expected_roles(placements)
    assert burst.failed_attempts() == []  # no attempt failed, for the extender or else
    assert sum(drained.values()) > 0, "no call reached a draining replica: nothing was tested"
    print(
        f"\nrestarts: {len(placements)} pods bound in {seconds:.1f} s (without restarts: "
        f"{baseline_seconds:.1f} s); calls answered by each replica while it drained: {drained}"
    )


def test_a_replica_killed_mid_burst_costs_only_retried_attempts_and_loses_no_pod(
    replicas: Replicas, admin: KubeClient, namespace: str
) -> None:
    replicas.ready()
    nodes = _nodes(admin)
    killed: list[str] = []

    def kill_the_one_answering() -> None:
        """Kill the replica that answers wave 1, once it has answered MID_WAVE calls of it:
        mid-burst, with the scheduler's connection on it."""
        counts = {name: _decisions(r) for name, r in replicas.replicas.items()}

        def answering() -> str | None:
            for name, replica in replicas.replicas.items():
                if _decisions(replica) - counts[name] >= MID_WAVE:
                    return name
            return None

        name = eventually(answering, interval=0.01)
        replicas.replicas[name].kill()
        killed.append(name)

    killer = threading.Thread(target=kill_the_one_answering)

    def between(i: int) -> None:
        if i == 0:
            killer.start()  # wave 1 comes next
        elif i == 1:
            killer.join()
        elif i == 2:
            replicas.ready()  # a new one, as the Deployment's controller starts

    burst, placements, seconds = _run(admin, namespace, between)
    replicas.ready()

    assert len(placements) == WAVES * WAVE
    roles = _roles(placements, nodes)
    # the filters hold for every pod: a filter call that fails fails the attempt
    assert "forbidden" not in roles.values()
    # kube-scheduler ignores a prioritize call that fails (the other scores decide): the pod
    # whose prioritize call the kill cut may miss its preferred node, no other
    expected = _expected_roles(placements)
    missed = sorted(p for p, role in roles.items() if role != expected[p])
    assert len(missed) <= MAX_MISSED, missed
    failed = burst.failed_attempts()
    # every failed attempt is the extender's: a refused or cut call to its address, or its
    # own Error (a replica's calls queued while it restarted, answered before it synced)
    ours = (replicas.balancer.url, "policyext's")
    assert all(any(o in e["message"] for o in ours) for e in failed), failed
    print(
        f"\nkill of {killed}: {len(placements)} pods bound in {seconds:.1f} s; failed attempts "
        f"(retried): {sum(e.get('count', 1) for e in failed)} on "
        f"{len({e['involvedObject']['name'] for e in failed})} pods; pods off their "
        f"preferred node (prioritize cut): {missed}"
    )
