"""The benchmark's yardsticks: the reference policy, the reply checks, the percentiles."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from typing import Any

import pytest

from bench import policy, workload
from bench.http_client import Mode, Verb, check_reply
from bench.stats import percentile, summarize_ns
from bench.workload import Workload, encode, generate

Json = dict[str, Any]


@functools.cache
def _cluster() -> Workload:
    return generate(60)


@functools.cache
def _reference() -> policy.Reference:
    w = _cluster()
    return policy.Reference(w.nodes, w.pods)


@functools.cache
def _verdicts() -> policy.Verdicts:
    return _reference().verdicts(_cluster().pod)


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("3920m", 3920),
        ("16", 16_000),
        ("0.5", 500),
        ("0.1m", 1),  # rounded up, as MilliValue does
        ("1.0005", 1001),
        ("65807716Ki", 65807716 * 1024 * 1000),
        ("1e3", 1_000_000),
        ("2M", 2_000_000_000),
    ],
)
def test_quantities_read_as_kubernetes_reads_them(text: str, millis: int) -> None:
    assert policy.quantity_millis(text) == millis


@pytest.mark.parametrize("text", ["", "m", "1x", "12Kb"])
def test_malformed_quantities_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        policy.quantity_millis(text)


@pytest.mark.parametrize(
    ("rule", "rejects"),
    [
        ("no-spot-for-critical", lambda n: n["metadata"]["labels"]["lifecycle"] == "spot"),
        ("gpu-nodes-for-gpu-pods", lambda n: workload.GPU_LABEL in n["metadata"]["labels"]),
        ("not-cordoned", lambda n: bool(n["spec"].get("unschedulable"))),
        ("cpu-fits", lambda n: n["status"]["allocatable"]["cpu"] == "500m"),
        ("free-cpu-fits", lambda n: _reference().node(n).free_cpu < 600),
    ],
)
def test_each_filter_rejects_exactly_the_nodes_it_targets(
    rule: str, rejects: Callable[[Json], bool]
) -> None:
    w = _cluster()
    rejected = {name for name, rules in _verdicts().rejected.items() if rule in rules}
    assert rejected == {n["metadata"]["name"] for n in w.nodes if rejects(n)}


@pytest.mark.parametrize(
    ("allocatable", "requested", "zone", "lifecycle", "score"),
    [
        ("15890m", 15890, workload.PREFERRED_ZONE, "on-demand", 7),  # (3*9.93 + 20 + 10) / 8
        ("15890m", 0, workload.PREFERRED_ZONE, "on-demand", 10),  # + 2*9.93: 9.98
        ("3920m", 1920, "eu-west-1a", "spot", 1),  # (3*2.45 + 2*1.25) / 8 = 1.23
        ("32", 0, "eu-west-1a", "spot", 6),  # both CPU scores clamped to 10: 50 / 8
        ("7910m", 9000, workload.PREFERRED_ZONE, "spot", 4),  # free < 0 clamped: 34.8 / 8
    ],
)
def test_the_final_score_is_the_rounded_weighted_mean(
    allocatable: str, requested: int, zone: str, lifecycle: str, score: int
) -> None:
    node = copy.deepcopy(_cluster().nodes[0])
    node["status"]["allocatable"]["cpu"] = allocatable
    node["metadata"]["labels"]["topology.kubernetes.io/zone"] = zone
    node["metadata"]["labels"]["lifecycle"] = lifecycle
    facts = policy.NodeFacts.of(node, requested)
    assert policy.final_score(policy.PodFacts.of(_cluster().pod), facts) == score


def _bound(node: str, phase: str, cpu: list[str], init: str = "", overhead: str = "") -> Json:
    spec: Json = {
        "nodeName": node,
        "containers": [{"resources": {"requests": {"cpu": c}}} for c in cpu],
    }
    if init:
        spec["initContainers"] = [{"resources": {"requests": {"cpu": init}}}]
    if overhead:
        spec["overhead"] = {"cpu": overhead}
    return {"metadata": {"name": "p"}, "spec": spec, "status": {"phase": phase}}


def test_requested_cpu_counts_init_containers_and_overhead_and_skips_finished_pods() -> None:
    pods = [
        _bound("a", "Running", ["500m", "0.25"]),  # 750
        _bound("a", "Pending", ["100m"], init="1"),  # the init container: 1000
        _bound("a", "Running", ["100m"], overhead="250m"),  # 350
        _bound("a", "Succeeded", ["4"]),
        _bound("a", "Failed", ["4"]),
        _bound("", "Pending", ["4"]),  # not bound
        _bound("b", "Running", ["2"]),
    ]
    assert policy.requested_cpu(pods) == {"a": 2100, "b": 2000}


def test_the_workload_s_finished_pods_hold_no_cpu_in_the_reference() -> None:
    w = _cluster()
    finished = [p for p in w.pods if p["status"]["phase"] in policy.TERMINATED_PHASES]
    assert finished
    running = [p for p in w.pods if p not in finished]
    assert policy.requested_cpu(w.pods) == policy.requested_cpu(running)


def test_the_scheduling_policy_document_lists_every_rule() -> None:
    doc = policy.scheduling_policy()
    spec = doc["spec"]
    names = [r["name"] for r in spec["filters"]] + [r["name"] for r in spec["scores"]]
    assert names == [r.name for r in policy.RULES]
    assert all(isinstance(r["weight"], int) for r in spec["scores"])


# --- checking replies ------------------------------------------------------------------


def _filter_reply(mode: Mode) -> Json:
    w, v = _cluster(), _verdicts()
    failed = {name: "no" for name in v.rejected}
    if mode == "names":
        return {"NodeNames": v.feasible, "FailedNodes": failed, "Error": ""}
    items = [n for n in w.nodes if n["metadata"]["name"] in v.feasible]
    return {"Nodes": {"metadata": {}, "items": items}, "FailedNodes": failed, "Error": ""}


def _scores_reply() -> list[Json]:
    return [{"Host": h, "Score": s} for h, s in _verdicts().scores.items()]


def _check(verb: Verb, mode: Mode, reply: object) -> list[str]:
    return check_reply(verb, mode, encode(reply), _cluster(), _verdicts())


@pytest.mark.parametrize("mode", ["names", "full"])
def test_a_correct_filter_reply_has_no_problems(mode: Mode) -> None:
    assert _check("filter", mode, _filter_reply(mode)) == []


def test_a_correct_prioritize_reply_has_no_problems() -> None:
    assert _check("prioritize", "names", _scores_reply()) == []


def test_reply_keys_are_matched_without_regard_to_case_as_go_does() -> None:
    reply = {k.lower(): v for k, v in _filter_reply("names").items()}
    assert _check("filter", "names", reply) == []


def _drop_first_feasible(reply: Json) -> None:
    reply["NodeNames"] = reply["NodeNames"][1:]


def _unresolvable_instead(reply: Json) -> None:
    reply["FailedAndUnresolvableNodes"] = reply.pop("FailedNodes")


@pytest.mark.parametrize(
    ("spoil", "complaint"),
    [
        (_drop_first_feasible, "feasible nodes"),
        (lambda r: r.update(Error="boom"), "Error"),
        (lambda r: r.update(FailedNodes={}), "failed"),
        (lambda r: r.pop("NodeNames"), "no NodeNames"),
    ],
)
def test_a_wrong_filter_reply_is_reported(spoil: Callable[[Json], object], complaint: str) -> None:
    reply = copy.deepcopy(_filter_reply("names"))
    spoil(reply)
    problems = _check("filter", "names", reply)
    assert any(complaint in p for p in problems), problems


def test_failed_and_unresolvable_nodes_count_as_failed() -> None:
    reply = copy.deepcopy(_filter_reply("names"))
    _unresolvable_instead(reply)
    assert _check("filter", "names", reply) == []


def test_nodes_changed_on_the_way_back_are_reported() -> None:
    reply = copy.deepcopy(_filter_reply("full"))
    del reply["Nodes"]["items"][0]["status"]["images"]
    assert any("differ" in p for p in _check("filter", "full", reply))


@pytest.mark.parametrize(
    ("spoil", "complaint"),
    [
        (lambda s: s[0].update(Score=float(s[0]["Score"])), "not an integer"),
        (lambda s: s[0].update(Score=s[0]["Score"] + 1), "wrong scores"),
        (lambda s: s.pop(), "hosts"),
    ],
)
def test_a_wrong_prioritize_reply_is_reported(
    spoil: Callable[[list[Json]], object], complaint: str
) -> None:
    scores = copy.deepcopy(_scores_reply())
    spoil(scores)
    problems = _check("prioritize", "names", scores)
    assert any(complaint in p for p in problems), problems


def test_a_reply_that_is_not_json_is_reported() -> None:
    problems = check_reply("filter", "names", b"<html>", _cluster(), _verdicts())
    assert problems and "not JSON" in problems[0]


# --- statistics ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "fraction", "expected"),
    [
        (list(range(1, 201)), 0.99, 198),
        (list(range(1, 101)), 0.99, 99),
        (list(range(1, 101)), 0.5, 50),
        ([7.0], 0.99, 7.0),
    ],
)
def test_percentiles_use_the_nearest_rank(
    values: list[float], fraction: float, expected: float
) -> None:
    assert percentile(values, fraction) == expected


def test_summaries_are_in_milliseconds() -> None:
    summary = summarize_ns([1_000_000, 3_000_000, 2_000_000])
    assert (summary.p50, summary.min, summary.max, summary.count) == (2.0, 1.0, 3.0, 3)
    assert json.dumps(summary.__dict__)
