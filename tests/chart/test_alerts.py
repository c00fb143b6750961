"""The PrometheusRule: every alert reads metrics the extender exports, with labels they
carry, in expressions the Prometheus parser accepts (tests/chart/promqlbin.py)."""

from __future__ import annotations

import re
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase

from policyext.server.metrics import Metrics
from tests.chart.chart import CHART, FULLNAME, Chart
from tests.chart.promqlbin import CheckerUnavailable, check, ensure_checker
from tests.unavailable import skip_or_fail

SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
}
# what the Prometheus Operator adds to every scraped series
SCRAPE_LABELS = {"job", "namespace", "instance", "pod", "service", "endpoint", "container"}
ALERTS = {
    "PolicyextPolicyReloadFailing",
    "PolicyextNoPolicies",
    "PolicyextCacheStale",
    "PolicyextCacheNotSynced",
    "PolicyextDeadlineExceeded",
    "PolicyextLatencyNearHttpTimeout",
    "PolicyextPodsWithoutFeasibleNode",
}


class _OneWatch:
    resource = "nodes"
    staleness_seconds = 1.0
    relists = 1
    synced = True


class _Watched:
    def watch_stats(self) -> list[_OneWatch]:
        return [_OneWatch()]


def exported() -> dict[str, set[str]]:
    """Every series name the extender exports -> the labels it carries."""
    metrics = Metrics(CollectorRegistry())
    series: dict[str, set[str]] = {}
    for collector in vars(metrics).values():
        if isinstance(collector, MetricWrapperBase):
            name = collector._name.removesuffix("_total")
            labels = set(collector._labelnames)
            for suffix in SUFFIXES[collector._type]:
                series[name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    metrics.watch_caches(_Watched())  # the caches' families, read at scrape time
    assert metrics._caches is not None
    for family in metrics._caches.collect():
        for sample in family.samples:
            series[sample.name] = set(sample.labels)
    return series


def _rules(chart: Chart, sets: list[str] | None = None) -> list[dict[str, Any]]:
    rendered = chart.render([CHART / "ci" / "scheduler-observability-values.yaml"], sets or [])
    rule = rendered.get("PrometheusRule", FULLNAME)
    rules: list[dict[str, Any]] = []
    for group in rule["spec"]["groups"]:
        rules += group["rules"]
    return rules


def test_the_rule_carries_every_alert_the_chart_documents(chart: Chart) -> None:
    names = {r["alert"] for r in _rules(chart)}
    assert names == ALERTS - {"PolicyextNoPolicies"}  # the ci file allows the empty set
    readme = (CHART / "README.md").read_text()
    for alert in ALERTS:
        assert f"| {alert} |" in readme


def test_no_policies_alerts_unless_the_empty_set_is_allowed(chart: Chart) -> None:
    rules = _rules(chart, ["policies.allowEmpty=false", "policies.existingConfigMap=mine"])
    assert {r["alert"] for r in rules} == ALERTS


def _balanced(expr: str) -> bool:
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    quoted = False
    for char in expr:
        if char == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif char in "([{":
            stack.append(char)
        elif char in pairs and (not stack or stack.pop() != pairs[char]):
            return False
    return not stack and not quoted


def test_every_alert_reads_exported_metrics_by_labels_they_carry(chart: Chart) -> None:
    series = exported()
    for rule in _rules(chart, ["policies.allowEmpty=false", "policies.existingConfigMap=m"]):
        expr = " ".join(str(rule["expr"]).split())
        alert = rule["alert"]
        assert _balanced(expr), f"{alert}: unbalanced brackets or quotes: {expr}"
        names = re.findall(r"\bpolicyext_[a-z_]+", expr)
        assert names, f"{alert}: reads no policyext metric"
        labels = set(SCRAPE_LABELS)
        for name in names:
            assert name in series, f"{alert}: {name} is not exported"
            labels |= series[name]
        for group in re.findall(r"\bby \(([^)]*)\)", expr):
            used = {label.strip() for label in group.split(",")}
            assert used <= labels, f"{alert}: groups by {used - labels}"
        for matchers in re.findall(r"\{([^}]*)\}", expr):
            used = set(re.findall(r"([a-z_]+)\s*(?:=~|!=|!~|=)", matchers))
            assert used <= labels, f"{alert}: selects on {used - labels}"
        for window in re.findall(r"\[([^\]]*)\]", expr):
            assert re.fullmatch(r"[0-9]+[smhdwy]", window), f"{alert}: window {window!r}"
        assert re.search(r"(==|>|<)\s*[0-9.]+$", expr), f"{alert}: compares with no threshold"
        if "for" in rule:
            assert re.fullmatch(r"[0-9]+[smhdwy]", rule["for"]), alert
        assert rule["labels"]["severity"] in ("critical", "warning", "info")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_the_latency_alert_is_a_share_of_the_http_timeout(chart: Chart) -> None:
    [rule] = [
        r
        for r in _rules(chart, ["extender.httpTimeout=30s"])
        if r["alert"] == "PolicyextLatencyNearHttpTimeout"
    ]
    assert str(rule["expr"]).rstrip().endswith("> 24")
    # the histogram must be able to tell: a bucket at or above the threshold
    from policyext.server.metrics import LATENCY_BUCKETS

    assert max(LATENCY_BUCKETS) >= 24


def test_the_prometheus_parser_accepts_every_alert_and_refuses_a_broken_one(
    chart: Chart,
) -> None:
    try:
        ensure_checker()
    except CheckerUnavailable as reason:
        skip_or_fail(str(reason))
    rules = _rules(chart, ["policies.allowEmpty=false", "policies.existingConfigMap=m"])
    accepted = check([str(r["expr"]) for r in rules])
    refused = check(["sum by (pod (rate(policyext_requests_total[5m])) > 0"])

    assert accepted.returncode == 0, accepted.stdout
    assert accepted.stdout.count("ok ") == len(ALERTS)
    assert refused.returncode == 1
    assert "parse error" in refused.stdout
