"""`policyext test PATH...`: run PolicyTest files."""

from __future__ import annotations

import argparse
import sys

from policyext.cli.flags import EXIT_INVALID, EXIT_OK, Commands, add_paths, fail, usage
from policyext.cli.output import plural, print_issues
from policyext.cli.tables import test_report
from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.loader import discover
from policyext.policy.testing import find_tests, run_test


def register(commands: Commands) -> None:
    parser = commands.add_parser("test", help="run PolicyTest files")
    add_paths(parser, None, help="test files or folders (comma-separated or not)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not args.paths:
        return usage("give the PolicyTest files or folders: PATH...")
    tests, issues = find_tests(args.paths)
    print_issues(issues)
    if not tests and not issues:
        files, _ = discover(args.paths)
        # a green CI run on a wrong path would test nothing
        return fail(
            f"no PolicyTest found: looked in {', '.join(args.paths)} "
            f"({plural(len(files), 'YAML or JSON file')} read, none of kind PolicyTest)"
        )
    results = [run_test(doc, SnapshotSource.from_file) for doc in tests]
    report, passed, failed = test_report(results)
    sys.stdout.write(report)
    failed += len(issues)
    print(f"{passed} passed, {failed} failed")
    return EXIT_OK if failed == 0 and (tests or not issues) else EXIT_INVALID
