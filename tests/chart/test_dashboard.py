"""The Grafana dashboard queries only what the extender and its admission webhook export."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase

from policyext.server.admission_metrics import WebhookMetrics
from policyext.server.metrics import Metrics
from tests.chart.chart import CHART

DASHBOARD = json.loads((CHART / "dashboards" / "policyext.json").read_text())
SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
}


def _exported() -> dict[str, set[str]]:
    """Every series name the extender and the webhook export → the labels it carries."""
    series: dict[str, set[str]] = {}
    collectors = [*vars(Metrics(CollectorRegistry())).values(), *vars(WebhookMetrics()).values()]
    for collector in collectors:
        if not isinstance(collector, MetricWrapperBase):
            continue
        name = collector._name.removesuffix("_total")
        labels = set(collector._labelnames)
        for suffix in SUFFIXES[collector._type]:
            series[name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    return series


def _targets() -> list[tuple[str, str]]:
    found = []
    for panel in DASHBOARD["panels"]:
        for target in panel.get("targets", []):
            found.append((panel["title"], target["expr"]))
    return found


TARGETS = _targets()
SCRAPE_LABELS = {"job", "namespace", "instance", "pod"}


@pytest.mark.parametrize(("title", "expr"), TARGETS, ids=[f"{t}:{e[:40]}" for t, e in TARGETS])
def test_every_dashboard_query_names_exported_metrics_and_labels(title: str, expr: str) -> None:
    exported = _exported()
    names = re.findall(r"\bpolicyext_[a-z_]+", expr)
    assert names, f"{title}: queries no policyext metric"
    labels: set[str] = set()
    for name in names:
        assert name in exported, f"{title}: {name} is not exported"
        labels |= exported[name]
    for group in re.findall(r"\bby \(([^)]*)\)", expr):
        used = {label.strip() for label in group.split(",")}
        assert used <= labels | SCRAPE_LABELS, f"{title}: groups by {used - labels}"


@pytest.mark.parametrize(
    "topic",
    [
        "policyext_request_duration_seconds",
        "policyext_request_nodes",
        "policyext_rule_rejections_total",
        "policyext_rule_audit_rejections_total",
        "policyext_evaluation_errors_total",
        "policyext_policy_reloads_total",
        "policyext_policy_version_info",
        "policyext_policy_last_reload_success",
        "policyext_pods_without_feasible_node_total",
        "policyext_rule_audit_score_points_total",
        "policyext_refused_requests_total",
        "policyext_webhook_reviews_total",
        "policyext_webhook_unchecked_reviews_total",
        "policyext_webhook_review_duration_seconds",
        "policyext_webhook_requests_total",
    ],
)
def test_the_dashboard_shows_what_an_operator_needs(topic: str) -> None:
    assert any(topic in expr for _, expr in TARGETS)


def test_every_panel_has_a_unique_id_and_uses_the_chosen_data_source() -> None:
    panels: list[dict[str, Any]] = DASHBOARD["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    for panel in panels:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}"


def test_the_webhook_panels_read_the_webhooks_own_service() -> None:
    """The webhook is scraped through its own Service (job `<fullname>-webhook`): its panels
    select that job for each job chosen, and no other panel reads its series."""
    for title, expr in TARGETS:
        reads_webhook = "policyext_webhook_" in expr
        assert reads_webhook == ('job=~"($job)-webhook"' in expr), title
