"""`policyext validate PATH...`: check policy files, print every problem and every warning
(a rule that loads but errors on a pod or node without an optional field it reads); `-o
json`, `-o yaml` or `-o junit` for CI; `--strict` fails on warnings too."""

from __future__ import annotations

import argparse
import json
import sys

import yaml

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
    add_output(parser, ("text", "json", "yaml", "junit"))
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 1) on warnings too: optional fields read without ? or has()",
    )
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
    warnings = list(policy_set.warnings) if policy_set is not None else []
    failed = policy_set is None or (args.strict and bool(warnings))
    if args.output in ("json", "yaml"):
        data = _data(policy_set, issues, warnings, failed)
        if args.output == "json":
            json.dump(data, sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            yaml.safe_dump(data, sys.stdout, sort_keys=False)
    elif args.output == "junit":
        found, _ = discover_files(args.paths)
        files = [shown for _, shown in found]
        sys.stdout.write(junit.validation_xml(files, issues, warnings, strict=args.strict))
    elif policy_set is None:
        print_issues(issues, count=True)
    else:
        for warning in warnings:
            print(warning.as_warning(), file=sys.stderr)
        counted = f", {plural(len(warnings), 'warning')}" if warnings else ""
        verdict = "invalid (--strict)" if failed else "valid"
        print(
            f"{verdict}: {plural(len(policy_set.policies), 'policy', 'policies')}, "
            f"{plural(policy_set.rule_count(), 'rule')}, version {policy_set.version}{counted}"
        )
    return EXIT_INVALID if failed else EXIT_OK


def _nothing_found(paths: list[str]) -> Issue:
    files, _ = discover_files(paths)
    return Issue(
        Location(paths[0], 1, 1),
        f"no SchedulingPolicy found: looked in {', '.join(paths)} "
        f"({plural(len(files), 'YAML or JSON file')} read, none of kind SchedulingPolicy)",
    )


def _data(
    policy_set: PolicySet | None, issues: list[Issue], warnings: list[Issue], failed: bool
) -> dict[str, object]:
    return {
        "valid": not failed,
        "version": policy_set.version if policy_set is not None else None,
        "policies": len(policy_set.policies) if policy_set is not None else 0,
        "rules": policy_set.rule_count() if policy_set is not None else 0,
        "problems": [issue_data(i) for i in issues],
        "warnings": [issue_data(w) for w in warnings],
    }
