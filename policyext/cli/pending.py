"""`policyext simulate --pending`: every pending pod under the rules in use and under
candidate rules, and what would change."""

from __future__ import annotations

import argparse
import sys
import time

from policyext.cel import CELError, Timestamp, parse_timestamp
from policyext.cli import emulation
from policyext.cli.flags import EXIT_INVALID, EXIT_OK, fail, split_paths
from policyext.cli.inputs import (
    cluster_api,
    cluster_snapshot,
    configmap_rules,
    load_rules,
    read_snapshot,
)
from policyext.cli.output import emit
from policyext.cli.tables import whatif_table
from policyext.cluster.snapshot import SnapshotError
from policyext.offline.whatif import compare, is_pending, whatif_to_dict
from policyext.policy import PolicySet


def add_flags(parser: argparse.ArgumentParser) -> None:
    current = parser.add_mutually_exclusive_group()
    current.add_argument(
        "--current",
        action="extend",
        type=split_paths,
        metavar="PATH",
        help="with --pending: the rules in use (repeat it or separate paths with commas)",
    )
    current.add_argument(
        "--current-configmap",
        metavar="NAMESPACE/NAME",
        help="with --pending --cluster: the rules in use, from the ConfigMap served",
    )
    parser.add_argument(
        "--scheduler-name", metavar="NAME", help="with --pending: only this scheduler's pods"
    )


def wrong_combination(args: argparse.Namespace) -> str | None:
    if args.nodes:
        return "--pending needs the pods of the cluster: --cluster or --snapshot, not --nodes"
    if not (args.current or args.current_configmap):
        return (
            "--pending compares with the rules in use: "
            "give --current PATH or --current-configmap NAMESPACE/NAME"
        )
    if args.current_configmap and not args.cluster:
        return "--current-configmap reads the live cluster: it goes with --cluster"
    if args.current_configmap and args.current_configmap.count("/") != 1:
        return "--current-configmap is NAMESPACE/NAME"
    return None


def run(args: argparse.Namespace, candidate: PolicySet) -> int:
    current = load_rules(args.current) if args.current else None
    if args.current and current is None:
        return EXIT_INVALID
    try:
        now = parse_timestamp(args.now) if args.now else Timestamp(time.time_ns())
        if args.cluster:
            api = cluster_api(args)
            if current is None:
                current = configmap_rules(api, args.current_configmap)
                if current is None:
                    return EXIT_INVALID
            source = cluster_snapshot(args, api)
        else:
            source = read_snapshot(args.snapshot, no_pods=args.no_pods)
    except (SnapshotError, CELError) as e:
        return fail(str(e))
    assert current is not None
    pods = [p for p in source.pods if is_pending(p, args.scheduler_name)]
    nodes = list(source.nodes.values())
    result = compare(
        current,
        candidate,
        pods,
        nodes,
        source,
        now,
        emulation.cluster(args, nodes, source),
        args.extender_weight,
    )
    emit(args.output, lambda: whatif_to_dict(result), lambda: whatif_table(result), sys.stdout)
    return EXIT_OK
