"""The pods that users' objects stand for: a Pod itself, or the pod a workload creates.

`policyext simulate --pod` and PolicyTest cases take what users have at hand: a Pod, a
Deployment (or StatefulSet, DaemonSet, ReplicaSet, Job, CronJob) whose pod template is what
the scheduler will see, or a List of them (`kind: List`, or several YAML documents). Any
other kind is refused by name: a Service read as a pod would be a pod with no labels and
no requests, answered with confidence.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

Json = dict[str, Any]

# the kinds whose pod template is spec.template, and the kind of their pods' owner
TEMPLATE_OWNERS: Final = {
    "Deployment": ("apps/v1", "ReplicaSet"),  # a Deployment's pods belong to its ReplicaSet
    "StatefulSet": ("apps/v1", "StatefulSet"),
    "DaemonSet": ("apps/v1", "DaemonSet"),
    "ReplicaSet": ("apps/v1", "ReplicaSet"),
    "Job": ("batch/v1", "Job"),
}
CRONJOB: Final = "CronJob"  # spec.jobTemplate.spec.template; its pods belong to a Job
ACCEPTED: Final = ("Pod", *TEMPLATE_OWNERS, CRONJOB)


class WorkloadError(ValueError):
    """An object that stands for no pod, or a workload without a pod template."""


@dataclass(frozen=True)
class PodInput:
    pod: Json
    origin: str  # "Pod shop/web" or "Deployment shop/web", to tell the results apart

    @property
    def name(self) -> str:
        meta = self.pod.get("metadata") or {}
        namespace = meta.get("namespace")
        return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def pods_from(documents: Iterable[object], where: str) -> list[PodInput]:
    """Every pod the documents stand for, in order; Lists are opened. `where` names the
    input in errors (a file name)."""
    found: list[PodInput] = []
    for index, document in enumerate(_flatten(documents, where), start=1):
        found.append(pod_from(document, f"{where}: object {index}"))
    return found


def pod_from(obj: Json, where: str) -> PodInput:
    kind = obj.get("kind")
    if kind is None and isinstance((obj.get("spec") or {}).get("containers"), list):
        kind = "Pod"  # a Pod written without its kind, as in many fixtures
    if kind == "Pod":
        return PodInput(obj, f"Pod {_qualified(obj)}")
    if kind == CRONJOB:
        job = _mapping(obj, ("spec", "jobTemplate", "spec"))
        template = job.get("template") if job is not None else None
        owner = ("batch/v1", "Job")
    elif kind in TEMPLATE_OWNERS:
        template = (_mapping(obj, ("spec",)) or {}).get("template")
        owner = TEMPLATE_OWNERS[kind]
    else:
        shown = f"kind {kind!r}" if kind else "an object without a kind"
        raise WorkloadError(
            f"{where}: {shown} is not a pod; give a Pod, a {', '.join(ACCEPTED[1:-1])} "
            f"or {CRONJOB} (its pod template), or a List of them"
        )
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        raise WorkloadError(f"{where}: {kind} {_qualified(obj)} has no pod template")
    return PodInput(_templated_pod(obj, template, owner), f"{kind} {_qualified(obj)}")


def _templated_pod(workload: Json, template: Json, owner: tuple[str, str]) -> Json:
    """The pod the workload's controller would create, as the scheduler sees it: the
    template's labels, annotations and spec, in the workload's namespace, owned by it."""
    meta = workload.get("metadata") or {}
    pod_meta = copy.deepcopy(template.get("metadata") or {})
    pod_meta.setdefault("name", meta.get("name", ""))
    if meta.get("namespace"):
        pod_meta["namespace"] = meta["namespace"]
    api_version, kind = owner
    pod_meta["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": meta.get("name", ""), "controller": True}
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_meta,
        "spec": copy.deepcopy(template["spec"]),
    }


def _flatten(documents: Iterable[object], where: str) -> Iterable[Json]:
    for document in documents:
        if document is None:
            continue
        if not isinstance(document, dict):
            raise WorkloadError(f"{where}: a document is not an object")
        if str(document.get("kind", "")).endswith("List") and "items" in document:
            items = document["items"]
            if not isinstance(items, list):
                raise WorkloadError(f"{where}: the items of a {document['kind']} are not a list")
            yield from _flatten(items, where)
        else:
            yield document


def _mapping(obj: Json, path: tuple[str, ...]) -> Json | None:
    value: object = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else None


def _qualified(obj: Json) -> str:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", "")) or "(unnamed)"
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else name
