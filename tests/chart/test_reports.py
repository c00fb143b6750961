"""The chart's policy reports (reports.*): the flags, exactly the rights the writer uses, and
the report CRD it can install, structural and declaring every field the extender writes
(tests/e2e/test_policy_reports.py puts it in a real API server)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from prometheus_client import CollectorRegistry

from policyext.cluster.policy_reports import OUTCOMES
from policyext.cluster.report_body import (
    OPEN_REPORT,
    POLICY_REPORT,
    Filtered,
    ReportApi,
    RuleFinding,
    report_body,
)
from policyext.server.metrics import Metrics
from tests.chart.chart import CHART, FULLNAME, Chart, HelmError
from tests.chart.promqlbin import assert_parsed

Json = dict[str, Any]
ON = ["reports.enabled=true"]
DEFAULT = CHART / "ci" / "default-values.yaml"
APIS = {api.api_version: api for api in (POLICY_REPORT, OPEN_REPORT)}


def _crd(chart: Chart, api: ReportApi) -> Json:
    rendered = chart.render(
        [DEFAULT], [*ON, "reports.installCRD=true", f"reports.api={api.api_version}"]
    )
    [crd] = rendered.all("CustomResourceDefinition")
    return crd


def test_without_reports_the_chart_renders_no_report_flag_right_or_crd(chart: Chart) -> None:
    rendered = chart.render([DEFAULT], ["reports.installCRD=true"])
    assert not [a for a in rendered.container("extender")["args"] if a.startswith("--reports")]
    assert f"{FULLNAME}-reports" not in rendered.names("ClusterRole")
    assert rendered.all("CustomResourceDefinition") == []


@pytest.mark.parametrize("api", list(APIS))
def test_reports_are_served_with_their_flags_and_only_the_rights_a_server_side_apply_needs(
    chart: Chart, api: str
) -> None:
    rendered = chart.render([DEFAULT], [*ON, f"reports.api={api}", "reports.perSecond=4"])
    args = rendered.container("extender")["args"]
    assert [a for a in args if a.startswith("--reports")] == [
        "--reports",
        f"--reports-api={api}",
        "--reports-per-second=4",
    ]
    role = rendered.get("ClusterRole", f"{FULLNAME}-reports")
    report = APIS[api]
    assert role["rules"] == [
        {"apiGroups": [report.group], "resources": [report.plural], "verbs": ["create", "patch"]}
    ]
    binding = rendered.get("ClusterRoleBinding", f"{FULLNAME}-reports")
    assert binding["roleRef"]["name"] == f"{FULLNAME}-reports"
    extender = rendered.get("ClusterRoleBinding", FULLNAME)  # the extender's own account
    assert binding["subjects"] == extender["subjects"]
    assert rendered.all("CustomResourceDefinition") == []  # installCRD is false by default


def test_the_values_schema_refuses_a_report_api_the_extender_does_not_write(chart: Chart) -> None:
    with pytest.raises(HelmError, match="api"):
        chart.render([DEFAULT], [*ON, "reports.api=wgpolicyk8s.io/v1beta1"])


@pytest.mark.parametrize("api", list(APIS.values()), ids=list(APIS))
def test_the_report_crd_names_its_api_and_is_kept_on_uninstall(
    chart: Chart, api: ReportApi
) -> None:
    crd = _crd(chart, api)
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{api.plural}.{api.group}"
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert (spec["group"], spec["scope"], spec["names"]["kind"]) == (
        api.group,
        "Namespaced",
        api.kind,
    )
    if api == POLICY_REPORT:
        assert spec["names"]["shortNames"] == ["polr"]
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == (api.version, True, True)
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["Kind", "Name", "Pass", "Fail", "Warn", "Error", "Skip", "Age"]


def _nodes(node: Json, path: str = "") -> Iterator[tuple[str, Json]]:
    yield path or "(root)", node
    for name, child in node.get("properties", {}).items():
        yield from _nodes(child, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from _nodes(node[key], f"{path}[{key}]")


def _undeclared(value: Any, schema: Json, path: str = "") -> Iterator[str]:
    """The fields of `value` the schema does not declare: the API server would prune them."""
    if isinstance(value, dict) and schema.get("type") == "object":
        if path == ".metadata":
            return  # the API server's own
        declared = schema.get("properties")
        for key, child in value.items():
            if declared is not None and key in declared:
                yield from _undeclared(child, declared[key], f"{path}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                yield from _undeclared(child, schema["additionalProperties"], f"{path}.{key}")
            else:
                yield f"{path}.{key}"
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            yield from _undeclared(item, schema["items"], f"{path}[{i}]")


FINDING = Filtered(
    "shop",
    "web-1",
    "u-1",
    "v1",
    ("spot-a", "plain-a", "plain-b"),
    (
        RuleFinding("rollout", "no-spot-nodes", frozenset({"spot-a"}), {}),
        RuleFinding("rollout", "zone-a-only", frozenset(), {"plain-b": "no such key: zone"}),
    ),
    0.0,
)


@pytest.mark.parametrize("api", list(APIS.values()), ids=list(APIS))
def test_the_report_crd_is_structural_and_declares_every_field_the_extender_writes(
    chart: Chart, api: ReportApi
) -> None:
    schema = _crd(chart, api)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    untyped = [path for path, node in _nodes(schema) if "type" not in node]
    assert untyped == []
    for node in ("spot-a", "plain-b"):  # a fail and an error
        body = report_body(api, FINDING, node, 1_700_000_000.0)
        jsonschema.validate(body, schema)
        assert list(_undeclared(body, schema)) == []


def test_the_crd_is_no_file_of_crds_so_that_a_value_decides() -> None:
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == [
        "schedulingpolicies.policyext.io.yaml"
    ]


REPORT_ALERTS = {"PolicyextReportCrdMissing", "PolicyextReportsFailing"}


def _report_rules(chart: Chart, *sets: str) -> list[Json]:
    rendered = chart.render([CHART / "ci" / "scheduler-observability-values.yaml"], list(sets))
    return rendered.alert_rules("-reports")


def test_the_report_alerts_come_with_reports_and_read_what_the_extender_exports(
    chart: Chart,
) -> None:
    assert _report_rules(chart) == []
    rules = _report_rules(chart, *ON)
    assert {r["alert"] for r in rules} == REPORT_ALERTS
    readme = (CHART / "README.md").read_text()
    assert all(f"| {alert} |" in readme for alert in REPORT_ALERTS)

    class Writer:
        counts = dict.fromkeys(OUTCOMES, 1)
        available = False

    metrics = Metrics(CollectorRegistry())
    metrics.watch_policy_reports(Writer())
    exported = metrics.render()[0].decode()
    for rule in rules:
        for name in re.findall(r"\bpolicyext_[a-z_]+", rule["expr"]):
            assert re.search(rf"^{name}[{{ ]", exported, re.MULTILINE), name
    assert 'result="failed"' in exported and 'result="dropped"' in exported
    assert_parsed([str(r["expr"]) for r in rules])
