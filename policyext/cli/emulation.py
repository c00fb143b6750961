"""The flags of kube-scheduler's emulation, shared by `simulate` and `explain`: on by
default, `--policies-only` turns it off; `--extender-weight` is the extender's weight in
the scheduler's configuration (`policyext config --weight`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from policyext.offline.scheduler.cluster import Cluster


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policies-only",
        action="store_true",
        help="judge by the policies alone, without emulating kube-scheduler's own plugins",
    )
    parser.add_argument(
        "--extender-weight",
        type=int,
        default=1,
        metavar="N",
        help="the extender's weight in the KubeSchedulerConfiguration (default 1)",
    )


def wrong_combination(args: argparse.Namespace) -> str | None:
    if args.extender_weight < 1:
        return "--extender-weight must be at least 1"
    return None


def cluster(
    args: argparse.Namespace, nodes: Sequence[dict[str, Any]], source: object
) -> Cluster | None:
    """The cluster the emulation sees (None with --policies-only): the nodes and, when the
    source knows them, the pods bound to them and the namespaces."""
    if args.policies_only:
        return None
    pods = getattr(source, "pods", None) if source is not None else None
    namespaces = getattr(source, "namespaces", None) if source is not None else None
    return Cluster(nodes, pods, namespaces)
