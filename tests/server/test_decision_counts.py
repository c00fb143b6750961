"""What one filter call counts, per rule, in the decision log and the metrics: every node
each rule rejected (whether the node's rejection is shared with the others a rule rejects
or, after an Audit finding or an error, a verdict of the node's own), every node an Audit
rule would have rejected with the first ten of them named, and every evaluation error,
whatever the rule's failurePolicy made of it; and a pod left without a feasible node only
when every node was rejected. Last, a prioritize naming a node the server does not know,
whose other nodes' scores are then looked up by name.

Sixteen nodes, n00 to n15, and six filters, each with its own nodes (two at least, so
that a count that stops at one is seen), and a score rule that fails on some (counted
by a prioritize call):

| rule | mode, failurePolicy | nodes |
|---|---|---|
| audit-most | Audit | would reject n00-n11 (12 nodes, more than the 10 named) |
| enforce-some | Enforce | rejects n08-n15: 6 nodes with a verdict of their own (an Audit finding, an error), n14 and n15 without |
| may-fail | Enforce, Ignore | fails on n12, n13: skipped for them |
| must-not-fail | Enforce, Fail | fails on n12, n13: rejects them |
| audit-strict | Audit, Fail | fails on n12, n13: would reject them |
| not-n15 | Enforce | rejects n15, which has no verdict of its own |
| score-may-fail | a score | fails on n12, n13 |
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Final

import pytest

from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.kube import args_with_names, args_with_nodes, node, pod
from tests.server.metrics_scrape import Scrape

COUNTS: Final = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: counts
spec:
  filters:
    - name: audit-most
      expression: "node.metadata.labels['a'] != 'yes'"
      message: "a-labelled nodes would go"
      mode: Audit
    - name: enforce-some
      expression: "node.metadata.labels['e'] != 'yes'"
      message: "e-labelled nodes are out"
    - name: may-fail
      expression: "node.metadata.labels['z'] == 'ok'"
      failurePolicy: Ignore
    - name: must-not-fail
      expression: "node.metadata.labels['w'] == 'ok'"
      failurePolicy: Fail
    - name: audit-strict
      expression: "node.metadata.labels['v'] == 'ok'"
      failurePolicy: Fail
      mode: Audit
    - name: not-n15
      expression: "node.metadata.name != 'n15'"
      message: "n15 is out"
  scores:
    - name: score-may-fail
      expression: "node.metadata.labels['z'] == 'ok' ? 10 : 0"
"""
NAMES: Final = [f"n{i:02}" for i in range(16)]


def _labels(i: int) -> dict[str, str]:
    labels = {"a": "yes" if i < 12 else "no", "e": "yes" if i >= 8 else "no"}
    if i not in (12, 13):  # may-fail, must-not-fail and audit-strict fail on n12, n13
        labels |= {"z": "ok", "w": "ok", "v": "ok"}
    return labels


NODES: Final = [node(name, _labels(i)) for i, name in enumerate(NAMES)]


@pytest.fixture(scope="module")
def server(serve: ServerFactory, tmp_path_factory: pytest.TempPathFactory) -> ExtenderServer:
    rules: Path = tmp_path_factory.mktemp("counts")
    (rules / "counts.yaml").write_text(COUNTS)
    return serve(rules=[rules])


def _decision(server: ExtenderServer, name: str) -> dict[str, Any]:
    """The decision line of the call for pod shop/NAME, awaited (harness.stdout_lines)."""

    def of_pod(lines: list[str]) -> list[dict[str, Any]]:
        records = [json.loads(line) for line in lines if line.strip()]
        return [r for r in records if r.get("pod") == f"shop/{name}"]

    [record] = of_pod(server.stdout_lines(lambda lines: bool(of_pod(lines))))
    return record


@pytest.fixture(scope="module")
def call(server: ExtenderServer) -> tuple[dict[str, Any], dict[str, Any], Scrape, Scrape]:
    """One filter call over the sixteen nodes: its reply, its decision line, and the
    metrics before and after it."""
    name = f"counts-{uuid.uuid4().hex[:8]}"
    before = Scrape(server.get("/metrics").body.decode())
    reply = server.post_json("/filter", args_with_nodes(pod(name, "shop"), NODES)).json()
    record = _decision(server, name)
    after = Scrape(server.get("/metrics").body.decode())
    return reply, record, before, after


def test_the_reply_keeps_the_nodes_no_enforce_rule_rejected(
    call: tuple[dict[str, Any], dict[str, Any], Scrape, Scrape],
) -> None:
    reply, _, _, _ = call
    assert [n["metadata"]["name"] for n in reply["Nodes"]["items"]] == NAMES[:8]
    failed = "e-labelled nodes are out; counts/must-not-fail could not be evaluated"
    assert reply["FailedNodes"] == {
        **{n: "e-labelled nodes are out" for n in NAMES[8:]},
        "n12": failed,
        "n13": failed,
        "n15": "e-labelled nodes are out; n15 is out",
    }


def test_the_decision_line_counts_every_node_each_rule_rejected_and_every_error(
    call: tuple[dict[str, Any], dict[str, Any], Scrape, Scrape],
) -> None:
    _, record, _, _ = call
    assert record["feasible"] == 8
    assert record["rejectedBy"] == {
        "counts/enforce-some": 8,
        "counts/must-not-fail": 2,
        "counts/not-n15": 1,
    }
    assert record["auditRejectedBy"] == {"counts/audit-most": 12, "counts/audit-strict": 2}
    assert record["errors"] == 6


def test_the_decision_line_names_the_first_ten_nodes_an_audit_rule_would_have_rejected(
    call: tuple[dict[str, Any], dict[str, Any], Scrape, Scrape],
) -> None:
    _, record, _, _ = call
    assert record["auditNodes"] == {
        "counts/audit-most": NAMES[:10],
        "counts/audit-strict": ["n12", "n13"],
    }


@pytest.mark.parametrize(
    ("metric", "rule", "count"),
    [
        ("policyext_rule_rejections_total", "enforce-some", 8),
        ("policyext_rule_rejections_total", "must-not-fail", 2),
        ("policyext_rule_rejections_total", "not-n15", 1),
        ("policyext_rule_rejections_total", "may-fail", 0),
        ("policyext_rule_audit_rejections_total", "audit-most", 12),
        ("policyext_rule_audit_rejections_total", "audit-strict", 2),
        ("policyext_rule_errors_total", "may-fail", 2),
        ("policyext_rule_errors_total", "must-not-fail", 2),
        ("policyext_rule_errors_total", "audit-strict", 2),
        ("policyext_rule_errors_total", "enforce-some", 0),
    ],
)
def test_the_metrics_count_the_same_per_rule(
    call: tuple[dict[str, Any], dict[str, Any], Scrape, Scrape], metric: str, rule: str, count: int
) -> None:
    _, _, before, after = call
    labels = {"policy": "counts", "rule": rule}
    assert after.value(metric, labels) - before.value(metric, labels) == count


def test_a_prioritize_call_counts_the_errors_of_a_score_rule(server: ExtenderServer) -> None:
    name = f"counts-{uuid.uuid4().hex[:8]}"
    labels = {"policy": "counts", "rule": "score-may-fail"}
    before = Scrape(server.get("/metrics").body.decode())
    reply = server.post_json("/prioritize", args_with_nodes(pod(name, "shop"), NODES))
    assert reply.status == 200
    record = _decision(server, name)
    after = Scrape(server.get("/metrics").body.decode())
    assert record["errors"] == 2
    metric = "policyext_rule_errors_total"
    assert after.value(metric, labels) - before.value(metric, labels) == 2


def test_a_filter_that_keeps_some_node_counts_no_pod_without_a_feasible_node(
    call: tuple[dict[str, Any], dict[str, Any], Scrape, Scrape],
) -> None:
    _, _, before, after = call
    metric = "policyext_pods_without_feasible_node_total"
    assert after.value(metric) - before.value(metric) == 0


def test_a_filter_that_rejects_every_node_counts_one_pod_without_a_feasible_node(
    server: ExtenderServer,
) -> None:
    name = f"counts-{uuid.uuid4().hex[:8]}"
    metric = "policyext_pods_without_feasible_node_total"
    before = Scrape(server.get("/metrics").body.decode())
    reply = server.post_json("/filter", args_with_nodes(pod(name, "shop"), NODES[8:]))
    assert reply.json()["Nodes"]["items"] == []
    assert _decision(server, name)["feasible"] == 0
    after = Scrape(server.get("/metrics").body.decode())
    assert after.value(metric) - before.value(metric) == 1


def test_a_prioritize_naming_a_node_the_server_does_not_know_scores_the_others_as_without_it(
    demo_server: ExtenderServer,
) -> None:
    """The request's names are then not the evaluation's: the scores are looked up by name
    (Evaluation.final_scores), and the unknown node gets 0."""
    known = ["general-a", "payments-b", "gpu-a"]
    critical = pod(f"counts-{uuid.uuid4().hex[:8]}", "shop", labels={"tier": "critical"})

    def scores(names: list[str]) -> dict[str, int]:
        reply = demo_server.post_json("/prioritize", args_with_names(critical, names)).json()
        return {entry["Host"]: entry["Score"] for entry in reply}

    alone = scores(known)
    assert any(alone.values())  # (else a reply of zeros would pass)
    assert scores([*known[:1], "no-such-node", *known[1:]]) == {**alone, "no-such-node": 0}
