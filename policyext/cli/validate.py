"""`policyext validate PATH...`: check policy files, print every problem."""

from __future__ import annotations

import argparse

from policyext.cli.flags import EXIT_INVALID, EXIT_OK, Commands
from policyext.cli.output import plural, print_issues
from policyext.policy.compile import load_policy_set
from policyext.policy.model import PolicyError


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "validate", help="check policy files; print every problem as file:line:col"
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="policy files or folders")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        policy_set = load_policy_set(args.paths)
    except PolicyError as e:
        print_issues(e.issues, count=True)
        return EXIT_INVALID
    print(
        f"valid: {plural(len(policy_set.policies), 'policy', 'policies')}, "
        f"{plural(policy_set.rule_count(), 'rule')}, version {policy_set.version}"
    )
    return EXIT_OK
