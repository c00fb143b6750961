"""Audit results as policy reports, through the real kube-scheduler and API server: the
report CRD the chart ships, applied; pods scheduled by kube-scheduler with policyext as its
extender (kube-scheduler binding them itself: the extender learns the binding from its pod
watch); one PolicyReport per pod that Audit filters apply to, with `fail`, `pass` and
`error` as the pod's node deserves; the report deleted with its pod by the garbage
collector; and, first, what a cluster without the CRD gets; last, the same as an
openreports.io Report (`--reports-api`).

The extender runs with exactly the chart's rights: its ClusterRole and the reports'."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from policyext.cluster.report_body import OPEN_REPORT
from tests.e2e.binaries import BuildError, ensure_controller_manager
from tests.e2e.controlplane import (
    ADMIN,
    POLICYEXT,
    ApiError,
    Component,
    ControlPlane,
    KubeClient,
    fake_node,
    pod,
)
from tests.e2e.extender import Extender, scheduler_config
from tests.e2e.rbac import wait_until_granted
from tests.e2e.reports import (
    REPORTS,
    grant_report_rights,
    install_report_crd,
    remove_report_crd,
)
from tests.waiting import PATIENCE, eventually

pytestmark = pytest.mark.e2e

Json = dict[str, Any]
SCHEDULER = "policy-reports"
ROLLOUT = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: rollout
spec:
  match:
    podSelector:
      matchLabels: {audited: "true"}
  filters:
    - name: no-spot-nodes
      expression: "node.metadata.?labels[?'lifecycle'].orValue('') != 'spot'"
      mode: Audit
    - name: zone-a-only
      # reads a label without a guard on purpose: it cannot be evaluated where it is missing
      expression: "node.metadata.labels['zone'] == 'a'"
      mode: Audit
"""
# where each test pod goes: the node whose lifecycle its `wants` label names (an Enforce
# rule, so that kube-scheduler still asks about both nodes and binds where the test says)
PLACEMENT = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: placement
spec:
  filters:
    - name: wanted-lifecycle
      expression: >-
        !has(pod.metadata.labels) || !('wants' in pod.metadata.labels) ||
        node.metadata.?labels[?'lifecycle'].orValue('on-demand') == pod.metadata.labels['wants']
"""


@pytest.fixture(scope="module")
def report_rights(control_plane: ControlPlane, policyext_kubeconfig: Path) -> Path:
    """The chart's ClusterRole of the reports, bound to the extender's identity (which has
    the chart's extender ClusterRole already): nothing more."""
    grant_report_rights(control_plane.client())
    wait_until_granted(control_plane.client(POLICYEXT))
    return policyext_kubeconfig


@pytest.fixture(scope="module")
def extender(
    control_plane: ControlPlane, report_rights: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Extender]:
    rules = tmp_path_factory.mktemp("report-rules")
    (rules / "rollout.yaml").write_text(ROLLOUT)
    (rules / "placement.yaml").write_text(PLACEMENT)
    remove_report_crd(control_plane.client())  # the first test is about a cluster without it
    server = Extender(
        control_plane,
        report_rights,
        [rules],
        name="policyext-reports",
        args=["--reports", "--audit-events-per-second", "0"],
    )
    server.start()
    try:
        # kube-scheduler binds: the extender learns each binding from its pod watch
        config = scheduler_config(server.url, SCHEDULER, bind=False)
        control_plane.start_scheduler(config, name=SCHEDULER)
        yield server
    finally:
        if SCHEDULER in control_plane.components:
            control_plane.stop_component(SCHEDULER)
        server.stop()


def _nodes(admin: KubeClient, suffix: str) -> tuple[str, str]:
    """A spot node in zone a and an on-demand node without a zone label."""
    spot, plain = f"spot-{suffix}", f"plain-{suffix}"
    admin.create_fake_node(fake_node(spot, labels={"lifecycle": "spot", "zone": "a"}))
    admin.create_fake_node(fake_node(plain))
    return spot, plain


def _schedule(admin: KubeClient, namespace: str, name: str, labels: dict[str, str]) -> Json:
    admin.create(
        f"/api/v1/namespaces/{namespace}/pods",
        pod(name, scheduler_name=SCHEDULER, labels=labels),
    )
    return admin.wait_for(
        f"/api/v1/namespaces/{namespace}/pods/{name}", lambda p: bool(p["spec"].get("nodeName"))
    )


def _report_path(namespace: str, uid: str) -> str:
    return f"{REPORTS}/namespaces/{namespace}/policyreports/policyext-{uid}"


def _report(admin: KubeClient, namespace: str, uid: str) -> Json | None:
    try:
        return admin.get(_report_path(namespace, uid))
    except ApiError as e:
        if e.status == 404:
            return None
        raise


def test_a_cluster_without_the_report_crd_gets_one_log_line_and_a_metric(
    admin: KubeClient, namespace: str, extender: Extender
) -> None:
    _nodes(admin, uuid.uuid4().hex[:6])
    for i in range(3):
        _schedule(admin, namespace, f"early-{i}", {"audited": "true", "wants": "spot"})

    # the first bound pod's report is answered 404; the others wait for the CRD
    eventually(lambda: extender.metric("policyext_policy_reports_api_available") == 0.0)
    assert extender.metric("policyext_policy_reports_total", {"result": "written"}) == 0.0
    said = extender.component.log_path.read_text()
    assert len(re.findall(r"has no policyreports\.wgpolicyk8s\.io", said)) == 1
    assert extender.component.running()


def test_bound_pods_get_fail_pass_and_error_for_the_node_they_are_on(
    admin: KubeClient, namespace: str, extender: Extender
) -> None:
    install_report_crd(admin)  # noticed by the extender within a minute, without a restart
    spot, plain = _nodes(admin, uuid.uuid4().hex[:6])
    on_spot = _schedule(admin, namespace, "on-spot", {"audited": "true", "wants": "spot"})
    on_plain = _schedule(admin, namespace, "on-plain", {"audited": "true", "wants": "on-demand"})
    assert (on_spot["spec"]["nodeName"], on_plain["spec"]["nodeName"]) == (spot, plain)

    spot_report = eventually(
        lambda: _report(admin, namespace, on_spot["metadata"]["uid"]), timeout=180
    )
    plain_report = eventually(lambda: _report(admin, namespace, on_plain["metadata"]["uid"]))

    def results(report: Json) -> dict[str, str]:
        return {r["rule"]: r["result"] for r in report["results"]}

    assert results(spot_report) == {"no-spot-nodes": "fail", "zone-a-only": "pass"}
    assert results(plain_report) == {"no-spot-nodes": "pass", "zone-a-only": "error"}
    assert spot_report["summary"] == {"pass": 1, "fail": 1, "warn": 0, "error": 0, "skip": 0}
    [failed] = [r for r in spot_report["results"] if r["result"] == "fail"]
    assert failed["source"] == "policyext" and failed["policy"] == "rollout"
    assert failed["message"] == (
        f"would have rejected node {spot}, where the pod was bound"
        " (1 node of the 2 nodes evaluated)"
    )
    assert spot_report["scope"]["uid"] == on_spot["metadata"]["uid"]
    [owner] = spot_report["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "Pod",
        "on-spot",
        on_spot["metadata"]["uid"],
    )
    assert extender.metric("policyext_policy_reports_api_available") == 1.0


def test_a_pod_no_audit_filter_applies_to_gets_no_report(
    admin: KubeClient, namespace: str, extender: Extender
) -> None:
    install_report_crd(admin)
    _nodes(admin, uuid.uuid4().hex[:6])
    plain = _schedule(admin, namespace, "not-audited", {"wants": "on-demand"})
    audited = _schedule(admin, namespace, "audited", {"audited": "true", "wants": "on-demand"})
    # written after the other pod was bound and seen: had it been kept, it would be there
    eventually(lambda: _report(admin, namespace, audited["metadata"]["uid"]), timeout=3 * PATIENCE)
    assert _report(admin, namespace, plain["metadata"]["uid"]) is None


@pytest.fixture
def garbage_collector(control_plane: ControlPlane) -> Iterator[Component]:
    """kube-controller-manager running its garbage collector alone (built from the same
    Kubernetes modules as the rest of the control plane)."""
    try:
        binary = ensure_controller_manager()
    except BuildError as e:
        pytest.fail(f"cannot build kube-controller-manager: {e}")
    kubeconfig = control_plane.write_kubeconfig(
        ADMIN, control_plane.workdir / "controller-manager.kubeconfig"
    )
    component = Component(
        "kube-controller-manager",
        [
            str(binary),
            f"--kubeconfig={kubeconfig}",
            "--controllers=garbagecollector",
            "--leader-elect=false",
            "--secure-port=0",
            "--v=2",
        ],
        control_plane.logdir / "kube-controller-manager.log",
    )
    component.start()
    try:
        yield component
    finally:
        component.stop()


def test_the_report_is_deleted_with_its_pod(
    admin: KubeClient, namespace: str, extender: Extender, garbage_collector: Component
) -> None:
    install_report_crd(admin)
    _nodes(admin, uuid.uuid4().hex[:6])
    scheduled = _schedule(admin, namespace, "short-lived", {"audited": "true", "wants": "spot"})
    uid = scheduled["metadata"]["uid"]
    eventually(lambda: _report(admin, namespace, uid), timeout=3 * PATIENCE)

    admin.delete(f"/api/v1/namespaces/{namespace}/pods/short-lived", gracePeriodSeconds="0")

    eventually(lambda: _report(admin, namespace, uid) is None, timeout=3 * PATIENCE)
    assert garbage_collector.running()


OPEN_SCHEDULER = "policy-open-reports"


@pytest.fixture(scope="module")
def open_reports_extender(
    control_plane: ControlPlane, report_rights: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Extender]:
    """An extender writing openreports.io Reports, with the chart's rights and CRD for them."""
    admin = control_plane.client()
    install_report_crd(admin, OPEN_REPORT.api_version)
    grant_report_rights(admin, api=OPEN_REPORT.api_version)
    wait_until_granted(control_plane.client(POLICYEXT))
    rules = tmp_path_factory.mktemp("open-report-rules")
    (rules / "rollout.yaml").write_text(ROLLOUT)
    (rules / "placement.yaml").write_text(PLACEMENT)
    server = Extender(
        control_plane,
        report_rights,
        [rules],
        name="policyext-open-reports",
        args=["--reports", "--reports-api", OPEN_REPORT.api_version],
    )
    server.start()
    try:
        config = scheduler_config(server.url, OPEN_SCHEDULER, bind=False)
        control_plane.start_scheduler(config, name=OPEN_SCHEDULER)
        yield server
    finally:
        if OPEN_SCHEDULER in control_plane.components:
            control_plane.stop_component(OPEN_SCHEDULER)
        server.stop()


def test_with_the_openreports_api_the_pod_gets_a_report_of_that_api(
    admin: KubeClient, namespace: str, open_reports_extender: Extender
) -> None:
    spot, _ = _nodes(admin, uuid.uuid4().hex[:6])
    admin.create(
        f"/api/v1/namespaces/{namespace}/pods",
        pod(
            "open-spot", scheduler_name=OPEN_SCHEDULER, labels={"audited": "true", "wants": "spot"}
        ),
    )
    bound = admin.wait_for(
        f"/api/v1/namespaces/{namespace}/pods/open-spot", lambda p: bool(p["spec"].get("nodeName"))
    )
    uid = bound["metadata"]["uid"]
    path = f"/apis/{OPEN_REPORT.api_version}/namespaces/{namespace}/reports/policyext-{uid}"

    report = eventually(lambda: _get(admin, path))

    assert (report["apiVersion"], report["kind"]) == (OPEN_REPORT.api_version, "Report")
    assert {r["rule"]: r["result"] for r in report["results"]} == {
        "no-spot-nodes": "fail",
        "zone-a-only": "pass",
    }
    assert report["scope"]["uid"] == uid and bound["spec"]["nodeName"] == spot


def _get(admin: KubeClient, path: str) -> Json | None:
    try:
        return admin.get(path)
    except ApiError as e:
        if e.status == 404:
            return None
        raise
