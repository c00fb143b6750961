"""The live-cluster adapters against a real API server: the watched node source, the
binder, and the whole extender bound into a real kube-scheduler."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from policyext.cel.lib.quantity import Quantity
from policyext.cluster.binder import ClusterBinder
from policyext.cluster.cache import ClusterSource
from policyext.cluster.client import ApiClients, ClientConfigError, ClusterSettings, api_clients
from policyext.cluster.watch import Reflector
from tests.e2e.controlplane import Component, ControlPlane, KubeClient, fake_node, free_port, pod
from tests.e2e.extender import (
    CRITICAL_OFF_SPOT,
    bind_count,
    http_get,
    policyext_argv,
    spot_and_on_demand,
)
from tests.waiting import PATIENCE, eventually

pytestmark = pytest.mark.e2e

T = TypeVar("T")
NOBODY = "no-such-scheduler"  # pods no running scheduler will pick up


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class _Bind:
    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


def _api(control_plane: ControlPlane) -> ApiClients:
    api = api_clients(ClusterSettings(kubeconfig=str(control_plane.admin_kubeconfig)))
    assert api is not None
    return api


@pytest.fixture
def start_source(control_plane: ControlPlane) -> Iterator[Callable[[], ClusterSource]]:
    """Starts a source on demand (after a test has made what it should list first)."""
    started: list[ClusterSource] = []

    def start() -> ClusterSource:
        source = ClusterSource(_api(control_plane), watch_timeout=60)
        source.start()
        started.append(source)
        assert source.wait_ready(30), "the initial lists did not finish"
        return source

    yield start
    for source in started:
        source.stop()


def _create_pod(admin: KubeClient, namespace: str, name: str, **fields: Any) -> dict[str, Any]:
    manifest = pod(name, scheduler_name=NOBODY, cpu=fields.pop("cpu", "100m"))
    manifest["spec"].update(fields)
    return admin.create(f"/api/v1/namespaces/{namespace}/pods", manifest)


def _info(source: ClusterSource, node: str) -> dict[str, Any]:
    found = source.get_node(node)
    assert found is not None
    return dict(source.node_info(found))


def _cpu(value: str) -> Quantity:
    return Quantity.parse(value)


# --------------------------------------------------------------------------- the source


@pytest.mark.parametrize(
    ("cpus", "requested"),
    [(["100m"], "100m"), (["250m", "500m", "1"], "1750m")],
)
def test_the_source_lists_the_nodes_and_the_pods_bound_to_them(
    admin: KubeClient,
    namespace: str,
    start_source: Callable[[], ClusterSource],
    cpus: list[str],
    requested: str,
) -> None:
    node = _unique("node")
    admin.create_fake_node(fake_node(node, cpu="4"))
    names = [_unique("pod") for _ in cpus]
    for name, cpu in zip(names, cpus, strict=True):
        _create_pod(admin, namespace, name, cpu=cpu, nodeName=node)

    source = start_source()

    info = _info(source, node)
    assert info["podCount"] == len(cpus)
    assert info["requested"]["cpu"] == _cpu(requested)
    assert info["free"]["cpu"] == _cpu("4") - _cpu(requested)
    assert sorted(p["name"] for p in info["pods"]) == sorted(names)
    assert source.ready()


def test_a_label_change_reaches_the_source_as_a_new_node_version(
    admin: KubeClient, start_source: Callable[[], ClusterSource]
) -> None:
    name = _unique("node")
    admin.create_fake_node(fake_node(name))
    source = start_source()
    before = source.node_rows([name])
    assert before.known().all()

    admin.merge_patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {"lifecycle": "spot"}}})

    eventually(
        lambda: (n := source.get_node(name)) and n["metadata"]["labels"].get("lifecycle") and n
    )
    after = source.node_rows([name])
    # a new version number, so no value kept for the old object is served for the new one
    assert after.versions.tolist() != before.versions.tolist()
    assert after.record(0).node["metadata"]["labels"]["lifecycle"] == "spot"
    # rows found before the change read a record when first asked for it: the current one,
    # with its own version numbers (what is worked out from it is kept under those)
    late = before.record(0)
    assert late.node["metadata"]["labels"]["lifecycle"] == "spot"
    assert late.version == after.versions[0] != before.versions[0]


@pytest.mark.parametrize(
    "leave",
    ["delete", "succeed", "fail"],
)
def test_a_pod_arriving_and_leaving_updates_the_node_information(
    admin: KubeClient, namespace: str, start_source: Callable[[], ClusterSource], leave: str
) -> None:
    node = _unique("node")
    admin.create_fake_node(fake_node(node, cpu="2", memory="4Gi"))
    source = start_source()
    empty = source.node_info(source.get_node(node) or {})
    assert (empty["podCount"], _info(source, node)["requested"]["cpu"]) == (0, _cpu("0"))

    name = _unique("pod")
    _create_pod(admin, namespace, name, cpu="300m", nodeName=node)
    counted = eventually(lambda: (i := _info(source, node))["podCount"] == 1 and i)

    assert counted["requested"]["cpu"] == _cpu("300m")
    assert counted["free"]["cpu"] == _cpu("1700m")
    assert counted["free"]["memory"] == Quantity.parse("4Gi") - Quantity.parse("64Mi")
    generation = source.node_info(source.get_node(node) or {}).generation
    assert generation > empty.generation

    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    if leave == "delete":
        admin.delete(path, gracePeriodSeconds="0")
    else:
        phase = {"succeed": "Succeeded", "fail": "Failed"}[leave]
        admin.merge_patch(f"{path}/status", {"status": {"phase": phase}})
    gone = eventually(lambda: (i := _info(source, node))["podCount"] == 0 and i)

    assert gone["requested"]["cpu"] == _cpu("0")
    assert source.node_info(source.get_node(node) or {}).generation > generation
    # a finished pod no longer matches the watch's selector: it is not kept at all
    assert source.pod(namespace, name) is None


def test_the_source_holds_no_finished_pods_and_no_pending_pods_until_it_binds(
    control_plane: ControlPlane,
    admin: KubeClient,
    namespace: str,
    start_source: Callable[[], ClusterSource],
) -> None:
    node = _unique("node")
    admin.create_fake_node(fake_node(node))
    pending, finished, running = _unique("pending"), _unique("finished"), _unique("running")
    _create_pod(admin, namespace, pending, cpu="100m")
    _create_pod(admin, namespace, finished, cpu="200m", nodeName=node)
    admin.merge_patch(
        f"/api/v1/namespaces/{namespace}/pods/{finished}/status",
        {"status": {"phase": "Succeeded"}},
    )
    _create_pod(admin, namespace, running, cpu="300m", nodeName=node)

    source = start_source()  # what the list brings

    assert source.pod(namespace, finished) is None
    assert source.pod(namespace, running) is not None
    assert _info(source, node)["requested"]["cpu"] == _cpu("300m")
    # a scheduler that binds its pods itself: their events before the binding are not read
    assert source.pod(namespace, pending) is None

    first = _unique("first")
    uid = _create_pod(admin, namespace, first, cpu="400m")["metadata"]["uid"]
    assert ClusterBinder(_api(control_plane), source).bind(_Bind(first, namespace, uid, node)) == ""

    # the extender binds: from then on the pending pods are held, for the binds to come
    eventually(lambda: source.pod(namespace, pending))
    assert source.pod(namespace, finished) is None
    assert _info(source, node)["requested"]["cpu"] == _cpu("700m")


def test_a_restarted_source_relists_and_forgets_what_vanished_meanwhile(
    admin: KubeClient, namespace: str, start_source: Callable[[], ClusterSource]
) -> None:
    kept, dropped = _unique("node"), _unique("node")
    for name in (kept, dropped):
        admin.create_fake_node(fake_node(name))
    old_pod, new_pod = _unique("pod"), _unique("pod")
    _create_pod(admin, namespace, old_pod, cpu="200m", nodeName=kept)
    source = start_source()
    assert _info(source, kept)["podCount"] == 1
    relists = source.relists

    source.stop()
    admin.delete(f"/api/v1/nodes/{dropped}")
    admin.delete(f"/api/v1/namespaces/{namespace}/pods/{old_pod}", gracePeriodSeconds="0")
    _create_pod(admin, namespace, new_pod, cpu="700m", nodeName=kept)
    source.start()
    assert source.wait_ready(30)

    assert source.relists == relists + 2
    assert source.get_node(dropped) is None
    info = _info(source, kept)
    assert [p["name"] for p in info["pods"]] == [new_pod]
    assert info["requested"]["cpu"] == _cpu("700m")


def test_a_requested_relist_keeps_the_same_view_and_the_watch_goes_on(
    admin: KubeClient, namespace: str, start_source: Callable[[], ClusterSource]
) -> None:
    node = _unique("node")
    admin.create_fake_node(fake_node(node))
    _create_pod(admin, namespace, _unique("pod"), cpu="100m", nodeName=node)
    source = start_source()
    before = _info(source, node)
    relists = source.relists

    relisted = time.monotonic()
    source.relist()
    eventually(lambda: source.relists >= relists + 2)

    assert _info(source, node)["requested"] == before["requested"]
    _create_pod(admin, namespace, _unique("pod"), cpu="100m", nodeName=node)
    after = eventually(lambda: (i := _info(source, node))["podCount"] == 2 and i)
    assert after["requested"]["cpu"] == _cpu("200m")
    # heard from the server since the relist began: the watches resumed after it
    assert source.staleness_seconds() <= time.monotonic() - relisted


class _Recorder:
    def __init__(self) -> None:
        self.lists: list[int] = []
        self.events: list[str] = []

    def replace(self, items: list[dict[str, Any]], started: float) -> None:
        self.lists.append(len(items))

    def apply(self, kind: str, obj: dict[str, Any]) -> None:
        self.events.append(kind)

    def touched(self) -> None:
        pass


class _ExpiredOnce:
    """The real list call, but the first watch is answered as a server whose history no
    longer reaches the version asked for: one ERROR event with code 410, then the end.
    (The harness's API server keeps all its history in the watch cache, so a real 410
    would take thousands of writes.)"""

    def __init__(self, real: Callable[..., Any]) -> None:
        self.real = real
        self.expired = False

    def __call__(self, **kwargs: Any) -> Any:
        if kwargs.get("watch") and not self.expired:
            self.expired = True
            return _Stream({"type": "ERROR", "object": {"kind": "Status", "code": 410}})
        return self.real(**kwargs)


class _Stream:
    def __init__(self, *events: dict[str, Any]) -> None:
        self.events = events

    def stream(self, amt: int | None = None, decode_content: bool = False) -> Iterator[bytes]:
        for event in self.events:
            yield json.dumps(event).encode() + b"\n"

    def close(self) -> None:
        pass


def test_a_410_gone_on_the_watch_makes_the_reflector_list_again_and_watch_on(
    control_plane: ControlPlane, admin: KubeClient
) -> None:
    list_node = _ExpiredOnce(_api(control_plane).core.list_node)
    recorder = _Recorder()
    reflector = Reflector("nodes", list_node, recorder)
    reflector.start()
    try:
        eventually(lambda: reflector.relists == 2)
        admin.create_fake_node(fake_node(_unique("node")))
        eventually(lambda: "ADDED" in recorder.events)
    finally:
        reflector.stop()

    assert list_node.expired
    assert len(recorder.lists) == 2


# --------------------------------------------------------------------------- the binder


@pytest.mark.parametrize("bind", ["first", "later"])
def test_the_binder_binds_a_pod_and_the_source_counts_it_at_once(
    control_plane: ControlPlane,
    admin: KubeClient,
    namespace: str,
    start_source: Callable[[], ClusterSource],
    bind: str,
) -> None:
    node = _unique("node")
    admin.create_fake_node(fake_node(node))
    name = _unique("pod")
    created = _create_pod(admin, namespace, name, cpu="400m")
    source = start_source()
    binder = ClusterBinder(_api(control_plane), source)
    if bind == "later":  # the pod watch holds the pod already: nothing is read back
        other, elsewhere = _unique("other"), _unique("node")
        admin.create_fake_node(fake_node(elsewhere))
        uid = _create_pod(admin, namespace, other, cpu="100m")["metadata"]["uid"]
        assert binder.bind(_Bind(other, namespace, uid, elsewhere)) == ""
        eventually(lambda: source.pod(namespace, name))
    else:  # the first bind: the pod watch has left the pending pod out, the binder reads it
        assert source.pod(namespace, name) is None

    error = binder.bind(_Bind(name, namespace, created["metadata"]["uid"], node))

    assert error == ""
    info = _info(source, node)  # no wait: assumed
    assert (info["podCount"], info["requested"]["cpu"]) == (1, _cpu("400m"))
    stored = admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    assert stored["spec"]["nodeName"] == node
    # the watch event of the binding replaces the assumption without counting it twice
    eventually(lambda: ((source.pod(namespace, name) or {}).get("spec") or {}).get("nodeName"))
    assert _info(source, node)["requested"]["cpu"] == _cpu("400m")


@pytest.mark.parametrize(
    ("second", "expected"),
    [
        ("same node", ""),
        ("other node", "is already bound to node"),
        ("other uid", "was replaced"),
    ],
)
def test_a_second_bind_succeeds_only_for_the_same_pod_and_node(
    control_plane: ControlPlane,
    admin: KubeClient,
    namespace: str,
    start_source: Callable[[], ClusterSource],
    second: str,
    expected: str,
) -> None:
    first_node, other_node = _unique("node"), _unique("node")
    for n in (first_node, other_node):
        admin.create_fake_node(fake_node(n))
    name = _unique("pod")
    uid = _create_pod(admin, namespace, name)["metadata"]["uid"]
    source = start_source()
    binder = ClusterBinder(_api(control_plane), source)
    assert binder.bind(_Bind(name, namespace, uid, first_node)) == ""

    again = {
        "same node": _Bind(name, namespace, uid, first_node),
        "other node": _Bind(name, namespace, uid, other_node),
        "other uid": _Bind(name, namespace, str(uuid.uuid4()), first_node),
    }[second]
    error = binder.bind(again)

    if expected:
        assert expected in error
    else:
        assert error == ""
    assert admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")["spec"]["nodeName"] == (
        first_node
    )
    assert _info(source, first_node)["podCount"] == 1
    assert _info(source, other_node)["podCount"] == 0


def test_a_binding_with_a_stale_uid_is_refused_by_the_api_server(
    control_plane: ControlPlane, admin: KubeClient, namespace: str
) -> None:
    node = _unique("node")
    admin.create_fake_node(fake_node(node))
    name = _unique("pod")
    _create_pod(admin, namespace, name)

    error = ClusterBinder(_api(control_plane)).bind(_Bind(name, namespace, str(uuid.uuid4()), node))

    assert "was replaced" in error
    assert not admin.get(f"/api/v1/namespaces/{namespace}/pods/{name}")["spec"].get("nodeName")


def test_a_bind_that_cannot_reach_the_api_server_is_retried_then_reported() -> None:
    from kubernetes import client as k8s

    unreachable = k8s.Configuration(host=f"https://127.0.0.1:{free_port()}")  # nobody there
    unreachable.retries = 0  # count our retries, not urllib3's
    pauses: list[float] = []
    binder = ClusterBinder(
        ApiClients.over(k8s.ApiClient(unreachable)),
        retry_budget=1.0,
        clock=lambda: sum(pauses),  # time passes only in the pauses: no real waiting
        sleep=pauses.append,
    )

    error = binder.bind(_Bind("p", "default", "", "n"))

    assert error.startswith("binding pod default/p to node n failed:")
    assert len(pauses) >= 2
    assert sum(pauses) <= 1.0


@pytest.mark.parametrize(
    ("settings", "outcome"),
    [
        (ClusterSettings(), "none"),
        (ClusterSettings(kubeconfig="/nonexistent/kubeconfig"), "error"),
        (ClusterSettings(in_cluster=True), "error"),  # not in a pod: no service account
        ("admin", "client"),
    ],
)
def test_the_connection_is_configured_from_a_kubeconfig_or_nothing(
    control_plane: ControlPlane, settings: ClusterSettings | str, outcome: str
) -> None:
    if settings == "admin":
        settings = ClusterSettings(kubeconfig=str(control_plane.admin_kubeconfig))
    assert isinstance(settings, ClusterSettings)
    if outcome == "error":
        with pytest.raises(ClientConfigError):
            api_clients(settings)
        return
    api = api_clients(settings)
    if outcome == "none":
        assert api is None
    else:
        assert api is not None
        assert api.host == control_plane.server


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def policy_scheduler(
    control_plane: ControlPlane,
    policyext_kubeconfig: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """Our extender (`policyext serve --kubeconfig`, as the `policyext` identity with the
    extender's RBAC) and a kube-scheduler profile that calls it and lets it bind; yields
    the extender's URL."""
    folder = tmp_path_factory.mktemp("policy-scheduler")
    rules = folder / "rules"
    rules.mkdir()
    (rules / "critical-off-spot.yaml").write_text(CRITICAL_OFF_SPOT)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    config = subprocess.run(
        policyext_argv("config", "--url", url, "--bind", "--scheduler-name", "policy-scheduler"),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert yaml.safe_load(config)["extenders"][0]["nodeCacheCapable"] is True
    server = Component(
        "policyext",
        policyext_argv(
            "serve",
            "--kubeconfig",
            str(policyext_kubeconfig),
            "--rules",
            str(rules),
            "--bind",
            f"127.0.0.1:{port}",
            "--bind-verb",
            "--scheduler-name",
            "policy-scheduler",
        ),
        control_plane.logdir / "policyext.log",
    )
    server.start()
    try:
        # ready once the policies are loaded and both watches have listed
        server.wait_ready(lambda: http_get(f"{url}/readyz")[0] == 200, timeout=PATIENCE)
        control_plane.start_scheduler(config, name="policy-scheduler")
        yield url
    finally:
        if "policy-scheduler" in control_plane.components:
            control_plane.stop_component("policy-scheduler")
        server.stop()


@pytest.mark.parametrize(
    ("labels", "lands_on"),
    [({"critical": "true"}, "on-demand"), ({}, "spot")],
)
def test_the_scheduler_places_pods_through_the_extender_which_binds_them(
    admin: KubeClient,
    namespace: str,
    policy_scheduler: str,
    labels: dict[str, str],
    lands_on: str,
) -> None:
    suffix = spot_and_on_demand(admin)
    name = _unique("pod")
    binds = bind_count(policy_scheduler)
    admin.create(
        f"/api/v1/namespaces/{namespace}/pods",
        pod(name, scheduler_name="policy-scheduler", labels=labels),
    )

    seen = admin.wait_for(
        f"/api/v1/namespaces/{namespace}/pods/{name}",
        lambda p: bool(p["spec"].get("nodeName")),
    )

    assert seen["spec"]["nodeName"] == f"{lands_on}-{suffix}"
    # an extender that binds replaces the scheduler's own binder: the bind was ours
    # (counted once our handler returns, a moment after the API shows the binding)
    eventually(lambda: bind_count(policy_scheduler) == binds + 1)


def test_serve_refuses_a_snapshot_and_a_kubeconfig_together(tmp_path: Path) -> None:
    done = subprocess.run(
        policyext_argv("serve", "--snapshot", "x.yaml", "--kubeconfig", "y", "--rules", "r"),
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "exclude each other" in done.stderr
