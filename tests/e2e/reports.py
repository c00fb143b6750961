"""The policy reports' part of the cluster, as the chart makes it: the report CRD
(`reports.installCRD`) and the reports' ClusterRole (`reports.enabled`), rendered by helm
and created through the API; shared by tests/e2e/test_policy_reports.py and
bench/reports_burst.py."""

from __future__ import annotations

import subprocess
from typing import Any, Final

import yaml

from policyext.cluster.report_body import POLICY_REPORT, REPORT_APIS, ReportApi
from tests.chart.helmbin import ensure_helm
from tests.e2e.controlplane import POLICYEXT, ApiError, KubeClient
from tests.e2e.rbac import CHART, RBAC_API, chart_rbac
from tests.waiting import PATIENCE, eventually

Json = dict[str, Any]
CRDS: Final = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRD_NAME: Final = "policyreports.wgpolicyk8s.io"
REPORTS: Final = "/apis/wgpolicyk8s.io/v1alpha2"
REPORTS_ROLE: Final = "policyext-reports"


def chart_report_crd(api: str = POLICY_REPORT.api_version) -> Json:
    """The chart's report CRD (reports.installCRD) of `api`, as helm renders it."""
    done = subprocess.run(
        [str(ensure_helm()), "template", "e2e", str(CHART), "--namespace", "e2e"]
        + [
            arg
            for item in (
                "policies.allowEmpty=true",
                "reports.enabled=true",
                "reports.installCRD=true",
                f"reports.api={api}",
            )
            for arg in ("--set", item)
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    [crd] = [
        o for o in yaml.safe_load_all(done.stdout) if o and o["kind"] == "CustomResourceDefinition"
    ]
    return crd  # type: ignore[no-any-return]


def _established(crd: Json) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def exists(admin: KubeClient, path: str) -> bool:
    try:
        admin.get(path)
    except ApiError as e:
        if e.status == 404:
            return False
        raise
    return True


def install_report_crd(admin: KubeClient, api: str = POLICY_REPORT.api_version) -> None:
    """The chart's report CRD of `api`, created if missing, Established and served."""
    report = REPORT_APIS[api]
    try:
        admin.create(CRDS, chart_report_crd(api))
    except ApiError as e:
        if e.status != 409:
            raise
    admin.wait_for(f"{CRDS}/{report.plural}.{report.group}", _established)
    # the API server serves a new resource a moment after it is Established (429 until its
    # storage is ready)
    eventually(lambda: _served(admin, report), timeout=2 * PATIENCE)


def _served(admin: KubeClient, report: ReportApi) -> bool:
    try:
        admin.get(f"/apis/{report.api_version}/{report.plural}")
    except ApiError:
        return False
    return True


def remove_report_crd(admin: KubeClient) -> None:
    """No report CRD (and so no reports) in the cluster."""
    try:
        admin.delete(f"{CRDS}/{CRD_NAME}")
    except ApiError as e:
        if e.status != 404:
            raise
        return
    eventually(lambda: not exists(admin, f"{CRDS}/{CRD_NAME}"), timeout=2 * PATIENCE)


def grant_report_rights(
    admin: KubeClient, user: str = POLICYEXT, api: str = POLICY_REPORT.api_version
) -> None:
    """The chart's ClusterRole of the reports of `api`, bound to `user` (beside the
    extender's own), as `policyext-reports` (or `policyext-reports-<group>` for another
    API than the default)."""
    rules = chart_rbac("reports.enabled=true", f"reports.api={api}")[
        ("ClusterRole", "e2e-policyext-reports")
    ]
    name = (
        REPORTS_ROLE
        if api == POLICY_REPORT.api_version
        else f"{REPORTS_ROLE}-{api.split('/', maxsplit=1)[0]}"
    )
    binding = {
        "metadata": {"name": name},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": name,
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    for collection, body in (
        (f"{RBAC_API}/clusterroles", {"metadata": {"name": name}, "rules": rules}),
        (f"{RBAC_API}/clusterrolebindings", binding),
    ):
        try:
            admin.create(collection, body)
        except ApiError as e:
            if e.status != 409:
                raise
