"""Kubernetes objects and extender/v1 messages as kube-scheduler marshals them: Go field
names for the protocol's structs, lowercase keys inside Pods and Nodes, no kind/apiVersion
on the objects, quantities as strings, unset pointers as null."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from tests.server.harness import FIXTURES

Json = dict[str, Any]


def node(
    name: str, labels: Mapping[str, str] | None = None, cpu: str = "4", memory: str = "16Gi"
) -> Json:
    return {
        "metadata": {
            "name": name,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
            "resourceVersion": "1",
            "creationTimestamp": "2026-01-12T09:14:07Z",
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": {},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
        },
    }


def pod(
    name: str,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
    owner_kind: str | None = None,
    **spec: object,
) -> Json:
    meta: Json = {
        "name": name,
        "namespace": namespace,
        "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{name}")),
        "creationTimestamp": "2026-03-14T21:02:55Z",
        "labels": dict(labels or {}),
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    if owner_kind:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner_kind,
                "name": f"{name}-owner",
                "controller": True,
            }
        ]
    return {
        "metadata": meta,
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example.com/app:1.0",
                    "resources": {"requests": dict(requests or {"cpu": "100m"})},
                }
            ],
            "schedulerName": "policy-scheduler",
            **spec,
        },
        "status": {"phase": "Pending"},
    }


def args_with_names(pod_object: Json, names: Sequence[str]) -> Json:
    """ExtenderArgs of a nodeCacheCapable extender."""
    return {"Pod": pod_object, "Nodes": None, "NodeNames": list(names)}


def args_with_nodes(pod_object: Json, nodes: Sequence[Json]) -> Json:
    """ExtenderArgs of an extender that is not nodeCacheCapable: a whole v1.NodeList."""
    return {"Pod": pod_object, "Nodes": {"metadata": {}, "items": list(nodes)}, "NodeNames": None}


def fixture(name: str) -> Json:
    value: Json = json.loads((FIXTURES / name).read_bytes())
    return value


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()
