"""Policies built to be slow: what cannot be written is refused by `policyext validate`
with file:line:col, and what can is stopped by the cost budget of each evaluation, with
the budget's error in /explain, while the other policies go on deciding as before.

The table is bench/hostile_policies.py's, whose command measures the same rules on 500
nodes (docs/reliability.md has the figures)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bench.hostile_policies import (
    EVALUATION_TIME,
    LOAD_TIME,
    HostileRule,
    policy_document,
    policy_name,
)
from policyext.cli import main as policyext
from tests.server.conftest import ServerFactory
from tests.server.harness import RULES, ExtenderServer
from tests.server.kube import fixture

# two nodes: a rule that spends its whole budget on each node costs about a budget's
# worth of CPU time per node (see docs/reliability.md), which the test keeps small
REQUEST = {**fixture("filter-names.request.json"), "NodeNames": ["general-a", "spot-c"]}


@pytest.mark.parametrize("rule", LOAD_TIME, ids=[r.name for r in LOAD_TIME])
def test_an_expression_past_the_limits_is_refused_by_validate_with_file_line_and_column(
    rule: HostileRule, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text(policy_document(rule))
    assert policyext(["validate", str(path)]) == 1
    output = capsys.readouterr()
    text = output.out + output.err
    assert re.search(rf"{re.escape(str(path))}:\d+:\d+: ", text), text
    assert rule.says in text


@pytest.fixture(scope="module")
def hostile_server(
    serve: ServerFactory, tmp_path_factory: pytest.TempPathFactory
) -> ExtenderServer:
    folder = tmp_path_factory.mktemp("hostile-policies")
    for i, rule in enumerate(EVALUATION_TIME):
        (folder / f"hostile-{i}.yaml").write_text(policy_document(rule, "Ignore"))
    return serve(rules=(RULES, folder))


@pytest.fixture(scope="module")
def hostile_filter(hostile_server: ExtenderServer) -> Any:
    reply = hostile_server.post_json("/filter", REQUEST)
    assert reply.status == 200, reply.body
    return reply.json()


def test_the_other_policies_decide_as_they_do_without_the_hostile_ones(
    hostile_filter: Any, demo_server: ExtenderServer
) -> None:
    without = demo_server.post_json("/filter", REQUEST).json()
    assert hostile_filter == without
    assert without["FailedAndUnresolvableNodes"]  # the example policies do reject a node


@pytest.fixture(scope="module")
def explained(hostile_server: ExtenderServer) -> dict[str, Any]:
    reply = hostile_server.post_json("/explain", REQUEST)
    assert reply.status == 200, reply.body
    document: dict[str, Any] = reply.json()
    return document


@pytest.mark.parametrize("rule", EVALUATION_TIME, ids=[r.name for r in EVALUATION_TIME])
def test_explain_shows_each_hostile_rule_stopped_by_the_budget_on_every_node(
    explained: dict[str, Any], rule: HostileRule
) -> None:
    policy = policy_name(rule)
    assert any(p["name"] == policy and p["applies"] for p in explained["policies"])
    errors = [
        e["error"]
        for node in explained["nodes"]
        for e in node["ignoredErrors"]
        if e["policy"] == policy
    ]
    if rule.says:
        assert len(errors) == len(REQUEST["NodeNames"])
        assert all(rule.says in e for e in errors), errors
    else:
        assert errors == []


# well under what the per-node rules cost over the demo cluster (about 0.1 s of CPU per
# node and rule on a fast machine): a faster machine must not answer within it
DEADLINE = 0.1


@pytest.fixture(scope="module")
def hurried_server(
    serve: ServerFactory, tmp_path_factory: pytest.TempPathFactory
) -> ExtenderServer:
    folder = tmp_path_factory.mktemp("hostile-per-node")
    for i, rule in enumerate(r for r in EVALUATION_TIME if r.per_node):
        (folder / f"hostile-{i}.yaml").write_text(policy_document(rule, "Ignore"))
    return serve("--request-deadline", str(DEADLINE), rules=(RULES, folder))


@pytest.mark.parametrize("verb", ["filter", "explain"])  # (the hostile rules are filters)
def test_a_request_over_every_node_is_ended_by_its_deadline(
    hurried_server: ExtenderServer, verb: str
) -> None:
    """Every node of the demo cluster (each rule costs a whole budget per node: far more
    than the scheduler's timeout in all) is answered once the deadline has passed, and the
    deadline is what ended it (how soon after it is bench/hostile_policies.py's)."""
    request = {**fixture("filter-names.request.json")}
    reply = hurried_server.post_json(f"/{verb}", request)
    assert reply.status == 200, reply.body
    metrics = hurried_server.get("/metrics").body.decode()
    assert re.search(
        rf'^policyext_request_deadline_exceeded_total\{{verb="{verb}"\}} [1-9]', metrics, re.M
    ), "the deadline was what ended it"
