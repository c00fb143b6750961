"""Small builders for policy tests: policies from YAML text, pods and nodes as dicts."""

from __future__ import annotations

import textwrap
from typing import Any

from policyext.cel import Timestamp
from policyext.policy.compile import PolicySet, load_policy_texts
from policyext.policy.engine import Evaluation, evaluate
from policyext.policy.node_source import NodeSource

NOW = Timestamp(1_780_000_000 * 1_000_000_000)  # a fixed time for the tests


def policies(*texts: str) -> PolicySet:
    """One file per text; each text is the YAML body of a policy document."""
    return load_policy_texts({f"p{i}.yaml": textwrap.dedent(t) for i, t in enumerate(texts)})


def policy(name: str, spec: str) -> str:
    """A SchedulingPolicy document with the given spec (YAML, indented freely)."""
    body = textwrap.indent(textwrap.dedent(spec).strip(), "  ")
    return (
        "apiVersion: policyext.io/v1alpha1\nkind: SchedulingPolicy\n"
        f"metadata:\n  name: {name}\nspec:\n{body}\n"
    )


def pod(
    name: str = "web",
    namespace: str = "shop",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    cpu: str | None = "500m",
    scheduler: str | None = None,
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    requests.update(extra or {})
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "app:1", "resources": {"requests": requests}}]
    }
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": spec,
    }


def node(
    name: str,
    labels: dict[str, str] | None = None,
    cpu: str = "4",
    memory: str = "16Gi",
    taints: list[dict[str, str]] | None = None,
    ready: bool = True,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}, "resourceVersion": "1"},
        "spec": {"taints": taints or []},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def run(
    policy_set: PolicySet,
    the_pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    source: NodeSource | None = None,
    *,
    columns: bool = True,
) -> Evaluation:
    return evaluate(policy_set, the_pod, nodes, source, NOW, columns=columns)
