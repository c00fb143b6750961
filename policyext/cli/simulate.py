"""`policyext simulate`: rank the nodes for one pod with every reason shown; with
`--pending`, compare two rule sets for every pending pod (see `pending`)."""

from __future__ import annotations

import argparse
import sys

from policyext.cel import CELError, parse_timestamp
from policyext.cli import emulation, pending
from policyext.cli.flags import (
    EXIT_INVALID,
    EXIT_OK,
    Commands,
    add_kubeconfig,
    add_output,
    add_paths,
    fail,
    split_paths,
    usage,
)
from policyext.cli.inputs import cluster_api, crd_rules, load_nodes, load_rules, read_pods
from policyext.cli.output import emit
from policyext.cli.tables import decision_table
from policyext.cluster.snapshot import SnapshotError
from policyext.offline.explain import decision_to_dict
from policyext.offline.scheduler.decision import decide


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "simulate",
        help="rank nodes for a pod under the policies, with every reason shown; or compare "
        "two rule sets for every pending pod",
    )
    add_paths(
        parser,
        "--rules",
        dest="rules",
        help="policy files or folders (with --pending: the candidate rules)",
    )
    pods = parser.add_mutually_exclusive_group(required=True)
    pods.add_argument(
        "--pod",
        action="extend",
        type=split_paths,
        metavar="FILE",
        help="a Pod, a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob (its "
        "pod template), or a List of them: each is simulated (YAML or JSON; repeat it or "
        "separate files with commas)",
    )
    pods.add_argument(
        "--pending",
        action="store_true",
        help="every pending pod, under --current and under --rules: what would change",
    )
    nodes = parser.add_mutually_exclusive_group(required=True)
    nodes.add_argument("--snapshot", metavar="FILE", help="Nodes and Pods (kubectl get -o yaml)")
    nodes.add_argument("--nodes", metavar="FILE", help="Nodes only (no pod information)")
    nodes.add_argument(
        "--cluster", action="store_true", help="list the live Nodes and Pods once (kubeconfig)"
    )
    parser.add_argument(
        "--rules-crd",
        action="store_true",
        help="with --cluster: the cluster's SchedulingPolicy objects (with --rules: one set of "
        "both), as the extender serves them with --rules-crd; an object that does not load "
        "is left out, and said",
    )
    parser.add_argument(
        "--no-pods",
        action="store_true",
        help="with --snapshot: the snapshot has no Pods on purpose (otherwise an error)",
    )
    add_kubeconfig(parser)
    pending.add_flags(parser)
    parser.add_argument("--now", metavar="TIME", help="the time as `now` (RFC 3339)")
    emulation.add_flags(parser)
    add_output(parser, ("table", "json", "yaml"))
    parser.set_defaults(run=run)


def _wrong_combination(args: argparse.Namespace) -> str | None:
    """What is wrong with a combination of flags argparse cannot express, if anything."""
    if not args.rules and not args.rules_crd:
        return "give the policies: PATH..., --rules PATH or --rules-crd"
    if args.rules_crd and not args.cluster:
        return "--rules-crd reads the live cluster: it goes with --cluster"
    if (args.kubeconfig or args.context) and not args.cluster:
        return "--kubeconfig and --context go with --cluster"
    if args.no_pods and not args.snapshot:
        return "--no-pods goes with --snapshot"
    wrong = emulation.wrong_combination(args)
    if wrong is not None:
        return wrong
    if args.pending:
        return pending.wrong_combination(args)
    if args.current or args.current_configmap or args.scheduler_name:
        return "--current, --current-configmap and --scheduler-name go with --pending"
    return None


def run(args: argparse.Namespace) -> int:
    wrong = _wrong_combination(args)
    if wrong is not None:
        return usage(wrong)
    try:
        policy_set = (
            crd_rules(cluster_api(args), args.rules or ())
            if args.rules_crd
            else load_rules(args.rules)
        )
    except SnapshotError as e:
        return fail(str(e))
    if policy_set is None:
        return EXIT_INVALID
    if args.pending:
        return pending.run(args, policy_set)
    try:
        pods = [pod for path in args.pod for pod in read_pods(path)]
        now = parse_timestamp(args.now) if args.now else None
        nodes, source = load_nodes(args)
    except (SnapshotError, CELError) as e:
        return fail(str(e))
    cluster = emulation.cluster(args, nodes, source)
    results = [
        (
            p,
            decide(
                policy_set, p.pod, nodes, source, now, cluster, extender_weight=args.extender_weight
            ),
        )
        for p in pods
    ]
    if len(results) == 1:  # one pod: its result alone, as it always was
        [(_, decision)] = results
        emit(
            args.output,
            lambda: decision_to_dict(decision),
            lambda: decision_table(decision),
            sys.stdout,
        )
    else:  # each pod of a List: its name and where it came from, then its result
        emit(
            args.output,
            lambda: [{"pod": p.name, "from": p.origin, **decision_to_dict(d)} for p, d in results],
            lambda: "\n".join(
                f"== pod {p.name} (from {p.origin})\n{decision_table(d)}" for p, d in results
            ),
            sys.stdout,
        )
    return EXIT_OK
