"""`policyext validate PATH...`: check policy files, print every problem; `-o json` or
`-o junit` for CI."""

from __future__ import annotations

import argparse
import json
import sys

from policyext.cli import junit
from policyext.cli.flags import EXIT_INVALID, EXIT_OK, Commands, add_output, add_paths, usage
from policyext.cli.output import issue_data, plural, print_issues
from policyext.policy import (
    Issue,
    Location,
    PolicyError,
    PolicySet,
    discover_files,
    load_policy_set,
)
from policyext.store import unexpected_failure


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "validate", help="check policy files; print every problem as file:line:col"
    )
    add_paths(parser, "--rules", help="policy files or folders")
    add_output(parser, ("text", "json", "junit"))
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not args.paths:
        return usage("give the policy files or folders: PATH... or --rules PATH")
    policy_set: PolicySet | None = None
    issues: list[Issue] = []
    try:
        policy_set = load_policy_set(args.paths)
    except PolicyError as e:
        issues = e.issues
    except Exception as e:  # a problem reported, not a traceback
        issues = [Issue(Location(str(args.paths[0]), 1, 1), unexpected_failure(e))]
    if policy_set is not None and not policy_set.policies:
        # a green CI run on a wrong path would check nothing (as `test` refuses no tests)
        issues = [_nothing_found(args.paths)]
        policy_set = None
    if args.output == "json":
        json.dump(_data(policy_set, issues), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.output == "junit":
        found, _ = discover_files(args.paths)
        sys.stdout.write(junit.validation_xml([shown for _, shown in found], issues))
    elif policy_set is None:
        print_issues(issues, count=True)
    else:
        print(
            f"valid: {plural(len(policy_set.policies), 'policy', 'policies')}, "
            f"{plural(policy_set.rule_count(), 'rule')}, version {policy_set.version}"
        )
    return EXIT_OK if policy_set is not None else EXIT_INVALID


def _nothing_found(paths: list[str]) -> Issue:
    files, _ = discover_files(paths)
    return Issue(
        Location(paths[0], 1, 1),
        f"no SchedulingPolicy found: looked in {', '.join(paths)} "
        f"({plural(len(files), 'YAML or JSON file')} read, none of kind SchedulingPolicy)",
    )


def _data(policy_set: PolicySet | None, issues: list[Issue]) -> dict[str, object]:
    return {
        "valid": policy_set is not None,
        "version": policy_set.version if policy_set is not None else None,
        "policies": len(policy_set.policies) if policy_set is not None else 0,
        "rules": policy_set.rule_count() if policy_set is not None else 0,
        "problems": [issue_data(i) for i in issues],
    }
