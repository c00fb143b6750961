"""`policyext simulate`: rank the nodes for one pod with every reason shown; with
`--pending`, compare two rule sets for every pending pod (see `pending`)."""

from __future__ import annotations

import argparse
import sys

from policyext.cel import CELError
from policyext.cel.timeutil import parse_timestamp
from policyext.cli import pending
from policyext.cli.flags import EXIT_INVALID, EXIT_OK, Commands, add_output, fail, usage
from policyext.cli.inputs import load_nodes, load_rules, read_pod
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
    parser.add_argument(
        "--rules",
        required=True,
        action="append",
        metavar="PATH",
        help="policy files or folders (with --pending: the candidate rules)",
    )
    pods = parser.add_mutually_exclusive_group(required=True)
    pods.add_argument("--pod", metavar="FILE", help="a Pod (YAML or JSON)")
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
        "--kubeconfig", metavar="FILE", help="with --cluster (default: $KUBECONFIG, ~/.kube/config)"
    )
    parser.add_argument("--context", metavar="NAME", help="a context of the kubeconfig")
    pending.add_flags(parser)
    parser.add_argument("--now", metavar="TIME", help="the time as `now` (RFC 3339)")
    add_output(parser, ("table", "json", "yaml"))
    parser.set_defaults(run=run)


def _wrong_combination(args: argparse.Namespace) -> str | None:
    """What is wrong with a combination of flags argparse cannot express, if anything."""
    if (args.kubeconfig or args.context) and not args.cluster:
        return "--kubeconfig and --context go with --cluster"
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
        pod = read_pod(args.pod)
        now = parse_timestamp(args.now) if args.now else None
        nodes, source = load_nodes(args)
    except (SnapshotError, CELError) as e:
        return fail(str(e))
    evaluation = evaluate(policy_set, pod, nodes, source, now)
    emit(
        args.output,
        lambda: evaluation_to_dict(evaluation),
        lambda: evaluation_table(evaluation),
        sys.stdout,
    )
    return EXIT_OK
