"""The prioritize reply worked out ahead: once a filter reply is sent, the scores of the
nodes it passed are worked out for the prioritize call kube-scheduler makes next
(server/remembered.py, Ahead). That call gets exactly the reply it would have got; any
other call, or the same call once a node, a pod on it or the policies changed, is
answered afresh.

Through the lane entry the worker calls (`lanes.direct_lane`: the reply, then what runs once
it is sent), beside a server without scores ahead (`Verbs.answer`) for the reference.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
import pytest
from prometheus_client import CollectorRegistry

from policyext.cluster.cache import ClusterSource
from policyext.policy.compile import PolicySet, load_policy_texts
from policyext.server import verbs, wire
from policyext.server.metrics import Metrics
from policyext.store import PolicyStore
from tests.cluster.fake_core import fake_api
from tests.policy.helpers import NOW, node, pod, policy
from tests.server.entrances import InProcessVerbs

PLACEMENT = policy(
    "placement",
    """
    filters:
      - name: off-batch
        expression: "node.metadata.labels.?pool.orValue('') != 'batch'"
    scores:
      - name: most-free-cpu
        weight: 2
        expression: "nodeInfo.free.cpu.asApproximateFloat()"
      - name: wanted-tier
        weight: 1
        expression: >-
          node.metadata.labels.?tier.orValue('') == pod.metadata.labels.?tier.orValue('gold')
          ? 10 : 0
    """,
)
NODES = [
    node("a", cpu="4"),
    node("b", {"tier": "gold"}, cpu="8"),
    node("c", cpu="2"),
    node("batch", {"pool": "batch"}, cpu="16"),
]
NAMES = ["a", "b", "c", "batch"]


def _policies(text: str = PLACEMENT) -> PolicySet:
    return load_policy_texts({"placement.yaml": text})


def _pod(name: str, cpu: str = "500m", labels: dict[str, str] | None = None) -> dict[str, Any]:
    p = pod(name, cpu=cpu, labels=labels)
    p["metadata"]["uid"] = f"uid-{name}"
    return p


def _bound(name: str, on: str, cpu: str) -> dict[str, Any]:
    p = _pod(name, cpu)
    p["spec"]["nodeName"] = on
    p["status"] = {"phase": "Running"}
    return p


def _body(the_pod: dict[str, Any], names: list[str]) -> bytes:
    """ExtenderArgs as kube-scheduler's Go client writes them."""
    return b'{"Pod":%b,"Nodes":null,"NodeNames":%b}' % (orjson.dumps(the_pod), orjson.dumps(names))


@dataclass
class Server:
    """An extender's hot verbs over a cluster source fed by hand, and the decision lines
    they wrote. `ahead`: called as the worker calls them (its lane: the reply, then what
    runs once it is sent), so that scores are worked out ahead; else as Flask calls them."""

    store: PolicyStore
    source: ClusterSource
    hot: InProcessVerbs
    ahead: bool
    lines: list[dict[str, Any]] = field(default_factory=list)

    def call(self, verb: str, body: bytes) -> bytes:
        if not self.ahead:
            return self.hot.answer(verb, body)
        answer = self.hot.direct(f"/{verb}", body)
        assert answer is not None
        status, reply, after = answer
        assert status.startswith("200")
        after()
        return reply

    def reference(self, verb: str, body: bytes) -> bytes:
        """The reply of a server without scores ahead, on the same policies and nodes."""
        verbs = InProcessVerbs(
            self.store, self.source, Metrics(CollectorRegistry()), _clock, 1 << 20, ""
        )
        return verbs.answer(verb, body)

    def schedule(self, the_pod: dict[str, Any], names: list[str] = NAMES) -> bytes:
        """filter, then prioritize about the nodes it passed (what kube-scheduler does)."""
        passed = json.loads(self.call("filter", _body(the_pod, names)))["NodeNames"]
        return self.call("prioritize", _body(the_pod, passed))

    def last_prioritize(self) -> dict[str, Any]:
        return [line for line in self.lines if line["verb"] == "prioritize"][-1]

    def evaluations(self) -> float:
        registry = self.hot.metrics.registry
        return registry.get_sample_value("policyext_evaluations_total") or 0.0


def _clock() -> int:
    return NOW.nanos


class _Lines(logging.Handler):
    def __init__(self, into: list[dict[str, Any]]) -> None:
        super().__init__(logging.INFO)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(json.loads(record.getMessage()))


def _server(text: str = PLACEMENT, ahead: bool = True) -> Server:
    """A server of its own: its own policy set and node source (so its own caches)."""
    store = PolicyStore()
    assert store.reload(lambda: _policies(text), "test").ok
    source = ClusterSource(fake_api())
    source.replace("nodes", copy.deepcopy(NODES))
    source.replace("pods", [])
    hot = InProcessVerbs(store, source, Metrics(CollectorRegistry()), _clock, 1 << 20, "")
    return Server(store, source, hot, ahead)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    made = _server()
    decisions = logging.getLogger("policyext.decisions")
    monkeypatch.setattr(decisions, "handlers", [_Lines(made.lines)])
    monkeypatch.setattr(decisions, "propagate", False)
    level = decisions.level
    decisions.setLevel(logging.INFO)  # (setLevel: the logger's cache of levels is cleared too)
    yield made
    decisions.setLevel(level)


def test_the_prioritize_call_after_a_filter_gets_the_scores_worked_out_ahead(
    server: Server,
) -> None:
    server.schedule(_pod("first"))  # (a prioritize call came: scores are worth working out)
    web = _pod("web")
    passed = json.loads(server.call("filter", _body(web, NAMES)))["NodeNames"]

    reply = server.call("prioritize", _body(web, passed))
    line = server.last_prioritize()

    assert passed == ["a", "b", "c"]
    assert line["scoredAhead"] is True
    assert reply == server.reference("prioritize", _body(web, passed))


Change = Callable[[Server], None]


def _bind_a_pod_to_b(s: Server) -> None:
    s.source.apply("pods", "ADDED", _bound("db-0", "b", "6"))


def _relabel_b(s: Server) -> None:
    b = copy.deepcopy(NODES[1])
    b["metadata"].update(resourceVersion="2", labels={})
    s.source.apply("nodes", "MODIFIED", b)


def _reweigh(s: Server) -> None:
    text = PLACEMENT.replace("weight: 1", "weight: 9")
    assert s.store.reload(lambda: _policies(text), "test").ok


AFRESH: list[tuple[str, Change | None, Callable[[dict[str, Any]], dict[str, Any]]]] = [
    # what happens between the filter and the prioritize call, and the pod prioritize asks
    # about: in each case the reply worked out ahead would be wrong
    ("a pod is bound to a node it scored", _bind_a_pod_to_b, lambda p: p),
    ("a node it scored changes", _relabel_b, lambda p: p),
    ("the policies are reloaded", _reweigh, lambda p: p),
    ("prioritize asks about another pod", None, lambda _: _pod("web-2", labels={"tier": ""})),
]


@pytest.mark.parametrize(("case", "change", "asked"), AFRESH, ids=[c[0] for c in AFRESH])
def test_a_prioritize_call_the_scores_ahead_no_longer_answer_is_answered_afresh(
    server: Server,
    case: str,
    change: Change | None,
    asked: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    server.schedule(_pod("first"))
    web = _pod("web")
    passed = json.loads(server.call("filter", _body(web, NAMES)))["NodeNames"]
    ahead = server.reference("prioritize", _body(web, passed))
    if change is not None:
        change(server)
    body = _body(asked(web), passed)

    reply = server.call("prioritize", body)
    line = server.last_prioritize()

    assert "scoredAhead" not in line
    assert reply == server.reference("prioritize", body)
    assert reply != ahead  # (the reply worked out ahead would have been wrong)


def test_prioritize_about_other_nodes_than_the_filter_passed_is_answered_afresh(
    server: Server,
) -> None:
    server.schedule(_pod("first"))
    web = _pod("web")
    server.call("filter", _body(web, NAMES))
    body = _body(web, ["c", "a"])  # (another extender filtered too, or another order)

    reply = server.call("prioritize", body)
    line = server.last_prioritize()

    assert "scoredAhead" not in line
    assert reply == server.reference("prioritize", body)


def _only_filters(s: Server) -> None:
    for k in range(3):
        s.call("filter", _body(_pod(f"web-{k}"), NAMES))


def _one_feasible_node(s: Server) -> None:
    s.schedule(_pod("first"))
    s.call("filter", _body(_pod("web"), ["a", "batch"]))


def _with_a_score_reading_the_time(s: Server) -> None:
    s.schedule(_pod("first"))
    s.call("filter", _body(_pod("web"), NAMES))


TIMED = policy(
    "placement",
    """
    scores:
      - name: after-new-year
        weight: 1
        expression: "now > timestamp('2026-01-01T00:00:00Z') ? 10 : 0"
      - name: most-free-cpu
        weight: 1
        expression: "nodeInfo.free.cpu.asApproximateFloat()"
    """,
)
NOTHING_AHEAD: list[tuple[str, str, Change]] = [
    ("a scheduler that never calls prioritize", PLACEMENT, _only_filters),
    ("a filter that passes a single node (not scored)", PLACEMENT, _one_feasible_node),
    ("a score that reads the time", TIMED, _with_a_score_reading_the_time),
]


@pytest.mark.parametrize(
    ("case", "text", "calls"), NOTHING_AHEAD, ids=[c[0] for c in NOTHING_AHEAD]
)
def test_no_scores_are_worked_out_ahead_for_a_call_that_may_not_come_or_may_differ(
    monkeypatch: pytest.MonkeyPatch, case: str, text: str, calls: Change
) -> None:
    worked_out: list[str] = []
    real = verbs.prioritize_ahead

    def counted(*args: Any, **kwargs: Any) -> Any:
        worked_out.append(verbs.pod_id(args[2]))
        return real(*args, **kwargs)

    monkeypatch.setattr(verbs, "prioritize_ahead", counted)
    server = _server(text)

    calls(server)

    assert worked_out == []
    for name in ("next", "last"):  # (the counting sees work ahead where there is some)
        server.schedule(_pod(name))
    assert ("shop/last" in worked_out) is (text is not TIMED)


LATE: Final = "{name: late, expression: \"now > timestamp('2026-01-01T00:00:00Z')\"}"


def _scoring_cpu(reading_now: str) -> str:
    """A policy that scores free CPU, with `reading_now` (YAML) beside its scores."""
    scores = '\nscores:\n  - {name: cpu, expression: "nodeInfo.free.cpu.asApproximateFloat()"}'
    return policy("p", reading_now + scores)


TIME_READERS: list[tuple[str, str, bool]] = [
    # a policy, and whether its scores can change with the time
    ("a score reads now", TIMED, True),
    ("a variable reads now", _scoring_cpu(f"variables:\n  - {LATE}"), True),
    ("a match condition reads now", _scoring_cpu(f"match:\n  conditions:\n    - {LATE}"), True),
    ("only a filter reads now (scoring never does)", _scoring_cpu(f"filters:\n  - {LATE}"), False),
    ("nothing reads now", PLACEMENT, False),
]


@pytest.mark.parametrize(("case", "text", "reads"), TIME_READERS, ids=[c[0] for c in TIME_READERS])
def test_whether_scores_can_change_with_the_time_is_known_from_the_policies(
    case: str, text: str, reads: bool
) -> None:
    assert _policies(text).scores_read_time is reads


def test_the_scores_worked_out_ahead_take_the_pod_and_the_rows_the_filter_call_found(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.schedule(_pod("first"))
    read: list[str] = []
    prepare, node_rows = verbs.prepare, server.source.node_rows

    def preparing(*args: Any, **kwargs: Any) -> Any:
        read.append(f"pod {verbs.pod_id(args[1])}")
        return prepare(*args, **kwargs)

    def looking_up(names: Any) -> Any:
        read.append(f"nodes {','.join(names)}")
        return node_rows(names)

    monkeypatch.setattr(verbs, "prepare", preparing)
    monkeypatch.setattr(server.source, "node_rows", looking_up)
    web = _pod("web", labels={"tier": "silver"})

    reply = server.schedule(web)

    assert server.last_prioritize()["scoredAhead"] is True
    # the filter call's: neither the scores ahead nor the prioritize call read them again
    assert read == ["pod shop/web", "nodes a,b,c,batch"]
    passed = json.loads(server.call("filter", _body(web, NAMES)))["NodeNames"]
    assert reply == server.reference("prioritize", _body(web, passed))


# a policy whose match condition fails for pods without a tier label (an error counted by
# every call), beside one whose rules fail on the nodes without a tier label (a filter
# ignoring it, a score) and that reads the pod in every call
FAILING = "\n---\n".join(
    [
        PLACEMENT,
        policy(
            "tiered",
            """
    match:
      conditions:
        - {name: tiered, expression: "pod.metadata.labels.tier != ''"}
    scores:
      - {name: five, expression: "5"}
    """,
        ),
        policy(
            "strict",
            """
    filters:
      - {name: named, expression: "pod.metadata.name != ''"}
      - name: not-bronze
        expression: "node.metadata.labels.tier != 'bronze'"
        failurePolicy: Ignore
    scores:
      - name: gold
        expression: "node.metadata.labels.tier == 'gold' ? 10 : 0"
    """,
        ),
    ]
)


@pytest.mark.parametrize("labels", [None, {"tier": "gold"}], ids=["no tier", "a tier"])
def test_a_prioritize_call_answered_from_the_scores_ahead_counts_what_it_would_have_counted(
    monkeypatch: pytest.MonkeyPatch, labels: dict[str, str] | None
) -> None:
    counted: dict[bool, tuple[list[Any], float]] = {}
    for ahead in (True, False):
        server = _server(FAILING, ahead=ahead)
        decisions = logging.getLogger("policyext.decisions")
        monkeypatch.setattr(decisions, "handlers", [_Lines(server.lines)])
        monkeypatch.setattr(decisions, "propagate", False)
        monkeypatch.setattr(decisions, "level", logging.INFO)
        for name in ("first", "web"):
            server.schedule(_pod(name, labels=labels))
        line = server.last_prioritize()
        assert line.get("scoredAhead", False) is ahead
        counted[ahead] = ([line["errors"], line["feasible"]], server.evaluations())

    assert counted[True] == counted[False]
    assert counted[True][0][0] > 0  # (errors there were, to be counted alike)


class _NotSynced(ClusterSource):
    def ready(self) -> bool:
        return False


def _source_of(kind: str) -> ClusterSource | None:
    if kind == "no node source":
        return None
    source = _NotSynced(fake_api()) if kind == "a source not synced" else ClusterSource(fake_api())
    source.replace("nodes", copy.deepcopy(NODES))
    source.replace("pods", [])
    return source


@pytest.mark.parametrize(
    ("kind", "loaded", "names"),
    [
        ("no node source", True, ["a", "b"]),
        ("a source not synced", True, ["a", "b"]),
        ("a synced source", False, ["a", "b"]),
        ("a synced source", True, ["a", "nowhere"]),
        ("a synced source", True, ["a", "b", "a"]),
    ],
    ids=[
        "no node source",
        "a source not synced",
        "no policies loaded",
        "a node the source does not hold",
        "a name given twice",
    ],
)
def test_no_scores_are_worked_out_ahead_where_prioritize_would_not_score_the_nodes(
    kind: str, loaded: bool, names: list[str]
) -> None:
    """Where the prioritize call itself answers zeros (no node source, no policies), zeros
    for some nodes or a 400, nothing is worked out ahead for it (whoever asks)."""
    from policyext.policy.compile import NOT_LOADED

    policy_set = _policies() if loaded else NOT_LOADED
    ahead = verbs.prioritize_ahead(policy_set, _source_of(kind), _pod("web"), names, NOW)
    assert ahead is None
    synced = _source_of("a synced source")
    assert verbs.prioritize_ahead(_policies(), synced, _pod("web"), ["a", "b"], NOW) is not None


@pytest.mark.parametrize(
    "names",
    [["a", "b", "c"], ["a"], ["b", "c"]],
    ids=["more than it passed", "fewer", "others"],
)
def test_scores_worked_out_ahead_for_other_names_than_the_filter_passed_are_theirs(
    names: list[str],
) -> None:
    """The filter's rows serve only the names it passed; for others the source's rows are
    scored, as the prioritize call would score them."""
    policy_set, source, the_pod = _policies(), _source_of("a synced source"), _pod("web")
    assert source is not None
    asked = wire.ExtenderArgs(the_pod, None, ["a", "b", "batch"])
    filtered = verbs.run_filter(policy_set, source, asked, NOW)
    assert filtered.passed is not None and filtered.passed[1] == ["a", "b"]
    ahead = verbs.prioritize_ahead(policy_set, source, the_pod, names, NOW, None, filtered)
    assert ahead is not None
    rows, worked_out = ahead
    assert rows.names == names
    called = verbs.run_prioritize(policy_set, source, wire.ExtenderArgs(the_pod, None, names), NOW)
    assert worked_out.body == called.body
