"""`policyext test PATH...`: run PolicyTest files; `-o json` or `-o junit` for CI."""

from __future__ import annotations

import argparse
import json
import sys

from policyext.cli import junit
from policyext.cli.flags import EXIT_INVALID, EXIT_OK, Commands, add_output, add_paths, fail, usage
from policyext.cli.output import plural, print_issues, tests_data
from policyext.cli.tables import test_report
from policyext.cluster.snapshot import SnapshotSource
from policyext.offline.testing import find_tests, run_test
from policyext.policy import discover


def register(commands: Commands) -> None:
    parser = commands.add_parser("test", help="run PolicyTest files")
    add_paths(parser, None, help="test files or folders (comma-separated or not)")
    add_output(parser, ("text", "json", "junit"))
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not args.paths:
        return usage("give the PolicyTest files or folders: PATH...")
    tests, issues = find_tests(args.paths)
    if not tests and not issues:
        files, _ = discover(args.paths)
        # a green CI run on a wrong path would test nothing
        return fail(
            f"no PolicyTest found: looked in {', '.join(args.paths)} "
            f"({plural(len(files), 'YAML or JSON file')} read, none of kind PolicyTest)"
        )
    results = [run_test(doc, SnapshotSource.from_file) for doc in tests]
    failed = sum(r.failed for r in results) + len(issues)
    if args.output == "json":
        json.dump(tests_data(results, issues), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.output == "junit":
        sys.stdout.write(junit.tests_xml(results, issues))
    else:
        print_issues(issues)
        report, passed, _ = test_report(results)
        sys.stdout.write(report)
        print(f"{passed} passed, {failed} failed")
    return EXIT_OK if failed == 0 else EXIT_INVALID
