"""What the commands read: policies, pods, snapshots, the live cluster.

The Kubernetes client is imported only by the functions that talk to a cluster, so that
the offline commands start without it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from policyext.cli.output import print_issues
from policyext.cluster.snapshot import SnapshotError, SnapshotSource, read_objects
from policyext.offline.workloads import PodInput, WorkloadError, pods_from
from policyext.policy import (
    InvalidQuantity,
    NodeSource,
    PolicyError,
    PolicySet,
    field_problem,
    load_policy_set,
    load_policy_texts,
    node_allocatable,
    pod_requests,
)
from policyext.store import unexpected_failure


def load_rules(paths: Sequence[str]) -> PolicySet | None:
    """The policies under `paths`, or None after printing every problem."""
    try:
        return load_policy_set(paths)
    except PolicyError as e:
        print_issues(e.issues)
        return None
    except Exception as e:  # said as a problem, as a reload says it
        print_issues([unexpected_failure(e)])
        return None


def read_pods(path: str) -> list[PodInput]:
    """The pods a file stands for: a Pod, a workload's pod template, or a List of them."""
    try:
        pods = pods_from(read_objects(Path(path)), path)
    except WorkloadError as e:
        raise SnapshotError(str(e)) from None
    if not pods:
        raise SnapshotError(f"{path}: no Pod or workload in the file")
    for each in pods:
        try:
            pod_requests(each.pod)  # an invalid quantity is an error naming its field, not a 0
        except InvalidQuantity as e:
            raise SnapshotError(f"{path}: {e}") from None
    return pods


def read_snapshot(path: str, *, no_pods: bool) -> SnapshotSource:
    """A snapshot file; one without Nodes is refused, and one with Nodes but no Pods
    unless `no_pods` says an empty cluster is meant: every node would look empty to
    `nodeInfo`."""
    source = SnapshotSource.with_nodes(path)
    if not source.pods and not no_pods:
        raise SnapshotError(
            f"{path}: Nodes but no Pods, so every node would look empty (nodeInfo); save the "
            "pods too (kubectl get nodes,pods,namespaces -A -o yaml), or give --no-pods if no "
            "pod runs"
        )
    return source


def load_nodes(args: argparse.Namespace) -> tuple[list[dict[str, Any]], NodeSource | None]:
    """The candidate nodes of `--snapshot`, `--cluster` or `--nodes`, and the node source
    that knows their pods (none for `--nodes`)."""
    if args.snapshot or args.cluster:
        source = (
            cluster_snapshot(args)
            if args.cluster
            else read_snapshot(args.snapshot, no_pods=args.no_pods)
        )
        return list(source.nodes.values()), source
    objects = read_objects(Path(args.nodes))
    nodes = [o for o in objects if o.get("kind", "Node") == "Node"]
    if not nodes:
        raise SnapshotError(
            f"{args.nodes}: no Node in the file, so no node to schedule on; save them with "
            "kubectl get nodes -o yaml"
        )
    for node in nodes:
        try:
            node_allocatable(node)  # an invalid quantity is an error naming its field
        except InvalidQuantity as e:
            raise SnapshotError(f"{args.nodes}: {e}") from None
    return nodes, None


def cluster_api(args: argparse.Namespace) -> Any:
    """The API client of `--cluster` (`--kubeconfig`, `--context`)."""
    from policyext.cluster.client import (  # noqa: PLC0415 - kubernetes only for --cluster
        ClientConfigError,
        ClusterSettings,
        api_clients,
        default_kubeconfig,
    )

    settings = ClusterSettings(args.kubeconfig or default_kubeconfig(), context=args.context)
    try:
        return api_clients(settings)
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


def crd_rules(api: Any, paths: Sequence[str] = ()) -> PolicySet | None:
    """The policies the extender serves with `--rules-crd` (and `--rules` PATHS, if any):
    the cluster's SchedulingPolicy objects, listed once and loaded as the extender loads
    them. An object that does not load on its own, or whose name a file holds, is left out
    with its problems said (the extender serves its last good generation instead, which
    only the extender knows); None after printing every problem when the rest does not
    load."""
    from policyext.cluster.listing import schedulingpolicy_objects  # noqa: PLC0415 - as above
    from policyext.cluster.policy_sources import PolicySources  # noqa: PLC0415
    from policyext.store import PolicyStore  # noqa: PLC0415

    objects = schedulingpolicy_objects(api)
    store = PolicyStore()
    PolicySources(store, list(paths), objects=True).objects_changed(objects)
    status = store.status
    assert status is not None  # listed: the sources have loaded once
    if not status.ok and not status.partial:
        print_issues(list(status.issues) or [status.error or "the policies did not load"])
        return None
    for issue in status.issues:
        text = objects.texts.get(issue.location.file)
        said = f"{issue.location.file}: {field_problem(issue, text)}" if text else str(issue)
        print(f"warning: left out: {said}", file=sys.stderr)
    return store.current
