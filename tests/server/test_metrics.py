"""/metrics: every documented family is there and counts what happens, also when several
gunicorn workers answer (prometheus_client's multiprocess mode)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import load_policy_set
from policyext.policy.engine import evaluate
from tests.server.harness import CLUSTER, FIXTURES, RULES, ExtenderServer, start_server
from tests.server.kube import Json, args_with_nodes, fixture, node, pod
from tests.server.metrics_scrape import Scrape, worker_pids, worker_scrape
from tests.server.test_chunked_framing import exchange
from tests.waiting import PATIENCE

FAMILIES = {
    "policyext_request_duration_seconds": ("histogram", {"verb"}),
    "policyext_request_nodes": ("histogram", {"verb"}),
    "policyext_requests": ("counter", {"verb", "code"}),
    "policyext_endpoint_requests": ("counter", {"endpoint", "code"}),
    "policyext_refused_requests": ("counter", {"code"}),
    "policyext_build_info": ("gauge", {"version", "python"}),
    "policyext_pods_without_feasible_node": ("counter", set()),
    "policyext_rule_audit_scores": ("counter", {"policy", "rule"}),
    "policyext_rule_audit_score_points": ("counter", {"policy", "rule"}),
    "policyext_policies_loaded": ("gauge", set()),
    "policyext_evaluations": ("counter", set()),
    "policyext_evaluation_errors": ("counter", set()),
    "policyext_rule_rejections": ("counter", {"policy", "rule"}),
    "policyext_rule_audit_rejections": ("counter", {"policy", "rule"}),
    "policyext_rule_errors": ("counter", {"policy", "rule"}),
    "policyext_policy_reloads": ("counter", {"result"}),
    "policyext_policy_version_info": ("gauge", {"version"}),
    "policyext_policy_rules": ("gauge", set()),
}
FILTER_REQUEST = fixture("filter-names.request.json")


def scrape(server: ExtenderServer) -> Scrape:
    reply = server.get("/metrics")
    assert reply.status == 200
    return Scrape(reply.body.decode())


def test_metrics_are_served_in_the_prometheus_text_format(demo_server: ExtenderServer) -> None:
    reply = demo_server.get("/metrics")
    assert reply.content_type.startswith("text/plain; version=")
    assert Scrape(reply.body.decode()).types


def test_every_documented_metric_family_is_exposed_with_its_type_and_labels(
    demo_server: ExtenderServer,
) -> None:
    demo_server.post_json("/filter", FILTER_REQUEST)  # labelled series appear once used
    found = scrape(demo_server)
    assert found.labels["policyext_rule_rejections"] == {"policy", "rule"}
    for name, (kind, labels) in FAMILIES.items():
        assert found.types.get(name) == kind, name
        # a labelled family shows its labels once a series exists (no audit rule fired yet)
        assert found.labels[name] - {"le"} in (labels, set()), name


def _delta(before: Scrape, after: Scrape) -> Callable[..., float]:
    def delta(name: str, **labels: str) -> float:
        return after.total(name, labels) - before.total(name, labels)

    return delta


def test_a_filter_request_is_counted_in_latency_nodes_rejections_errors_and_evaluations(
    demo_server: ExtenderServer,
) -> None:
    nodes = FILTER_REQUEST["NodeNames"]
    source = SnapshotSource.from_file(CLUSTER)
    ev = evaluate(
        load_policy_set([RULES]),
        FILTER_REQUEST["Pod"],
        [source.nodes[n] for n in nodes],
        source,
        scores=False,
    )
    before = scrape(demo_server)
    assert demo_server.post_json("/filter", FILTER_REQUEST).status == 200
    delta = _delta(before, scrape(demo_server))

    assert delta("policyext_request_duration_seconds_count", verb="filter") == 1
    assert delta("policyext_request_duration_seconds_sum", verb="filter") > 0
    assert delta("policyext_request_nodes_count", verb="filter") == 1
    assert delta("policyext_request_nodes_sum", verb="filter") == len(nodes)
    assert delta("policyext_requests_total", verb="filter", code="200") == 1
    # per-node results may be cached across requests: at most what the engine alone needs
    assert 0 < delta("policyext_evaluations_total") <= ev.evaluations
    assert delta("policyext_evaluation_errors_total") == ev.errors == 2
    for policy, rule in [
        ("critical-off-spot", "no-spot-nodes"),
        ("gpu-only-for-gpu-pods", "gpu-nodes-for-gpu-pods"),
        ("team-dedicated-nodes", "team-namespaces-only"),
    ]:
        assert delta("policyext_rule_rejections_total", policy=policy, rule=rule) == 1
    # spot-c's maintenance annotations do not parse: failurePolicy Ignore skips both rules
    for rule in ("not-in-maintenance", "no-maintenance-soon"):
        assert delta("policyext_rule_errors_total", policy="maintenance-window", rule=rule) == 1
    assert delta("policyext_rule_rejections_total") == 3


VERB = "policyext_requests_total"
ENDPOINT = "policyext_endpoint_requests_total"


@pytest.mark.parametrize(
    ("method", "path", "body", "family", "labels"),
    [
        ("POST", "/prioritize", FILTER_REQUEST, VERB, {"verb": "prioritize", "code": "200"}),
        ("POST", "/explain", FILTER_REQUEST, VERB, {"verb": "explain", "code": "200"}),
        ("POST", "/filter", [], VERB, {"verb": "filter", "code": "400"}),
        ("POST", "/bind", {"PodName": "p"}, VERB, {"verb": "bind", "code": "400"}),
        ("GET", "/filter", None, VERB, {"verb": "filter", "code": "405"}),
        ("GET", "/healthz", None, ENDPOINT, {"endpoint": "healthz", "code": "200"}),
        ("GET", "/readyz", None, ENDPOINT, {"endpoint": "readyz", "code": "200"}),
        ("GET", "/policies", None, ENDPOINT, {"endpoint": "policies", "code": "200"}),
        ("GET", "/nothing-here", None, ENDPOINT, {"endpoint": "unknown", "code": "404"}),
    ],
)
def test_every_answer_is_counted_once_the_verbs_apart_from_the_other_endpoints(
    demo_server: ExtenderServer,
    method: str,
    path: str,
    body: object,
    family: str,
    labels: dict[str, str],
) -> None:
    before = scrape(demo_server)
    if body is None:
        demo_server.request(method, path)
    else:
        demo_server.post_json(path, body)
    delta = _delta(before, scrape(demo_server))
    assert delta(family, **labels) == 1
    # the scrape in between counts itself (an endpoint), nothing else may have moved
    assert delta(VERB) == (1 if family == VERB else 0)
    assert delta(ENDPOINT) == (1 if family == VERB else 2)
    assert delta(ENDPOINT, endpoint="metrics", code="200") == 1


def test_no_verb_series_carries_an_operational_endpoint(demo_server: ExtenderServer) -> None:
    for path in ("/healthz", "/readyz", "/policies", "/metrics"):
        demo_server.get(path)
    verbs = {
        dict(ls)["verb"]
        for (name, ls) in scrape(demo_server).samples
        if name == "policyext_requests_total"
    }
    assert verbs <= {"filter", "prioritize", "preempt", "bind", "explain"}


def test_the_build_info_says_which_version_serves(demo_server: ExtenderServer) -> None:
    from importlib.metadata import version

    found = scrape(demo_server)
    [(labels, value)] = [
        (dict(ls), v) for (n, ls), v in found.samples.items() if n == "policyext_build_info"
    ]
    assert labels["version"] == version("policyext")
    assert value == 1


def test_a_filter_that_leaves_no_feasible_node_is_counted(demo_server: ExtenderServer) -> None:
    critical = FILTER_REQUEST["Pod"]  # kept off spot nodes
    meta = {**critical["metadata"], "name": "nowhere"}
    before = scrape(demo_server)
    feasible = demo_server.post_json("/filter", {**FILTER_REQUEST, "NodeNames": ["general-a"]})
    nowhere = demo_server.post_json(
        "/filter", {"Pod": {**critical, "metadata": meta}, "NodeNames": ["spot-c"]}
    )
    after = scrape(demo_server)

    assert feasible.json()["NodeNames"] == ["general-a"]
    assert nowhere.json()["NodeNames"] == []
    assert _delta(before, after)("policyext_pods_without_feasible_node_total") == 1


# refused by the worker's own framing, before gunicorn parses anything
TOO_LARGE = (
    b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: 999999999999\r\n\r\n{}"
)


def test_a_request_the_http_server_refuses_is_counted_by_its_status(
    demo_server: ExtenderServer,
) -> None:
    before = scrape(demo_server)
    long_url = demo_server.request("GET", "/healthz?" + "a" * 10_000)
    assert long_url.status == 414
    big_header = demo_server.request("GET", "/healthz", headers={"X-Padding": "a" * 20_000})
    assert big_header.status == 431
    too_large, _, _ = exchange(demo_server, TOO_LARGE)
    assert too_large == 413
    delta = _delta(before, scrape(demo_server))
    assert delta("policyext_refused_requests_total", code="414") == 1
    assert delta("policyext_refused_requests_total", code="431") == 1
    assert delta("policyext_refused_requests_total", code="413") == 1


def test_unknown_paths_do_not_create_a_series_each(demo_server: ExtenderServer) -> None:
    for i in range(5):
        assert demo_server.get(f"/scanner-{i}").status == 404
    labels = {
        dict(ls)["verb"]
        for (name, ls) in scrape(demo_server).samples
        if name == "policyext_requests_total"
    }
    assert not any(v.startswith("scanner-") for v in labels)


def test_the_policy_version_and_rule_count_being_served_are_exposed(
    demo_server: ExtenderServer,
) -> None:
    policies = load_policy_set([RULES])
    found = scrape(demo_server)
    assert found.value("policyext_policy_version_info", {"version": policies.version}) == 1
    assert found.total("policyext_policy_version_info") == 1
    assert found.value("policyext_policy_rules") == policies.rule_count()
    assert found.value("policyext_policy_reloads_total", {"result": "ok"}) == 1


# -- several workers ---------------------------------------------------------------------
TEST_NODES = [
    node("pool-1", {"pool": "general", "rack": "1"}),
    node("spot-1", {"pool": "batch", "rack": "2", "lifecycle": "spot"}),
    node("norack-1", {"pool": "general"}),
]


@dataclass
class TwoWorkers:
    server: ExtenderServer
    metrics_dir: Path


OWN_DIR = "a metrics directory of its own"
OPERATORS_DIR = "PROMETHEUS_MULTIPROC_DIR set by the operator"


@pytest.fixture(
    scope="module",
    params=[
        OWN_DIR,
        OPERATORS_DIR,
    ],
)
def two_workers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TwoWorkers]:
    workdir = tmp_path_factory.mktemp("workers")
    env: dict[str, str] = {}
    if request.param == OPERATORS_DIR:
        env["PROMETHEUS_MULTIPROC_DIR"] = str(workdir / "metrics")
        (workdir / "metrics").mkdir()
    server = start_server(
        workdir,
        "--workers",
        "2",
        "--threads",
        "2",
        rules=[FIXTURES / "rules"],
        snapshot=None,
        env=env,
    )
    try:
        if request.param == OPERATORS_DIR:
            metrics_dir = workdir / "metrics"
        else:
            # serve makes it with tempfile, under the TMPDIR the harness gives the server
            dirs = list((server.workdir / "tmp").glob("policyext-metrics-*"))
            assert len(dirs) == 1
            metrics_dir = dirs[0]
        yield TwoWorkers(server, metrics_dir)
    finally:
        server.stop()


def _filter_counts(metrics_dir: Path) -> dict[int, float]:
    return {
        pid: worker_scrape(metrics_dir, pid).value(
            "policyext_requests_total", {"verb": "filter", "code": "200"}
        )
        for pid in worker_pids(metrics_dir)
    }


def _send_until_both_workers_answered(workers: TwoWorkers, request: Json) -> int:
    """Concurrent requests on fresh connections until each worker has answered some."""
    server = workers.server
    counts: dict[int, float] = {}
    sent = 0
    with ThreadPoolExecutor(max_workers=6) as pool:
        for _batch in range(25):
            replies = list(pool.map(lambda _: server.post_json("/filter", request), range(12)))
            assert all(r.status == 200 for r in replies)
            sent += len(replies)
            counts = _filter_counts(workers.metrics_dir)
            if not counts:
                pytest.fail("no per-worker metrics files: multiprocess mode is not on")
            if len(counts) == 2 and all(counts.values()):
                return sent
    pytest.fail(f"one worker answered every request: {counts}")


def test_with_two_workers_one_scrape_adds_up_the_counts_of_both(two_workers: TwoWorkers) -> None:
    request = args_with_nodes(pod("web-1"), TEST_NODES)
    sent = _send_until_both_workers_answered(two_workers, request)
    # a call is counted once its reply is sent: the last ones may still be on their way
    deadline = time.monotonic() + PATIENCE
    per_worker = _filter_counts(two_workers.metrics_dir)
    while sum(per_worker.values()) < sent and time.monotonic() < deadline:
        time.sleep(0.05)
        per_worker = _filter_counts(two_workers.metrics_dir)
    assert sum(per_worker.values()) == sent

    for _ in range(6):  # whichever worker answers the scrape sees the whole server
        found = scrape(two_workers.server)
        assert found.value("policyext_requests_total", {"verb": "filter", "code": "200"}) == sent
        assert found.value("policyext_request_duration_seconds_count", {"verb": "filter"}) == sent
        assert found.value("policyext_request_nodes_sum", {"verb": "filter"}) == 3 * sent
        rejections = {"policy": "pools", "rule": "general-pool-only"}
        assert found.value("policyext_rule_rejections_total", rejections) == sent
        audits = {"policy": "pools", "rule": "no-spot-soon"}
        assert found.value("policyext_rule_audit_rejections_total", audits) == sent
        errors = {"policy": "racks", "rule": "rack-is-a-number"}
        assert found.value("policyext_rule_errors_total", errors) == sent
        assert found.value("policyext_rule_rejections_total", errors) == sent
        assert found.value("policyext_evaluations_total") > 0
