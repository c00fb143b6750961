"""How commands print: problems one a line on stderr, results as a table or as data.

The tables themselves are in `tables`; JUnit XML in `junit`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import yaml

from policyext.offline.testing import TestResult
from policyext.policy import Issue


def plural(count: int, noun: str, many: str | None = None) -> str:
    return f"{count} {noun if count == 1 else (many or noun + 's')}"


def print_issues(issues: Sequence[Issue | str], *, count: bool = False) -> None:
    """Every problem on its own line (file:line:col: policy/rule: message), on stderr; with
    `count`, a closing line saying how many."""
    for issue in issues:
        print(issue, file=sys.stderr)
    if count:
        print(f"{plural(len(issues), 'problem')} found", file=sys.stderr)


def emit(output: str, data: Callable[[], Any], table: Callable[[], str], out: TextIO) -> None:
    """The result in the format `-o` asked for: `json` and `yaml` print the data, anything
    else the table."""
    if output == "json":
        json.dump(data(), out, indent=2)
        out.write("\n")
    elif output == "yaml":
        yaml.safe_dump(data(), out, sort_keys=False)
    else:
        out.write(table())


def issue_data(issue: Issue) -> dict[str, Any]:
    location = issue.location
    return {
        "file": location.file,
        "line": location.line,
        "column": location.column,
        "policy": issue.policy,
        "rule": issue.rule,
        "message": issue.message,
    }


def tests_data(results: Sequence[TestResult], issues: Sequence[Issue]) -> dict[str, Any]:
    """`policyext test -o json`: every test and case, the totals, and the files that could
    not be read."""
    passed = sum(r.passed for r in results)
    failed = sum(r.failed for r in results) + len(issues)
    return {
        "passed": passed,
        "failed": failed,
        "tests": [
            {
                "name": r.name,
                "file": r.file,
                "schedulerEmulation": r.scheduler_emulation,
                "errors": [issue_data(i) for i in r.issues],
                "cases": [
                    {"name": c.name, "passed": c.passed, "differences": c.differences}
                    for c in r.cases
                ],
            }
            for r in results
        ],
        "errors": [issue_data(i) for i in issues],
    }
