"""The decision log: one JSON line on stdout per filter and prioritize answer."""

from __future__ import annotations

import io
import json
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from policyext.policy.compile import load_policy_set
from policyext.server import decisions, verbs
from policyext.store import PolicyStore
from tests.server.conftest import ServerFactory
from tests.server.harness import FIXTURES, RULES, ExtenderServer
from tests.server.kube import args_with_names, args_with_nodes, fixture, node, pod

NODES = ["general-a", "general-b", "general-c", "spot-c", "gpu-a", "payments-b"]
CRITICAL = fixture("filter-names.request.json")["Pod"]


def _records(
    server: ExtenderServer, until: Callable[[list[dict[str, Any]]], bool] | None = None
) -> list[dict[str, Any]]:
    """The decision lines as records; `until`: the records awaited (harness.stdout_lines)."""

    def parsed(lines: list[str]) -> list[dict[str, Any]]:
        return [json.loads(line) for line in lines if line.strip()]

    wanted = None if until is None else lambda lines: until(parsed(lines))
    return parsed(server.stdout_lines(wanted))


def _records_of(server: ExtenderServer, pod_id: str, awaited: bool = True) -> list[dict[str, Any]]:
    """The records of one pod: at least one awaited, unless `awaited` is False."""

    def of_pod(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in records if r.get("pod") == pod_id]

    return of_pod(_records(server, (lambda r: bool(of_pod(r))) if awaited else None))


def _unique_pod(namespace: str = "shop", **kwargs: Any) -> tuple[dict[str, Any], str]:
    name = f"log-{uuid.uuid4().hex[:10]}"
    p = {**CRITICAL, "metadata": {**CRITICAL["metadata"], "name": name, "namespace": namespace}}
    p.update(kwargs)
    return p, f"{namespace}/{name}"


def test_a_filter_answer_writes_one_line_with_pod_version_counts_rejections_and_duration(
    demo_server: ExtenderServer,
) -> None:
    p, pod_id = _unique_pod()
    assert demo_server.post_json("/filter", args_with_names(p, NODES)).status == 200
    [record] = _records_of(demo_server, pod_id)
    assert record["verb"] == "filter"
    assert record["policyVersion"] == load_policy_set([RULES]).version
    assert record["nodes"] == 6
    assert record["feasible"] == 3
    assert record["rejectedBy"] == {
        "critical-off-spot/no-spot-nodes": 1,
        "gpu-only-for-gpu-pods/gpu-nodes-for-gpu-pods": 1,
        "team-dedicated-nodes/team-namespaces-only": 1,
    }
    assert record["errors"] == 2
    assert isinstance(record["ms"], float | int)
    assert record["ms"] >= 0


def test_a_prioritize_answer_writes_one_line_too(demo_server: ExtenderServer) -> None:
    p, pod_id = _unique_pod()
    assert demo_server.post_json("/prioritize", args_with_names(p, NODES[:3])).status == 200
    [record] = _records_of(demo_server, pod_id)
    assert record["verb"] == "prioritize"
    assert record["nodes"] == 3


def test_unknown_node_names_count_among_the_nodes_of_the_request(
    demo_server: ExtenderServer,
) -> None:
    p, pod_id = _unique_pod()
    demo_server.post_json("/filter", args_with_names(p, ["general-a", "gone-7"]))
    [record] = _records_of(demo_server, pod_id)
    assert (record["nodes"], record["feasible"]) == (2, 1)


@pytest.mark.parametrize(
    ("path", "body_of"),
    [
        ("/explain", lambda p: args_with_names(p, NODES)),
        (
            "/preempt",
            lambda p: {
                "Pod": p,
                "NodeNameToMetaVictims": {"general-a": {"Pods": [], "NumPDBViolations": 0}},
            },
        ),
        ("/filter", lambda p: {"Pod": p, "NodeNames": 7}),  # a 400
    ],
    ids=["explain", "preempt", "a rejected request"],
)
def test_other_requests_write_no_decision_line(
    demo_server: ExtenderServer, path: str, body_of: Any
) -> None:
    p, pod_id = _unique_pod()
    demo_server.post_json(path, body_of(p))
    demo_server.post_json(
        "/filter", args_with_names(pod("marker-" + pod_id.split("/")[1]), ["general-a"])
    )
    assert _records_of(demo_server, "default/marker-" + pod_id.split("/")[1])  # the log works
    assert _records_of(demo_server, pod_id, awaited=False) == []


def test_stdout_carries_nothing_but_json_decision_lines(demo_server: ExtenderServer) -> None:
    demo_server.post_json("/filter", args_with_names(pod("any"), NODES))
    lines = [line for line in demo_server.stdout_lines(any) if line.strip()]
    assert lines
    for line in lines:
        record = json.loads(line)
        assert record["verb"] in ("filter", "prioritize")


@pytest.fixture(scope="module")
def debug_server(serve: ServerFactory) -> ExtenderServer:
    """--log-level debug, the test policies, and no node source."""
    return serve("--log-level", "debug", rules=[FIXTURES / "rules"], snapshot=None)


def test_a_filter_that_cannot_be_answered_is_logged_with_its_error(
    debug_server: ExtenderServer,
) -> None:
    debug_server.post_json("/filter", args_with_names(pod("no-source-1"), ["a"]))
    [record] = _records_of(debug_server, "default/no-source-1")
    assert "no node source" in record["error"]
    assert record["nodes"] == 1


def test_at_debug_level_every_node_of_a_filter_gets_a_line_of_its_own(
    debug_server: ExtenderServer,
) -> None:
    nodes = [
        node("pool-1", {"pool": "general", "rack": "1"}),
        node("batch-1", {"pool": "batch", "rack": "2"}),
    ]
    before = len(_records(debug_server))
    debug_server.post_json("/filter", args_with_nodes(pod("debug-1"), nodes))

    def logged(records: list[dict[str, Any]]) -> bool:  # the summary and a line per node
        return len([r for r in records[before:] if r.get("pod") == "default/debug-1"]) >= 3

    new = _records(debug_server, logged)[before:]
    per_node = {r["node"]: r for r in new if "node" in r}
    assert per_node["pool-1"]["feasible"] is True
    assert per_node["batch-1"]["feasible"] is False
    assert per_node["batch-1"]["rejectedBy"] == ["pools/general-pool-only"]
    assert [r["pod"] for r in new if "node" not in r] == ["default/debug-1"]  # one summary
    assert {r["pod"] for r in new if "node" in r} == {"default/debug-1"}  # and per node


@pytest.mark.parametrize(
    "moments",
    [
        [1764608709.123, 1764608709.9994, 1764608710.0, 1764608710.0009],
        [0.0, 0.5, 0.999, 1.0],
        [1764608709.5, 1764608709.5, 1764608649.5],  # the clock stepped back a minute
        [1798761599.999, 1798761600.001],  # across a new year
    ],
    ids=["across a second", "the epoch", "a clock stepped back", "a new year"],
)
def test_the_decision_time_is_rfc3339_utc_to_the_millisecond_whenever_it_is_asked(
    moments: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """utc_now formats each second once: every time it gives is still the plain formatting."""
    for now in moments:
        monkeypatch.setattr(decisions.time, "time", lambda now=now: now)
        plain = (
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
        )
        assert decisions.utc_now() == plain


class _Dropped(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


def _no_change(logger: logging.Logger, handler: logging.Handler) -> None:
    pass


def _filter_on_logger(logger: logging.Logger, handler: logging.Handler) -> None:
    logger.addFilter(_Dropped())


def _filter_on_handler(logger: logging.Logger, handler: logging.Handler) -> None:
    handler.addFilter(_Dropped())


def _handler_above_info(logger: logging.Logger, handler: logging.Handler) -> None:
    handler.setLevel(logging.WARNING)


@pytest.mark.parametrize(
    ("configure", "written"),
    [
        (_no_change, True),
        (_filter_on_logger, False),
        (_filter_on_handler, False),
        (_handler_above_info, False),
    ],
    ids=[
        "as the server sets it up",
        "a filter on the logger",
        "a filter on the handler",
        "the handler above INFO",
    ],
)
def test_a_decision_line_is_written_as_logging_would_write_it(
    configure: Any, written: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The decision line skips the LogRecord only where logging would write it as it is: a
    filter or a level set on the way is obeyed."""
    out = io.StringIO()
    logger = logging.getLogger("policyext.decisions")
    handler = decisions.DecisionLines(out)
    monkeypatch.setattr(logger, "handlers", [handler])
    monkeypatch.setattr(logger, "filters", [])
    monkeypatch.setattr(logger, "propagate", False)
    monkeypatch.setattr(logger, "level", logging.INFO)
    logger.manager._clear_cache()  # type: ignore[attr-defined]
    configure(logger, handler)
    result = verbs.VerbResult(b"{}", None, 3, pod="shop/web-1")
    decisions.log_decision("prioritize", PolicyStore(), result, 0.0125)
    lines = out.getvalue().splitlines()
    if not written:
        assert lines == []
        return
    [line] = lines
    record = json.loads(line)
    assert (record["verb"], record["pod"], record["nodes"], record["ms"]) == (
        "prioritize",
        "shop/web-1",
        3,
        12.5,
    )
    assert line == json.dumps(record, sort_keys=True, separators=(",", ":"))
