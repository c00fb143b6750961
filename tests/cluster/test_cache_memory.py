"""The live caches hold a bound pod by what is read of it, and a pending pod whole; a list
leaves the objects it brought out of the garbage collector's traversals.

At SIG Scalability's envelope (150,000 pods) the bound pods are most of a worker's memory
and a full collection over them held the interpreter for seconds (docs/benchmarks.md,
"The caches at scale"). What is left out must change nothing that is read: a preemption
victim's requests and `nodeInfo.pods` entry, a bind asked again, an audit finding's names.
"""

from __future__ import annotations

import copy
import gc
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from policyext.cluster.cache import ClusterSource, bound_part, listed_pod
from policyext.cluster.watch import Reflector
from policyext.policy.resources import pod_requests, pod_summary
from tests.cluster.fake_core import fake_api

Json = dict[str, Any]

PROJECTED_VOLUME: Json = {
    "name": "kube-api-access-x1",
    "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
}


def _api_pod(name: str, spec: Json) -> Json:
    """A pod as a list returns it once a kubelet runs it: what the API server and the
    kubelet fill in around the spec that matters."""
    containers = spec.get("containers", [])
    return {
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": f"uid-{name}",
            "resourceVersion": "41",
            "labels": {"app": "web"},
            "annotations": {"team": "storefront"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1", "uid": "rs-1"}],
        },
        "spec": {
            "volumes": [PROJECTED_VOLUME],
            "dnsPolicy": "ClusterFirst",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}],
            "schedulerName": "policy-scheduler",
            "nodeName": "a",
            **spec,
            "containers": [
                {
                    **c,
                    "image": "registry.example/web:1",
                    "env": [{"name": "MODE", "value": "prod"}],
                    "volumeMounts": [{"name": "kube-api-access-x1", "mountPath": "/var/run"}],
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}},
                }
                for c in containers
            ],
        },
        "status": {
            "phase": "Running",
            "podIP": "10.1.2.3",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0}],
        },
    }


def _requests(cpu: str, memory: str = "64Mi") -> Json:
    return {"requests": {"cpu": cpu, "memory": memory}}


# the shapes pod_requests reads differently: each must count the same from what is kept
SHAPES = [
    ("plain containers", {"containers": [{"name": "app", "resources": _requests("250m")}] * 2}),
    (
        "an init container larger than the app",
        {
            "initContainers": [{"name": "migrate", "resources": _requests("2")}],
            "containers": [{"name": "app", "resources": _requests("500m")}],
        },
    ),
    (
        "a sidecar (a restartable init container)",
        {
            "initContainers": [
                {"name": "proxy", "restartPolicy": "Always", "resources": _requests("100m")}
            ],
            "containers": [{"name": "app", "resources": _requests("500m")}],
        },
    ),
    (
        "a RuntimeClass overhead",
        {
            "overhead": {"cpu": "250m", "memory": "160Mi"},
            "containers": [{"name": "app", "resources": _requests("1")}],
        },
    ),
    (
        "pod-level requests",
        {
            "resources": _requests("3", "1Gi"),
            "containers": [{"name": "app", "resources": _requests("1")}],
        },
    ),
    ("a container that requests nothing", {"containers": [{"name": "app"}]}),
]


def _source(*pods: Json) -> ClusterSource:
    source = ClusterSource(fake_api())  # fed by hand: it never connects
    source.replace("nodes", [{"metadata": {"name": "a", "resourceVersion": "1"}, "status": {}}])
    source.replace("pods", list(pods))
    return source


@pytest.mark.parametrize(("shape", "spec"), SHAPES, ids=[s for s, _ in SHAPES])
def test_a_bound_pod_is_held_without_what_nothing_reads_and_counts_the_same(
    shape: str, spec: Json
) -> None:
    full = _api_pod("web-0", spec)
    source = _source(copy.deepcopy(full))
    held = source.pod_by_uid("uid-web-0")
    assert held is not None
    assert held is source.pod("shop", "web-0")
    # a preemption victim's requests and nodeInfo.pods entry, from what is held
    assert pod_requests(held, strict=False) == pod_requests(full, strict=False)
    assert pod_summary(held) == pod_summary(full)
    # a bind asked again reads these; an audit finding the names and UID
    assert held["spec"]["nodeName"] == "a"
    assert held["spec"]["schedulerName"] == "policy-scheduler"
    assert held["metadata"]["uid"] == "uid-web-0"
    assert held["status"] == {"phase": "Running"}
    # what nothing reads of a bound pod is not held
    assert "volumes" not in held["spec"] and "tolerations" not in held["spec"]
    assert "annotations" not in held["metadata"]
    assert all(set(c) <= {"name", "resources", "restartPolicy"} for c in held["spec"]["containers"])


def test_a_pending_pod_is_held_whole_for_the_bind_that_evaluates_the_policies_on_it() -> None:
    pending = _api_pod("web-1", SHAPES[0][1])
    del pending["spec"]["nodeName"]
    pending["status"] = {"phase": "Pending"}
    source = _source()
    source.apply("pods", "ADDED", copy.deepcopy(pending))
    assert source.pod("shop", "web-1") == pending


def test_a_pod_bound_by_the_watch_after_it_was_pending_is_held_by_its_bound_part() -> None:
    pending = _api_pod("web-2", SHAPES[0][1])
    del pending["spec"]["nodeName"]
    source = _source()
    source.apply("pods", "ADDED", copy.deepcopy(pending))
    source.apply("pods", "MODIFIED", _api_pod("web-2", SHAPES[0][1]))
    held = source.pod("shop", "web-2")
    assert held is not None and "volumes" not in held["spec"]
    assert source.node_info(source.get_node("a") or {})["podCount"] == 1


def test_the_objects_of_a_list_are_left_out_of_the_collectors_traversals() -> None:
    """A full collection over 150,000 held pods held the interpreter for seconds: what a
    list brings lives until the next event about it and is freed by reference counting."""
    before = gc.get_freeze_count()
    try:
        source = _source(*(_api_pod(f"web-{i}", SHAPES[0][1]) for i in range(100)))
        assert source.node_info(source.get_node("a") or {})["podCount"] == 100
        # each held pod is a few dictionaries and lists: far more than 100 objects
        assert gc.get_freeze_count() - before > 500
    finally:
        gc.unfreeze()


class _Pages:
    """A list call answered in two pages (a bound pod, then a pending one), then a watch
    that ends the reflector's loop."""

    def __init__(self, pods: list[Json]) -> None:
        self.pods = pods
        self.reflector: Reflector | None = None

    def __call__(self, **kwargs: Any) -> Any:
        if kwargs.get("watch"):
            assert self.reflector is not None
            self.reflector._stop.set()
            return _Stream()
        first = not kwargs.get("_continue")
        meta = {"continue": "page-2"} if first else {"resourceVersion": "9"}
        items = self.pods[:1] if first else self.pods[1:]
        return _Body(json.dumps({"items": items, "metadata": meta}).encode())


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def release_conn(self) -> None:
        pass


class _Stream:
    def stream(self, amt: int | None = None, decode_content: bool = False) -> Iterator[bytes]:
        return iter(())

    def close(self) -> None:
        pass


class _Kept:
    def __init__(self) -> None:
        self.items: list[Json] = []
        self.replaced = threading.Event()

    def replace(self, items: list[Json], started: float) -> None:
        self.items = items
        self.replaced.set()

    def apply(self, kind: str, obj: Json) -> None:
        pass

    def touched(self) -> None:
        pass


def test_the_pod_watch_keeps_the_bound_part_of_each_listed_pod_as_its_page_arrives() -> None:
    bound = _api_pod("web-3", SHAPES[1][1])
    bound["metadata"]["managedFields"] = [{"manager": "kubelet", "operation": "Update"}]
    pending = _api_pod("web-4", SHAPES[1][1])
    del pending["spec"]["nodeName"]
    pending["metadata"]["managedFields"] = [{"manager": "kube-controller-manager"}]
    handler = _Kept()
    api = _Pages([copy.deepcopy(bound), copy.deepcopy(pending)])
    reflector = Reflector("pods", api, handler, keep=listed_pod)
    api.reflector = reflector
    reflector.start()
    try:
        assert handler.replaced.wait(60)
    finally:
        reflector.stop()
    kept_bound, kept_pending = handler.items
    assert kept_bound == bound_part(bound) and "volumes" not in kept_bound["spec"]
    del pending["metadata"]["managedFields"]  # (no policy reads them: never held)
    assert kept_pending == pending
