"""The scheduler emulation against the real kube-scheduler: randomized nodes (labels,
taints, capacity, cordons, pods already bound) and pods (requests, tolerations, node
selectors and affinity, host ports, spread constraints, pod (anti-)affinity), scheduled one
at a time by kube-scheduler 1.37 with policyext as its extender; and a round whose pods live
in namespaces with random labels, their (anti-)affinity terms choosing namespaces by list
and by namespaceSelector. Before each pod is created, the emulation decides it from the
cluster as the API shows it (Nodes, Pods and Namespaces); then

- a pod kube-scheduler binds must be on the emulation's best node or one tied with it;
- a pod the emulation calls unschedulable must stay Pending, and its FailedScheduling
  event must give the same `0/N nodes are available: ...` reasons.

Seeded: a failure names its seed, and POLICYEXT_E2E_SEED=<seed> replays that round.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from policyext.cluster.snapshot import SnapshotSource
from policyext.offline.scheduler.cluster import Cluster
from policyext.offline.scheduler.decision import Decision, decide
from policyext.policy.compile import PolicySet, load_policy_set
from tests.e2e.controlplane import ControlPlane, KubeClient, fake_node
from tests.e2e.extender import PROBE_POLICY, Extender, policyext_argv, scheduler_config
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

SCHEDULER = "emulation-differential"
SEEDS = (
    [int(os.environ["POLICYEXT_E2E_SEED"])]
    if "POLICYEXT_E2E_SEED" in os.environ
    else [2, 5, 7, 11, 23]
)
NODES_PER_ROUND = 5
PODS_PER_ROUND = 10
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
APPS = ("web", "db", "cache")
TEAMS = ("red", "blue")
NAMESPACES_PER_ROUND = 3
NAMESPACE_SEEDS = (
    [int(os.environ["POLICYEXT_E2E_SEED"])]
    if "POLICYEXT_E2E_SEED" in os.environ
    else [3, 13, 29, 31, 41]
)

# a filter and two scores that read only labels, so that the extender and the emulation
# see the same thing whatever the extender's caches hold at the moment
POLICIES = {
    "gold.yaml": """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: gold}
spec:
  filters:
    - name: gold-pods-on-gold-nodes
      expression: "pod.metadata.?labels.?tier.orValue('') != 'gold' || node.metadata.?labels.?tier.orValue('') == 'gold'"
      message: "gold pods run on gold nodes"
  scores:
    - name: rank
      expression: "int(node.metadata.?labels.?rank.orValue('0'))"
      normalize: MinMax
    - name: zone-a
      expression: "node.metadata.?labels[?'topology.kubernetes.io/zone'].orValue('') == 'a' ? 10 : 0"
      weight: 2
""",
    "e2e-probe.yaml": PROBE_POLICY,
}


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("emulation-rules")
    for name, text in POLICIES.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def extender(
    control_plane: ControlPlane, policyext_kubeconfig: Path, rules: Path
) -> Iterator[Extender]:
    server = Extender(control_plane, policyext_kubeconfig, [rules], name="policyext-emulation")
    server.start()
    try:
        config = scheduler_config(server.url, SCHEDULER, bind=False)
        control_plane.start_scheduler(config, name=SCHEDULER)
        yield server
    finally:
        if SCHEDULER in control_plane.components:
            control_plane.stop_component(SCHEDULER)
        server.stop()


# --------------------------------------------------------------------------- the cluster


def _random_node(rng: random.Random, name: str) -> dict[str, Any]:
    labels = {
        ZONE: rng.choice("abc"),
        "tier": rng.choice(("gold", "silver", "silver")),
        "disk": rng.choice(("ssd", "hdd")),
        "rank": str(rng.randint(0, 5)),
    }
    taints = []
    if rng.random() < 0.3:
        effect = rng.choice(("NoSchedule", "NoSchedule", "PreferNoSchedule"))
        taints.append({"key": "dedicated", "value": rng.choice(("ml", "web")), "effect": effect})
    return fake_node(
        name,
        cpu=rng.choice(("2", "4", "8")),
        memory=rng.choice(("4Gi", "8Gi", "16Gi")),
        pods=rng.choice((3, 110, 110)),
        labels=labels,
        taints=taints,
        unschedulable=rng.random() < 0.1,
    )


def _container(rng: random.Random, *, host_port: bool) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": "e2e.invalid/pause:1",
        "resources": {
            "requests": {
                "cpu": rng.choice(("100m", "500m", "1", "3", "6")),
                "memory": rng.choice(("64Mi", "1Gi", "6Gi")),
            }
        },
    }
    if host_port:
        container["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    return container


def _bound_pod(rng: random.Random, name: str, node: str) -> dict[str, Any]:
    app = rng.choice(APPS)
    spec: dict[str, Any] = {
        "nodeName": node,
        "schedulerName": SCHEDULER,
        "automountServiceAccountToken": False,
        "containers": [_container(rng, host_port=rng.random() < 0.2)],
    }
    spec["containers"][0]["resources"]["requests"]["cpu"] = rng.choice(("100m", "500m", "1"))
    if rng.random() < 0.2:
        spec["affinity"] = {"podAntiAffinity": _terms(app, HOSTNAME)}
    return {"metadata": {"name": name, "labels": {"app": app}}, "spec": spec}


def _terms(app: str, key: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"requiredDuringSchedulingIgnoredDuringExecution": [term]}


def _random_pod(rng: random.Random, name: str) -> dict[str, Any]:
    app = rng.choice(APPS)
    labels = {"app": app}
    if rng.random() < 0.2:
        labels["tier"] = "gold"
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER,
        "automountServiceAccountToken": False,
        "containers": [_container(rng, host_port=rng.random() < 0.15)],
    }
    if rng.random() < 0.35:
        spec["tolerations"] = [
            rng.choice(
                (
                    {
                        "key": "dedicated",
                        "operator": "Equal",
                        "value": "ml",
                        "effect": "NoSchedule",
                    },
                    {"key": "dedicated", "operator": "Exists"},
                    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
                )
            )
        ]
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"disk": "ssd"}
    affinity: dict[str, Any] = {}
    if rng.random() < 0.15:
        term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b"]}]}
        affinity.setdefault("nodeAffinity", {})[
            "requiredDuringSchedulingIgnoredDuringExecution"
        ] = {"nodeSelectorTerms": [term]}
    if rng.random() < 0.25:
        preference = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]}
        affinity.setdefault("nodeAffinity", {})[
            "preferredDuringSchedulingIgnoredDuringExecution"
        ] = [{"weight": rng.randint(1, 100), "preference": preference}]
    if rng.random() < 0.15:
        affinity["podAntiAffinity"] = _terms(app, HOSTNAME)
    if rng.random() < 0.1:
        affinity["podAffinity"] = _terms(rng.choice(APPS), ZONE)
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.2:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    return {"metadata": {"name": name, "labels": labels}, "spec": spec}


# --------------------------------------------------------------------------- the emulation


def _listed(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    for item in items:
        item["kind"] = kind  # list items come without it
    return items


def _emulate(admin: KubeClient, policies: PolicySet, pod: dict[str, Any]) -> Decision:
    """The emulation's decision from the cluster as the API shows it right now."""
    nodes = _listed(admin.get("/api/v1/nodes")["items"], "Node")
    pods = _listed(admin.get("/api/v1/pods")["items"], "Pod")
    namespaces = _listed(admin.get("/api/v1/namespaces")["items"], "Namespace")
    source = SnapshotSource([*nodes, *pods, *namespaces])
    ordered = list(source.nodes.values())
    cluster = Cluster(ordered, source.pods, source.namespaces)
    return decide(policies, pod, ordered, source, None, cluster)


def _failed_scheduling(admin: KubeClient, namespace: str, name: str) -> str | None:
    listed = admin.get(
        f"/api/v1/namespaces/{namespace}/events",
        fieldSelector=f"involvedObject.name={name},reason=FailedScheduling",
    )
    items = listed["items"]
    return str(items[0]["message"]) if items else None


def _outcome(admin: KubeClient, namespace: str, name: str) -> tuple[str, str]:
    """("bound", node) or ("failed", FailedScheduling message), whichever comes first."""

    def seen() -> tuple[str, str] | None:
        stored = admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        if stored["spec"].get("nodeName"):
            return "bound", str(stored["spec"]["nodeName"])
        message = _failed_scheduling(admin, namespace, name)
        return ("failed", message) if message else None

    return eventually(seen)


def _wait_until_the_extender_sees(extender: Extender, bound: dict[str, int]) -> None:
    """The extender's caches hold the round's nodes and their pods; kube-scheduler watches
    the same API server, so its own cache has them by then too."""
    eventually(
        lambda: {n: int(v["pods-seen"]) for n, v in extender.probe(list(bound)).items()} == bound
    )


def _in(namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["metadata"]["namespace"] = namespace
    return manifest


def _play_round(
    admin: KubeClient,
    extender: Extender,
    rules: Path,
    seed: int,
    rng: random.Random,
    bound_pod: Callable[[str, str], dict[str, Any]],
    new_pod: Callable[[str], dict[str, Any]],
) -> None:
    """Random nodes (from `rng`, the round's) with `bound_pod(name, node)` bound to them,
    then `new_pod(name)` one at a time, each placed by kube-scheduler where the emulation
    says (the pods name their namespace)."""
    policies = load_policy_set([rules])
    suffix = uuid.uuid4().hex[:5]
    bound: dict[str, int] = {}
    for i in range(NODES_PER_ROUND):
        name = f"n{i}-{suffix}"
        admin.create_fake_node(_random_node(rng, name))
        bound[name] = 0
        for j in range(rng.randint(0, 2)):
            manifest = bound_pod(f"bound{i}-{j}", name)
            admin.create(f"/api/v1/namespaces/{manifest['metadata']['namespace']}/pods", manifest)
            bound[name] += 1
    _wait_until_the_extender_sees(extender, bound)

    checked = {"bound": 0, "failed": 0}
    for k in range(PODS_PER_ROUND):
        name = f"pod{k}"
        manifest = new_pod(name)
        namespace = manifest["metadata"]["namespace"]
        decision = _emulate(admin, policies, manifest)
        admin.create(f"/api/v1/namespaces/{namespace}/pods", manifest)
        outcome, detail = _outcome(admin, namespace, name)
        context = f"seed {seed}, {namespace}/{name}: {manifest['spec']}"
        if outcome == "bound":
            assert detail in decision.tied(), (
                f"{context}: kube-scheduler bound it to {detail}; the emulation's best: "
                f"{decision.tied()} ({decision.unschedulable_message()})"
            )
        else:
            expected = decision.unschedulable_message()
            assert expected is not None, (
                f"{context}: kube-scheduler found no node ({detail}); the emulation's best: "
                f"{decision.tied()}"
            )
            assert detail == expected or detail.startswith(expected + " "), context
            # kept out of the later pods' way: a retry could bind it once they arrive
            admin.delete(f"/api/v1/namespaces/{namespace}/pods/{name}", gracePeriodSeconds="0")
        checked[outcome] += 1
    assert sum(checked.values()) == PODS_PER_ROUND


@pytest.mark.parametrize("seed", SEEDS)
def test_kube_scheduler_places_every_pod_where_the_emulation_says(
    admin: KubeClient, namespace: str, extender: Extender, rules: Path, seed: int
) -> None:
    rng = random.Random(seed)
    _play_round(
        admin,
        extender,
        rules,
        seed,
        rng,
        lambda name, node: _in(namespace, _bound_pod(rng, name, node)),
        lambda name: _in(namespace, _random_pod(rng, name)),
    )


# ------------------------------------------------------- namespaces chosen by their labels


def _namespace_scope(rng: random.Random, namespaces: list[str]) -> dict[str, Any]:
    """Which namespaces a term covers: its pod's own, a list, a namespaceSelector (empty:
    every namespace; by a label; by a label's absence), or a list and a selector."""
    by_team = {"matchLabels": {"team": rng.choice(TEAMS)}}
    not_prod = {"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}
    return rng.choice(
        (
            {},
            {"namespaces": [rng.choice(namespaces)]},
            {"namespaceSelector": {}},
            {"namespaceSelector": by_team},
            {"namespaceSelector": by_team},
            {"namespaceSelector": not_prod},
            {"namespaces": [rng.choice(namespaces)], "namespaceSelector": by_team},
        )
    )


def _scoped_term(rng: random.Random, namespaces: list[str], key: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
        "topologyKey": key,
        **_namespace_scope(rng, namespaces),
    }


def _scoped_affinity(rng: random.Random, namespaces: list[str]) -> dict[str, Any]:
    """Pod (anti-)affinity, required and preferred, over namespaces chosen by label."""
    affinity: dict[str, Any] = {}
    if rng.random() < 0.4:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                _scoped_term(rng, namespaces, HOSTNAME)
            ]
        }
    if rng.random() < 0.25:
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [_scoped_term(rng, namespaces, ZONE)]
        }
    if rng.random() < 0.5:
        kind = rng.choice(("podAffinity", "podAntiAffinity"))
        preferred = {
            "weight": rng.randint(1, 100),
            "podAffinityTerm": _scoped_term(rng, namespaces, rng.choice((ZONE, HOSTNAME))),
        }
        affinity.setdefault(kind, {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
            preferred
        ]
    return affinity


def _pod_in_a_labelled_namespace(
    rng: random.Random, name: str, namespaces: list[str], node: str | None
) -> dict[str, Any]:
    """A small pod in one of the namespaces, with pod (anti-)affinity over them."""
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER,
        "automountServiceAccountToken": False,
        "containers": [_container(rng, host_port=False)],
    }
    spec["containers"][0]["resources"]["requests"]["cpu"] = rng.choice(("100m", "500m"))
    if node:
        spec["nodeName"] = node
    affinity = _scoped_affinity(rng, namespaces)
    if affinity and (node is None or rng.random() < 0.5):
        spec["affinity"] = affinity
    metadata = {
        "name": name,
        "namespace": rng.choice(namespaces),
        "labels": {"app": rng.choice(APPS)},
    }
    return {"metadata": metadata, "spec": spec}


@pytest.fixture
def labelled_namespaces(admin: KubeClient) -> Iterator[list[str]]:
    """Fresh namespaces labelled `team` red or blue, some `env: prod`, and one without
    labels of its own; their pods are force-deleted after the test."""
    names = [f"e2e-ns-{uuid.uuid4().hex[:8]}" for _ in range(NAMESPACES_PER_ROUND)]
    for name in names:
        admin.create_namespace(name)
    yield names
    for name in names:
        admin.request(
            "DELETE", f"/api/v1/namespaces/{name}/pods", query={"gracePeriodSeconds": "0"}
        )


@pytest.mark.parametrize("seed", NAMESPACE_SEEDS)
def test_kube_scheduler_matches_namespace_selectors_as_the_emulation_does(
    admin: KubeClient,
    labelled_namespaces: list[str],
    extender: Extender,
    rules: Path,
    seed: int,
) -> None:
    rng = random.Random(seed)
    for name in labelled_namespaces[1:]:
        labels = {"team": rng.choice(TEAMS)}
        if rng.random() < 0.5:
            labels["env"] = "prod"
        admin.merge_patch(f"/api/v1/namespaces/{name}", {"metadata": {"labels": labels}})
    _play_round(
        admin,
        extender,
        rules,
        seed,
        rng,
        lambda name, node: _pod_in_a_labelled_namespace(rng, name, labelled_namespaces, node),
        lambda name: _pod_in_a_labelled_namespace(rng, name, labelled_namespaces, None),
    )


def test_explain_shows_a_pending_pods_reasons_and_its_failed_scheduling_event(
    control_plane: ControlPlane, admin: KubeClient, namespace: str, extender: Extender, rules: Path
) -> None:
    suffix = uuid.uuid4().hex[:5]
    taint = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
    admin.create_fake_node(fake_node(f"tainted-{suffix}", taints=[taint]))
    admin.create_fake_node(fake_node(f"small-{suffix}", cpu="1"))
    admin.create_fake_node(fake_node(f"silver-{suffix}", cpu="8", labels={"tier": "silver"}))
    manifest = _random_pod(random.Random(0), "waiting")
    manifest["metadata"]["labels"] = {"app": "web", "tier": "gold"}  # gold pods: gold nodes
    manifest["spec"] = {
        "schedulerName": SCHEDULER,
        "automountServiceAccountToken": False,
        "containers": [_container(random.Random(0), host_port=False)],
    }
    manifest["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "2"}
    admin.create(f"/api/v1/namespaces/{namespace}/pods", manifest)
    event = eventually(lambda: _failed_scheduling(admin, namespace, "waiting"))

    run = subprocess.run(
        [
            *policyext_argv("explain", f"{namespace}/waiting", "--cluster"),
            *("--kubeconfig", str(control_plane.admin_kubeconfig), "--rules", str(rules)),
            *("-o", "json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["lastFailedScheduling"]["message"] == event
    assert event.startswith(data["unschedulable"] + " ")
    sides = {n["name"]: n["rejectedBy"] for n in data["nodes"]}
    assert sides[f"tainted-{suffix}"] == "scheduler"
    assert sides[f"small-{suffix}"] == "scheduler"
    assert sides[f"silver-{suffix}"] == "policies"
