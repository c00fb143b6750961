"""The benchmark workload: sizes, shares, structure and determinism."""

from __future__ import annotations

import functools
import json
import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench import policy, workload
from bench.workload import Workload, encode, full_args, generate, names_args

Json = dict[str, Any]


@functools.cache
def _generated(node_count: int) -> Workload:
    return generate(node_count)


@pytest.fixture
def cluster() -> Workload:
    return _generated(500)


def _labels(node: Json) -> dict[str, str]:
    labels: dict[str, str] = node["metadata"]["labels"]
    return labels


def _is_spot(node: Json) -> bool:
    return _labels(node)["lifecycle"] == "spot"


def _is_not_ready(node: Json) -> bool:
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    return bool(ready[0]["status"] != "True")


def _is_gpu(node: Json) -> bool:
    return workload.GPU_LABEL in _labels(node)


def _is_cordoned(node: Json) -> bool:
    return bool(node["spec"].get("unschedulable"))


def _is_small(node: Json) -> bool:
    return _labels(node)["node.kubernetes.io/instance-type"] == workload.SMALL_TYPE.name


@pytest.mark.parametrize(
    ("node_count", "seed"),
    [(20, workload.DEFAULT_SEED), (500, workload.DEFAULT_SEED), (50, 7)],
)
def test_the_same_arguments_give_the_same_bytes(node_count: int, seed: int) -> None:
    first, second = generate(node_count, seed), generate(node_count, seed)
    assert encode(full_args(first)) == encode(full_args(second))
    assert encode(workload.snapshot(first)) == encode(workload.snapshot(second))


@pytest.mark.parametrize(("a", "b"), [(1, 2), (workload.DEFAULT_SEED, workload.DEFAULT_SEED + 1)])
def test_different_seeds_give_different_clusters(a: int, b: int) -> None:
    assert generate(30, a).node_names() != generate(30, b).node_names()


def test_nodes_are_about_5_5_kb_of_json_each(cluster: Workload) -> None:
    mean = statistics.fmean(len(encode(n)) for n in cluster.nodes)
    assert 5_000 <= mean <= 6_000


@pytest.mark.parametrize(
    ("make_body", "low", "high"),
    [(full_args, 2_500_000, 3_000_000), (names_args, 15_000, 30_000)],
)
def test_the_500_node_request_bodies_have_the_sizes_of_the_scheduler_s(
    cluster: Workload, make_body: Callable[[Workload], Json], low: int, high: int
) -> None:
    assert low <= len(encode(make_body(cluster))) <= high


@pytest.mark.parametrize("node_count", [200, 500])
@pytest.mark.parametrize(
    ("is_kind", "fraction"),
    [
        (_is_spot, workload.SPOT_FRACTION),
        (_is_not_ready, workload.NOT_READY_FRACTION),
        (_is_gpu, workload.GPU_FRACTION),
        (_is_cordoned, workload.CORDONED_FRACTION),
        (_is_small, workload.SMALL_FRACTION),
    ],
)
def test_each_kind_of_node_has_its_exact_share(
    node_count: int, is_kind: Callable[[Json], bool], fraction: float
) -> None:
    nodes = _generated(node_count).nodes
    assert sum(is_kind(n) for n in nodes) == round(fraction * node_count)


def test_the_shares_are_documented_as_asked() -> None:
    assert (workload.SPOT_FRACTION, workload.NOT_READY_FRACTION) == (0.30, 0.03)


@pytest.mark.parametrize(
    ("what", "get"),
    [
        ("name", lambda n: n["metadata"]["name"]),
        ("uid", lambda n: n["metadata"]["uid"]),
        ("podCIDR", lambda n: n["spec"]["podCIDR"]),
        ("providerID", lambda n: n["spec"]["providerID"]),
        ("machineID", lambda n: n["status"]["nodeInfo"]["machineID"]),
    ],
)
def test_node_identities_are_unique(
    cluster: Workload, what: str, get: Callable[[Json], str]
) -> None:
    values = [get(n) for n in cluster.nodes]
    assert len(set(values)) == len(values), what


def test_nodes_have_the_shape_the_scheduler_sends(cluster: Workload) -> None:
    for node in cluster.nodes:
        assert set(node) == {"metadata", "spec", "status"}  # no kind / apiVersion
        assert len(node["metadata"]["labels"]) >= 15
        assert len(node["metadata"]["annotations"]) == 4
        assert [c["type"] for c in node["status"]["conditions"]] == [
            "MemoryPressure",
            "DiskPressure",
            "PIDPressure",
            "Ready",
        ]
        assert 8 <= len(node["status"]["images"]) <= 20
        assert {"cpu", "memory", "pods", "ephemeral-storage"} <= set(node["status"]["allocatable"])
        assert node["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
        assert _labels(node)["kubernetes.io/hostname"] == node["metadata"]["name"]


@pytest.mark.parametrize(
    "path",
    [
        ("metadata", "labels"),
        ("metadata", "annotations"),
        ("status", "capacity"),
        ("status", "allocatable"),
    ],
)
def test_maps_are_in_go_s_sorted_key_order_so_a_go_round_trip_keeps_the_bytes(
    cluster: Workload, path: tuple[str, str]
) -> None:
    for node in cluster.nodes:
        keys = list(node[path[0]][path[1]])
        assert keys == sorted(keys)


def test_gpu_nodes_carry_the_label_the_taint_and_the_resource(cluster: Workload) -> None:
    for node in cluster.nodes:
        taints = {t["key"]: t["effect"] for t in node["spec"].get("taints", [])}
        has_gpu = workload.GPU_RESOURCE in node["status"]["allocatable"]
        assert _is_gpu(node) == has_gpu == (taints.get(workload.GPU_RESOURCE) == "NoSchedule")


def test_cordoned_nodes_and_only_they_have_the_unschedulable_taint(cluster: Workload) -> None:
    for node in cluster.nodes:
        keys = [t["key"] for t in node["spec"].get("taints", [])]
        assert _is_cordoned(node) == (workload.UNSCHEDULABLE_TAINT in keys)


def test_bound_pods_use_part_of_each_node_and_never_more(cluster: Workload) -> None:
    used = policy.requested_cpu(cluster.pods)
    for pod in cluster.pods:
        assert pod["spec"]["nodeName"]
    for node in cluster.nodes:
        allocatable = policy.quantity_millis(node["status"]["allocatable"]["cpu"])
        assert 0 < used[node["metadata"]["name"]] <= allocatable


def test_about_5_pods_are_bound_to_each_node_some_finished(cluster: Workload) -> None:
    phases = Counter(p["status"]["phase"] for p in cluster.pods)
    assert 4.5 <= len(cluster.pods) / len(cluster.nodes) <= 6
    assert phases["Succeeded"] >= 20 and phases["Failed"] >= 20


@pytest.mark.parametrize("field", ["initContainers", "overhead"])
def test_some_bound_pods_have_init_containers_or_overhead(cluster: Workload, field: str) -> None:
    assert sum(field in p["spec"] for p in cluster.pods) >= 20


def test_the_benchmark_pod_requests_600m_cpu_is_critical_and_prefers_a_zone(
    cluster: Workload,
) -> None:
    pod = cluster.pod
    cpus = [c["resources"]["requests"]["cpu"] for c in pod["spec"]["containers"]]
    assert cpus == ["500m", "100m"]
    assert all("memory" in c["resources"]["requests"] for c in pod["spec"]["containers"])
    assert pod["metadata"]["labels"]["critical"] == "true"
    assert pod["metadata"]["annotations"][workload.PREFERRED_ZONE_ANNOTATION] in workload.ZONES
    assert "nodeName" not in pod["spec"] and set(pod) == {"metadata", "spec", "status"}


@pytest.mark.parametrize(("gpus", "asks"), [(0, False), (1, True)])
def test_the_pod_asks_for_gpus_only_when_told(gpus: int, asks: bool) -> None:
    pod = workload.benchmark_pod(gpus=gpus)
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    assert (workload.GPU_RESOURCE in requests) is asks


def test_nodelist_args_carry_every_node_and_null_names(cluster: Workload) -> None:
    args = json.loads(encode(full_args(cluster)))
    assert list(args) == ["Pod", "Nodes", "NodeNames"]
    assert args["NodeNames"] is None and args["Nodes"]["metadata"] == {}
    assert args["Nodes"]["items"] == cluster.nodes


def test_nodenames_args_carry_the_names_in_order_and_null_nodes(cluster: Workload) -> None:
    args = json.loads(encode(names_args(cluster)))
    assert args["Nodes"] is None
    assert args["NodeNames"] == [n["metadata"]["name"] for n in cluster.nodes]


def test_the_snapshot_is_a_v1_list_of_the_nodes_and_pods(tmp_path: Path) -> None:
    small = generate(25)
    path = workload.write_snapshot(small, tmp_path / "deep" / "snapshot.json")
    listed = json.loads(path.read_bytes())
    assert (listed["apiVersion"], listed["kind"]) == ("v1", "List")
    kinds = [(i["apiVersion"], i["kind"]) for i in listed["items"]]
    assert kinds == [("v1", "Node")] * 25 + [("v1", "Pod")] * len(small.pods)
    nodes = [
        {k: v for k, v in i.items() if k not in ("apiVersion", "kind")}
        for i in listed["items"][:25]
    ]
    assert nodes == small.nodes
