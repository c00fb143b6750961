"""A stand-in for the calls of the Kubernetes API the binder and the audit Events make (read
a pod, create its Binding, create an Event), answering as the API server does: 404 for a
pod that does not exist, 409 for one already bound or whose UID precondition fails. It
keeps the pods it was given and records every Binding and Event created, so a test sees
what was (not) written to the cluster.

`fake_api` puts it (or any stand-in) where every module of policyext.cluster takes its
clients from (cluster/client.py's `ApiClients`): nothing is patched module by module."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, cast

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from policyext.cluster.binder import ClusterBinder
from policyext.cluster.cache import ClusterSource
from policyext.cluster.client import ApiClients

Json = dict[str, Any]


class _Response:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def release_conn(self) -> None:
        pass


def _status(code: int, message: str) -> ApiException:
    error = ApiException(status=code, reason={404: "Not Found", 409: "Conflict"}.get(code, ""))
    error.body = json.dumps({"kind": "Status", "code": code, "message": message}).encode()
    return error


@dataclass
class FakeCore:
    """The pods of the cluster by (namespace, name); `bindings`: (namespace, name, node) of
    each Binding created; `events`: each Event created; `reads`: the pods read;
    `fail_with`: an HTTP status every call answers (a broken API server)."""

    pods: dict[tuple[str, str], Json] = field(default_factory=dict)
    bindings: list[tuple[str, str, str]] = field(default_factory=list)
    events: list[tuple[str, Json]] = field(default_factory=list)  # (namespace, Event)
    reads: list[tuple[str, str]] = field(default_factory=list)
    fail_with: int | None = None

    def add(self, pod: Json) -> Json:
        meta = pod["metadata"]
        self.pods[(meta["namespace"], meta["name"])] = copy.deepcopy(pod)
        return pod

    def read_namespaced_pod(self, name: str, namespace: str, **_: Any) -> _Response:
        self.reads.append((namespace, name))
        if self.fail_with is not None:
            raise _status(self.fail_with, "the API server is unwell")
        found = self.pods.get((namespace, name))
        if found is None:
            raise _status(404, f'pods "{name}" not found')
        return _Response(json.dumps(found).encode())

    def create_namespaced_pod_binding(
        self, name: str, namespace: str, body: k8s.V1Binding, **_: Any
    ) -> _Response:
        if self.fail_with is not None:
            raise _status(self.fail_with, "the API server is unwell")
        found = self.pods.get((namespace, name))
        if found is None:
            raise _status(404, f'pods "{name}" not found')
        if body.metadata.uid and body.metadata.uid != found["metadata"]["uid"]:
            raise _status(409, "Precondition failed: UID in precondition does not match")
        if found["spec"].get("nodeName"):
            raise _status(409, f"pod {name} is already assigned to node")
        found["spec"]["nodeName"] = body.target.name
        self.bindings.append((namespace, name, body.target.name))
        return _Response(b"{}")

    def create_namespaced_event(self, namespace: str, body: Json, **_: Any) -> Json:
        if self.fail_with is not None:
            raise _status(self.fail_with, "the API server is unwell")
        self.events.append((namespace, body))
        return body


def fake_api(core: object = None, custom: object = None) -> ApiClients:
    """The clients with `core` and `custom` stood in for (each the real group over no
    connection when not given: for a source fed by hand, which never calls it)."""
    unconnected = ApiClients.over(k8s.ApiClient())
    return ApiClients(
        cast(k8s.CoreV1Api, core or unconnected.core),
        cast(k8s.CustomObjectsApi, custom or unconnected.custom),
        unconnected.host,
    )


def fake_binder(core: FakeCore, source: ClusterSource | None = None) -> ClusterBinder:
    """The real binder over the fake API (no retries: the fake answers at once)."""
    return ClusterBinder(fake_api(core), source, retry_budget=0.0, sleep=lambda _: None)
