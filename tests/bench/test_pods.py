"""The pods never seen before: their variety, their shares, and that no two are alike to
the policy."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable

import pytest

from bench import pods, policy, workload
from bench.pods import pending_pods
from bench.workload import Json


@functools.cache
def _pods() -> list[Json]:
    return pending_pods(1000)


@functools.cache
def _facts() -> list[policy.PodFacts]:
    return [policy.PodFacts.of(p) for p in _pods()]


def _cpus() -> list[str]:
    return [c["resources"]["requests"]["cpu"] for p in _pods() for c in p["spec"]["containers"]]


def test_the_same_arguments_give_the_same_pods_byte_for_byte() -> None:
    assert json.dumps(pending_pods(50)) == json.dumps(pending_pods(50))
    assert pending_pods(50) != pending_pods(50, seed=7)


def test_no_two_pods_are_alike_in_what_the_policy_reads() -> None:
    assert len(set(_facts())) == len(_facts())


def test_pod_names_are_unique() -> None:
    keys = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in _pods()]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize(
    ("written", "looks_like"),
    [
        ("millicores such as 250m", lambda v: v.endswith("m")),
        ("fractions of a core such as 0.5", lambda v: "." in v),
        ("whole cores such as 2", lambda v: v.isdigit()),
    ],
)
def test_cpu_is_written_in_every_format(written: str, looks_like: Callable[[str], bool]) -> None:
    assert sum(bool(looks_like(v)) for v in _cpus()) >= 30, written


def test_the_main_container_asks_for_100m_to_4_cores() -> None:
    mains = [
        policy.quantity_millis(p["spec"]["containers"][0]["resources"]["requests"]["cpu"])
        for p in _pods()
    ]
    assert min(mains) >= pods.MIN_CPU
    assert max(mains) <= pods.MAX_CPU + 100  # a duplicate asks for 10m more
    assert max(mains) >= 3000 and min(mains) <= 150


def test_memory_is_written_in_binary_and_decimal_units() -> None:
    memory = {
        c["resources"]["requests"]["memory"] for p in _pods() for c in p["spec"]["containers"]
    }
    assert any(m.endswith("Mi") for m in memory) and any(m.endswith("G") for m in memory)


@pytest.mark.parametrize(
    ("what", "is_it", "share"),
    [
        ("critical", lambda f: f.critical, pods.CRITICAL_SHARE),
        ("asking for GPUs", lambda f: f.wants_gpu, pods.GPU_SHARE),
        ("preferring a zone with nodes", lambda f: f.preferred_zone in workload.ZONES, 3 / 7),
        ("preferring no zone", lambda f: f.preferred_zone == "", 3 / 7),
        (
            "preferring a zone without nodes",
            lambda f: f.preferred_zone == pods.ZONE_WITHOUT_NODES,
            1 / 7,
        ),
    ],
)
def test_each_kind_of_pod_has_about_its_share(
    what: str, is_it: Callable[[policy.PodFacts], bool], share: float
) -> None:
    count = sum(bool(is_it(f)) for f in _facts())
    assert abs(count / len(_facts()) - share) < 0.05, what


@pytest.mark.parametrize(
    ("what", "has_it", "share"),
    [
        ("an init container", lambda p: "initContainers" in p["spec"], pods.INIT_SHARE),
        ("a RuntimeClass overhead", lambda p: "overhead" in p["spec"], pods.OVERHEAD_SHARE),
    ],
)
def test_some_pods_have_init_containers_or_overhead(
    what: str, has_it: Callable[[Json], bool], share: float
) -> None:
    count = sum(bool(has_it(p)) for p in _pods())
    assert abs(count / len(_pods()) - share) < 0.05, what


def test_init_containers_and_overhead_change_the_effective_request() -> None:
    raised = [
        p
        for p in _pods()
        if policy.pod_requests_millis(p, "cpu")
        > sum(
            policy.quantity_millis(c["resources"]["requests"]["cpu"])
            for c in p["spec"]["containers"]
        )
    ]
    assert len(raised) >= 100


def test_the_pods_are_pending_and_unbound_as_the_scheduler_sends_them() -> None:
    for pod in _pods():
        assert pod["status"] == {"phase": "Pending"} and "nodeName" not in pod["spec"]
        assert set(pod) == {"metadata", "spec", "status"}


def test_the_pods_divide_the_nodes_differently() -> None:
    w = workload.generate(200)
    reference = policy.Reference(w.nodes, w.pods)
    feasible = Counter(len(reference.verdicts(p).feasible) for p in _pods()[:100])
    assert len(feasible) >= 20  # not two kinds of answer, but many
