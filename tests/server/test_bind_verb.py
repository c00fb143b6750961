"""/bind binds only what kube-scheduler would: when the extender was started to bind, a pod
named by its UID, of a scheduler the extender binds for, not bound yet, to a node of the
node cache its Enforce filters accept. Every other bind is refused with the reason in the
reply's Error, a log line and a count by reason, and nothing is written to the cluster.

Each case is asked through HTTP of the Flask view and of the worker's direct lane (the two
must answer alike), against the live node cache fed through its replace/apply seam and the
real binder over a stand-in for the API server (tests/cluster/fake_core.py)."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from flask import Flask
from prometheus_client import CollectorRegistry

from policyext.cluster.cache import ClusterSource
from policyext.policy.compile import load_policy_texts
from policyext.server.app import Options, create_app
from policyext.server.binding import REASONS
from policyext.server.metrics import Metrics
from policyext.store import PolicyStore
from tests.cluster.fake_core import FakeCore, fake_api, fake_binder
from tests.server.kube import node, pod

Json = dict[str, Any]

POLICY = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: pools
spec:
  filters:
    - name: not-reserved
      expression: "node.metadata.?labels[?'pool'].orValue('') != 'reserved'"
      message: "the reserved pool is for the platform team"
    - name: watch-spot
      expression: "node.metadata.?labels[?'pool'].orValue('') != 'spot'"
      mode: Audit
"""
SCHEDULER = "policy-scheduler"
NODES = [node("general-a"), node("general-b"), node("reserved-a", {"pool": "reserved"})]
NODES.append(node("spot-a", {"pool": "spot"}))  # only an Audit rule minds it


def _pods() -> dict[str, Json]:
    return {
        "web": pod("web-0", "shop", schedulerName=SCHEDULER),
        "theirs": pod("db-0", "payments", schedulerName="other-scheduler"),
        "nameless": pod("job-0", "shop", schedulerName=""),  # as if defaulted: default-scheduler
        "placed": pod("api-0", "shop", schedulerName=SCHEDULER, nodeName="general-a"),
    }


@dataclass
class World:
    """One extender (its own node cache, metrics and app) and the cluster it binds in."""

    app: Flask
    core: FakeCore
    source: ClusterSource
    metrics: Metrics
    pods: dict[str, Json]

    def request(self, which: str, **changes: str) -> Json:
        meta = self.pods[which]["metadata"]
        args = {"PodName": meta["name"], "PodNamespace": meta["namespace"]}
        args.update(PodUID=meta["uid"], Node="general-a")
        args.update(changes)
        return args

    def refusals(self) -> dict[str, float]:
        counts = {}
        for family in self.metrics.registry.collect():
            if family.name == "policyext_bind_refusals":
                for sample in family.samples:
                    if sample.name.endswith("_total"):
                        counts[sample.labels["reason"]] = sample.value
        return counts


@dataclass(frozen=True)
class Setup:
    """How the world of a case differs from a binding extender's that knows every pod."""

    bind_verb: bool = True
    connected: bool = True
    policies: bool = True
    synced: bool = True
    cached: bool = True  # the pending pods are in the node cache (it has bound before)
    api_fails: int | None = None  # every API call answers this status
    change: Callable[[dict[str, Json]], None] | None = field(default=None, compare=False)


def _world(setup: Setup) -> World:
    pods = _pods()
    if setup.change is not None:
        setup.change(pods)
    store = PolicyStore()
    if setup.policies:
        assert store.reload(lambda: load_policy_texts({"pools.yaml": POLICY}), "test").ok
    source = ClusterSource(fake_api())  # fed by hand: no API server
    if setup.synced:
        source.replace("nodes", copy.deepcopy(NODES))
        listed = (
            pods.values()
            if setup.cached
            else [p for p in pods.values() if p["spec"].get("nodeName")]
        )
        source.replace("pods", copy.deepcopy(list(listed)))
    core = FakeCore()
    for p in pods.values():
        core.add(p)
    core.fail_with = setup.api_fails
    metrics = Metrics(CollectorRegistry())
    options = Options(bind_verb=setup.bind_verb, scheduler_names=(SCHEDULER, "default-scheduler"))
    binder = fake_binder(core, source) if setup.connected else None
    app = create_app(
        store, source if setup.connected else None, binder, metrics, options, lambda: 10**18
    )
    return World(app, core, source, metrics, pods)


def _flask(world: World, args: Json) -> tuple[int, bytes]:
    reply = world.app.test_client().post(
        "/bind", data=json.dumps(args), content_type="application/json"
    )
    return reply.status_code, reply.get_data()


def _lane(world: World, args: Json) -> tuple[int, bytes]:
    answered = world.app.extensions["policyext.direct"]("/bind", json.dumps(args).encode())
    assert answered is not None, "the lane left a valid bind to Flask"
    line, body, account = answered
    account()
    return int(line.split()[0]), body


ANSWERERS = {"the Flask view": _flask, "the direct lane": _lane}


WEB_UID = pod("web-0", "shop")["metadata"]["uid"]


def _replaced(pods: dict[str, Json]) -> None:
    """web-0 deleted and created again: a new UID."""
    pods["web"]["metadata"]["uid"] = "0000-the-pod-after"


@dataclass(frozen=True)
class Case:
    setup: Setup
    asked: str  # which pod
    changes: dict[str, str]
    reason: str  # "" when bound
    says: str  # in the reply's Error


CASES: dict[str, Case] = {
    "a pending pod of ours to a node its filters accept is bound": Case(Setup(), "web", {}, "", ""),
    "the first bind, the pod read from the API server, is bound": Case(
        Setup(cached=False), "web", {}, "", ""
    ),
    "a pod that names no scheduler is the default scheduler's, which we serve": Case(
        Setup(), "nameless", {}, "", ""
    ),
    "a bind asked again for where the pod is bound is done, not made again": Case(
        Setup(), "placed", {}, "", ""
    ),
    "without --bind-verb nothing is bound": Case(
        Setup(bind_verb=False), "web", {}, "disabled", "runs without --bind-verb"
    ),
    "without a cluster connection nothing is bound": Case(
        Setup(connected=False), "web", {}, "no_cluster", "no connection to the Kubernetes API"
    ),
    "a bind without a PodUID is refused": Case(
        Setup(), "web", {"PodUID": ""}, "no_uid", "PodUID is empty"
    ),
    "a bind with another UID is refused": Case(
        Setup(), "web", {"PodUID": "0000-forged"}, "other_uid", "not 0000-forged"
    ),
    "a bind for a replaced pod (first bind) is refused": Case(
        Setup(cached=False, change=_replaced),
        "web",
        {"PodUID": WEB_UID},
        "other_uid",
        "has UID 0000-the-pod-after",
    ),
    "a bind of a pod that does not exist is refused": Case(
        Setup(), "web", {"PodName": "made-up"}, "no_pod", "pod shop/made-up does not exist"
    ),
    "a bind of a pending pod of another scheduler is refused": Case(
        Setup(), "theirs", {}, "other_scheduler", "is for scheduler other-scheduler"
    ),
    "a bind of a pending pod of another scheduler is refused on the first bind too": Case(
        Setup(cached=False), "theirs", {}, "other_scheduler", "is for scheduler other-scheduler"
    ),
    "a bind of a pod bound elsewhere is refused": Case(
        Setup(),
        "placed",
        {"Node": "general-b"},
        "bound_elsewhere",
        "already bound to node general-a",
    ),
    "a bind to a node the cache does not hold is refused": Case(
        Setup(), "web", {"Node": "control-plane-1"}, "no_node", "node control-plane-1 is not in"
    ),
    "a bind to a node an Enforce filter rejects is refused": Case(
        Setup(), "web", {"Node": "reserved-a"}, "filtered", "the reserved pool is for the platform"
    ),
    "a bind to a node only an Audit filter minds is made": Case(
        Setup(), "web", {"Node": "spot-a"}, "", ""
    ),
    "a bind before the policies are loaded is refused": Case(
        Setup(policies=False), "web", {}, "not_ready", "no policies loaded"
    ),
    "a bind before the node cache is synced is refused": Case(
        Setup(synced=False), "web", {}, "not_ready", "node cache is not synced"
    ),
    "a bind whose pod the API server cannot give is refused": Case(
        Setup(cached=False, api_fails=403), "web", {}, "pod_unreadable", "reading pod shop/web-0"
    ),
    "a bind the API server does not make is reported": Case(
        Setup(api_fails=403), "web", {}, "failed", "HTTP 403"
    ),
}


def _expected_binding(case: Case, args: Json) -> list[tuple[str, str, str]]:
    if case.reason or case.asked == "placed":
        return []
    return [(args["PodNamespace"], args["PodName"], args["Node"])]


@pytest.mark.parametrize("answerer", list(ANSWERERS))
@pytest.mark.parametrize("name", list(CASES))
def test_a_bind_is_made_only_when_the_scheduler_would_make_it(
    name: str, answerer: str, caplog: pytest.LogCaptureFixture
) -> None:
    case = CASES[name]
    world = _world(case.setup)
    args = world.request(case.asked, **case.changes)

    with caplog.at_level(logging.WARNING, logger="policyext.server"):
        status, body = ANSWERERS[answerer](world, args)

    assert status == 200  # the protocol's: the Error says what went wrong
    error = json.loads(body)["Error"]
    refusals = world.refusals()
    if case.reason:
        assert case.says in error
        assert refusals[case.reason] == 1
        assert f"bind refused ({case.reason})" in caplog.text
    else:
        assert error == ""
    assert sum(refusals.values()) == (1 if case.reason else 0)
    assert world.core.bindings == _expected_binding(case, args)


@pytest.mark.parametrize("name", list(CASES))
def test_the_direct_lane_and_the_flask_view_answer_a_bind_alike(name: str) -> None:
    case = CASES[name]
    answers = []
    for answer in ANSWERERS.values():
        world = _world(case.setup)
        answers.append((answer(world, world.request(case.asked, **case.changes)), world.refusals()))
    assert answers[0] == answers[1]


def test_every_refusal_reason_exists_at_zero_from_the_start() -> None:
    world = _world(Setup())
    assert world.refusals() == dict.fromkeys(REASONS, 0.0)
    assert {c.reason for c in CASES.values()} - {""} == set(REASONS)


def test_a_bound_pod_is_counted_on_its_node_at_once_and_a_retry_is_done_not_made() -> None:
    world = _world(Setup(cached=False))  # the first bind: the pod read from the API server
    args = world.request("web")

    assert json.loads(_lane(world, args)[1])["Error"] == ""
    counted = world.source.node_info(world.source.get_node("general-a") or {})
    assert counted["podCount"] == 2  # api-0 and web-0, before any watch event
    assert json.loads(_lane(world, args)[1])["Error"] == ""  # the scheduler's retry
    again = _flask(world, {**args, "Node": "general-b"})
    assert "already bound to node general-a" in json.loads(again[1])["Error"]
    assert world.core.bindings == [("shop", "web-0", "general-a")]
    assert world.core.reads == [("shop", "web-0")]  # read once: then the cache holds it
