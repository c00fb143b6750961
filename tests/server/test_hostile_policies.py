"""Policies built to be slow: what cannot be written is refused by `policyext validate`
with file:line:col, and what can is stopped by the cost budget of each evaluation, with
the budget's error in /explain, while the other policies go on deciding as before.

Policies built to take memory (YAML aliases, nesting, results that grow past the budget)
are refused or stopped the same way by `validate`, `simulate` and a serving worker that
reloads them, each under PEAK_LIMIT_MB of peak resident memory.

The tables are bench/hostile_policies.py's, whose command measures the same rules on 500
nodes and the bombs' peaks (docs/reliability.md has the figures)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.hostile_policies import (
    BOMBS,
    EVALUATION_TIME,
    LOAD_TIME,
    PEAK_LIMIT_MB,
    HostileRule,
    PolicyBomb,
    policy_document,
    policy_name,
    simulate_bomb,
    validate_bomb,
)
from bench.server import peak_mb
from policyext.cli import main as policyext
from tests.server.conftest import ServerFactory
from tests.server.harness import RULES, ExtenderServer
from tests.server.hostile import worker_pids
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


# -- policies built to take memory ---------------------------------------------------------
@pytest.mark.parametrize("bomb", BOMBS, ids=[b.name for b in BOMBS])
@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_a_policy_bomb_is_refused_or_stopped_under_the_memory_limit(
    command: str, bomb: PolicyBomb, tmp_path: Path
) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb.text)
    done = validate_bomb(path) if command == "validate" else simulate_bomb(path)
    assert done.peak_mb < PEAK_LIMIT_MB, done.output[-2000:]
    assert "Traceback" not in done.output
    if bomb.refused:
        assert done.returncode == 1
        assert re.search(
            rf"{re.escape(str(path))}:\d+:\d+: .*{re.escape(bomb.refused)}", done.output
        )
    else:
        assert done.returncode == 0, done.output[-2000:]
        if command == "simulate":  # the rule's failurePolicy (Ignore) took the budget's error
            assert bomb.stopped in done.output


@pytest.fixture(scope="module")
def bomb_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bombs")


@pytest.fixture(scope="module")
def bombed_server(serve: ServerFactory, bomb_folder: Path) -> ExtenderServer:
    return serve("--workers", "1", rules=(RULES, bomb_folder))


def _reloaded(server: ExtenderServer, change: Callable[[], object]) -> dict[str, Any]:
    """Make the change, then wait until the worker has tried to load it."""
    before = server.get("/policies").json()["lastReload"]
    change()
    started = time.monotonic()
    while (after := server.get("/policies").json()["lastReload"]) == before:
        if time.monotonic() - started > 60:
            pytest.fail("no reload within 60 s of the change")
        time.sleep(0.05)
    status: dict[str, Any] = after
    return status


@pytest.mark.parametrize("bomb", BOMBS, ids=[b.name for b in BOMBS])
def test_a_serving_worker_reloads_a_policy_bomb_and_keeps_serving_under_the_memory_limit(
    bombed_server: ExtenderServer, bomb_folder: Path, bomb: PolicyBomb
) -> None:
    """One worker takes every bomb in turn: its peak so far stays under the limit after
    each, and it is the same worker (none died and was replaced)."""
    [worker] = worker_pids(bombed_server)
    good = bombed_server.get("/policies").json()["version"]
    path = bomb_folder / "bomb.yaml"
    status = _reloaded(bombed_server, lambda: path.write_text(bomb.text))
    try:
        if bomb.refused:
            assert status["ok"] is False
            assert any(bomb.refused in error for error in status["errors"]), status
            assert bombed_server.get("/policies").json()["version"] == good
        else:
            assert status["ok"] is True, status
            explained = bombed_server.post_json("/explain", REQUEST).json()
            errors = [
                e["error"]
                for node in explained["nodes"]
                for e in node["ignoredErrors"]
                if e["policy"] == "bomb"
            ]
            assert len(errors) == len(REQUEST["NodeNames"])
            assert all(bomb.stopped in e for e in errors), errors
        assert bombed_server.post_json("/filter", REQUEST).status == 200
        assert worker_pids(bombed_server) == [worker], "the worker lived through it"
        assert peak_mb(worker) < PEAK_LIMIT_MB
    finally:
        _reloaded(bombed_server, path.unlink)
