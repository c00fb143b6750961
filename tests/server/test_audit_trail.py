"""Audit you can follow per pod: the decision log names the Audit rules that would have
rejected nodes (and which nodes), and what each Audit score rule did; the metrics count
both, and every rule's series exists at 0 from the moment its policy is loaded."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.kube import args_with_names, pod
from tests.server.metrics_scrape import Scrape

ROLLOUT = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: rollout
spec:
  filters:
    - name: no-gpu-nodes
      expression: "!node.metadata.name.startsWith('gpu-')"
    - name: no-spot-nodes
      expression: "!node.metadata.name.startsWith('spot-')"
      mode: Audit
  scores:
    - name: prefer-payments
      expression: "node.metadata.name.startsWith('payments-') ? 10 : 0"
      mode: Audit
    - name: flat
      expression: "5"
"""
NODES = ["general-a", "general-b", "general-c", "spot-c", "gpu-a", "payments-b"]
RFC3339_UTC_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture(scope="module")
def server(serve: ServerFactory, tmp_path_factory: pytest.TempPathFactory) -> ExtenderServer:
    rules: Path = tmp_path_factory.mktemp("rollout")
    (rules / "rollout.yaml").write_text(ROLLOUT)
    return serve(rules=[rules])


@pytest.fixture(scope="module")
def first_scrape(server: ExtenderServer) -> Scrape:
    """The metrics before any scheduling request (module scope: taken first)."""
    return Scrape(server.get("/metrics").body.decode())


def _scrape(server: ExtenderServer) -> Scrape:
    return Scrape(server.get("/metrics").body.decode())


def _records_of(server: ExtenderServer, pod_id: str) -> list[dict[str, Any]]:
    """The decision lines of one pod, at least one awaited (harness.stdout_lines)."""

    def of_pod(lines: list[str]) -> list[dict[str, Any]]:
        records = [json.loads(line) for line in lines if line.strip()]
        return [r for r in records if r.get("pod") == pod_id]

    return of_pod(server.stdout_lines(lambda lines: bool(of_pod(lines))))


def _pod() -> tuple[dict[str, Any], str]:
    name = f"audit-{uuid.uuid4().hex[:8]}"
    return pod(name, "shop"), f"shop/{name}"


@pytest.mark.parametrize(
    ("name", "labels"),
    [
        ("policyext_rule_rejections_total", {"policy": "rollout", "rule": "no-gpu-nodes"}),
        ("policyext_rule_audit_rejections_total", {"policy": "rollout", "rule": "no-spot-nodes"}),
        ("policyext_rule_audit_scores_total", {"policy": "rollout", "rule": "prefer-payments"}),
        (
            "policyext_rule_audit_score_points_total",
            {"policy": "rollout", "rule": "prefer-payments"},
        ),
        ("policyext_rule_errors_total", {"policy": "rollout", "rule": "flat"}),
        ("policyext_request_deadline_exceeded_total", {"verb": "filter"}),
        ("policyext_request_deadline_exceeded_total", {"verb": "prioritize"}),
        ("policyext_pods_without_feasible_node_total", {}),
        ("policyext_policies_loaded", {}),
    ],
)
def test_every_rules_series_exists_before_its_first_event(
    first_scrape: Scrape, name: str, labels: dict[str, str]
) -> None:
    key = (name, frozenset(labels.items()))
    assert key in first_scrape.samples, f"{name}{labels} is not exported yet"
    expected = 1 if name == "policyext_policies_loaded" else 0
    assert first_scrape.samples[key] == expected


def test_a_filter_line_names_the_audit_rules_and_the_nodes_they_would_have_rejected(
    server: ExtenderServer, first_scrape: Scrape
) -> None:
    p, pod_id = _pod()
    reply = server.post_json("/filter", args_with_names(p, NODES)).json()
    [record] = _records_of(server, pod_id)
    after = _scrape(server)

    assert "spot-c" in reply["NodeNames"]  # Audit: never rejected
    assert record["rejectedBy"] == {"rollout/no-gpu-nodes": 1}
    assert record["auditRejectedBy"] == {"rollout/no-spot-nodes": 1}
    assert record["auditNodes"] == {"rollout/no-spot-nodes": ["spot-c"]}
    assert RFC3339_UTC_MS.match(record["time"]), record["time"]
    labels = frozenset({"policy": "rollout", "rule": "no-spot-nodes"}.items())
    assert after.samples[("policyext_rule_audit_rejections_total", labels)] >= 1


def test_a_line_without_audit_findings_has_no_audit_keys(server: ExtenderServer) -> None:
    p, pod_id = _pod()
    server.post_json("/filter", args_with_names(p, ["general-a"]))
    [record] = _records_of(server, pod_id)
    assert "auditRejectedBy" not in record and "auditNodes" not in record


def test_audit_scores_are_logged_per_pod_and_counted_on_every_call(
    server: ExtenderServer,
) -> None:
    labels = frozenset({"policy": "rollout", "rule": "prefer-payments"}.items())
    names = ["general-a", "payments-b", "general-b"]
    before = _scrape(server)
    pods = [_pod() for _ in range(2)]  # the same kind of pod: the second may be remembered
    for p, _ in pods:
        assert server.post_json("/prioritize", args_with_names(p, names)).status == 200
    after = _scrape(server)

    for _, pod_id in pods:
        [record] = _records_of(server, pod_id)
        assert record["auditScores"] == {
            "rollout/prefer-payments": {"nodes": 3, "mean": 3.333, "best": "payments-b"}
        }

    def delta(name: str) -> float:
        return after.samples[(name, labels)] - before.samples[(name, labels)]

    assert delta("policyext_rule_audit_scores_total") == 6
    assert delta("policyext_rule_audit_score_points_total") == 20
