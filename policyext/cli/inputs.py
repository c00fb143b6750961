"""What the commands read: policies, pods, snapshots, the live cluster.

The Kubernetes client is imported only by the functions that talk to a cluster, so that
the offline commands start without it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from policyext.cli.output import print_issues
from policyext.cluster.snapshot import SnapshotError, SnapshotSource, read_objects
from policyext.policy.compile import PolicySet, load_policy_set, load_policy_texts
from policyext.policy.loader import load_yaml
from policyext.policy.model import PolicyError
from policyext.policy.resources import NodeSource


def load_rules(paths: Sequence[str]) -> PolicySet | None:
    """The policies under `paths`, or None after printing every problem."""
    try:
        return load_policy_set(paths)
    except PolicyError as e:
        print_issues(e.issues)
        return None


def read_pod(path: str) -> dict[str, Any]:
    try:
        pod = load_yaml(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise SnapshotError(f"{path}: {e}") from None
    if not isinstance(pod, dict):
        raise SnapshotError(f"{path}: not a Pod object")
    return pod


def load_nodes(args: argparse.Namespace) -> tuple[list[dict[str, Any]], NodeSource | None]:
    """The candidate nodes of `--snapshot`, `--cluster` or `--nodes`, and the node source
    that knows their pods (none for `--nodes`)."""
    if args.snapshot or args.cluster:
        source = cluster_snapshot(args) if args.cluster else SnapshotSource.from_file(args.snapshot)
        return list(source.nodes.values()), source
    objects = read_objects(Path(args.nodes))
    return [o for o in objects if o.get("kind", "Node") == "Node"], None


def cluster_api(args: argparse.Namespace) -> Any:
    """The API client of `--cluster` (`--kubeconfig`, `--context`)."""
    from policyext.cluster.client import (  # noqa: PLC0415 - kubernetes only for --cluster
        ClientConfigError,
        ClusterSettings,
        api_client,
        default_kubeconfig,
    )

    settings = ClusterSettings(args.kubeconfig or default_kubeconfig(), context=args.context)
    try:
        return api_client(settings)
    except ClientConfigError as e:
        raise SnapshotError(str(e)) from None


def cluster_snapshot(args: argparse.Namespace, api: Any = None) -> SnapshotSource:
    """The live Nodes and Pods, listed once."""
    from policyext.cluster.listing import cluster_snapshot as listed  # noqa: PLC0415 - as above

    return listed(api if api is not None else cluster_api(args))


def configmap_rules(api: Any, reference: str) -> PolicySet | None:
    """The rules a ConfigMap serves, or None after printing every problem."""
    from policyext.cluster.listing import configmap_rule_texts  # noqa: PLC0415 - as above

    namespace, name = reference.split("/")
    try:
        return load_policy_texts(configmap_rule_texts(api, namespace, name))
    except PolicyError as e:
        print_issues(e.issues)
        return None
