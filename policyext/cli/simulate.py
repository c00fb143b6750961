"""`policyext simulate`: rank the nodes for one pod with every reason shown; with
`--pending`, compare two rule sets for every pending pod (see `pending`)."""

from __future__ import annotations

import argparse
import sys

from policyext.cel import CELError, parse_timestamp
from policyext.cli import pending
from policyext.cli.flags import (
    EXIT_INVALID,
    EXIT_OK,
    Commands,
    add_output,
    add_paths,
    fail,
    split_paths,
    usage,
)
from policyext.cli.inputs import load_nodes, load_rules, read_pods
from policyext.cli.output import emit
from policyext.cli.tables import evaluation_table
from policyext.cluster.snapshot import SnapshotError
from policyext.policy.engine import evaluate
from policyext.policy.explain import evaluation_to_dict


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
        "--no-pods",
        action="store_true",
        help="with --snapshot: the snapshot has no Pods on purpose (otherwise an error)",
    )
    parser.add_argument(
        "--kubeconfig", metavar="FILE", help="with --cluster (default: $KUBECONFIG, ~/.kube/config)"
    )
    parser.add_argument("--context", metavar="NAME", help="a context of the kubeconfig")
    pending.add_flags(parser)
    parser.add_argument("--now", metavar="TIME", help="the time as `now` (RFC 3339)")
    add_output(parser, ("table", "json", "yaml"))
    parser.set_defaults(run=run)


def _wrong_combination(args: argparse.Namespace) -> str | None:
    """What is wrong with a combination of flags argparse cannot express, if anything."""
    if not args.rules:
        return "give the policies: PATH... or --rules PATH"
    if (args.kubeconfig or args.context) and not args.cluster:
        return "--kubeconfig and --context go with --cluster"
    if args.no_pods and not args.snapshot:
        return "--no-pods goes with --snapshot"
    if args.pending:
        return pending.wrong_combination(args)
    if args.current or args.current_configmap or args.scheduler_name:
        return "--current, --current-configmap and --scheduler-name go with --pending"
    return None


def run(args: argparse.Namespace) -> int:
    wrong = _wrong_combination(args)
    if wrong is not None:
        return usage(wrong)
    policy_set = load_rules(args.rules)
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
    results = [(p, evaluate(policy_set, p.pod, nodes, source, now)) for p in pods]
    if len(results) == 1:  # one pod: its result alone, as it always was
        [(_, evaluation)] = results
        emit(
            args.output,
            lambda: evaluation_to_dict(evaluation),
            lambda: evaluation_table(evaluation),
            sys.stdout,
        )
    else:  # each pod of a List: its name and where it came from, then its result
        emit(
            args.output,
            lambda: [
                {"pod": p.name, "from": p.origin, **evaluation_to_dict(e)} for p, e in results
            ],
            lambda: "\n".join(
                f"== pod {p.name} (from {p.origin})\n{evaluation_table(e)}" for p, e in results
            ),
            sys.stdout,
        )
    return EXIT_OK
