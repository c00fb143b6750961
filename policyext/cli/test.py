"""`policyext test PATH...`: run PolicyTest files."""

from __future__ import annotations

import argparse
import sys

from policyext.cli.flags import EXIT_INVALID, EXIT_OK, Commands
from policyext.cli.output import print_issues
from policyext.cli.tables import test_report
from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.testing import find_tests, run_test


def register(commands: Commands) -> None:
    parser = commands.add_parser("test", help="run PolicyTest files")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="test files or folders")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    tests, issues = find_tests(args.paths)
    print_issues(issues)
    results = [run_test(doc, SnapshotSource.from_file) for doc in tests]
    report, passed, failed = test_report(results)
    sys.stdout.write(report)
    failed += len(issues)
    print(f"{passed} passed, {failed} failed")
    return EXIT_OK if failed == 0 and (tests or not issues) else EXIT_INVALID
