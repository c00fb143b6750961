"""JUnit XML, the report format CI systems read: PolicyTests and policy validation as test
suites and cases, failures with their differences or problems."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from policyext.offline.testing import TestResult
from policyext.policy import Issue

COULD_NOT_RUN = "the test could not run"


def _suite(parent: ET.Element, name: str, file: str = "") -> ET.Element:
    suite = ET.SubElement(parent, "testsuite", name=name)
    if file:
        suite.set("file", file)
    return suite


def _case(suite: ET.Element, classname: str, name: str, file: str = "") -> ET.Element:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name)
    if file:
        case.set("file", file)
    return case


def _problem(case: ET.Element, tag: str, lines: Sequence[str]) -> None:
    element = ET.SubElement(case, tag, message=lines[0] if lines else tag)
    element.text = "\n".join(lines)


def _count(root: ET.Element) -> str:
    """Totals on every suite and on the root, as CI systems read them."""
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for suite in root.iter("testsuite"):
        counts = {
            "tests": len(suite.findall("testcase")),
            "failures": len(suite.findall("testcase/failure")),
            "errors": len(suite.findall("testcase/error")),
        }
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def tests_xml(results: Sequence[TestResult], issues: Sequence[Issue]) -> str:
    """One suite per PolicyTest, one case per test case; a test that could not run is one
    case with an error; files that could not be read, a suite `policyext` of errors."""
    root = ET.Element("testsuites", name="policyext test")
    if issues:
        suite = _suite(root, "policyext")
        for issue in issues:
            _problem(
                _case(suite, "policyext", str(issue.location), issue.location.file),
                "error",
                [str(issue)],
            )
    for result in results:
        suite = _suite(root, result.name, result.file)
        if result.issues:
            case = _case(suite, result.name, COULD_NOT_RUN, result.file)
            _problem(case, "error", [str(i) for i in result.issues])
        for outcome in result.cases:
            case = _case(suite, result.name, outcome.name, result.file)
            if not outcome.passed:
                _problem(case, "failure", outcome.differences)
    return _count(root)


def validation_xml(
    files: Sequence[str],
    issues: Sequence[Issue],
    warnings: Sequence[Issue] = (),
    *,
    strict: bool = False,
) -> str:
    """One case per policy file, failed with every problem found in it; a problem in a file
    that was not listed (a path that does not exist) gets a case of its own. A file's
    warnings are the case's output (its failures with `strict`)."""
    root = ET.Element("testsuites", name="policyext validate")
    suite = _suite(root, "policyext validate")
    by_file: dict[str, list[str]] = {file: [] for file in files}
    for issue in issues:
        by_file.setdefault(issue.location.file, []).append(str(issue))
    warned: dict[str, list[str]] = {}
    for warning in warnings:
        line = warning.as_warning()
        if strict:
            by_file.setdefault(warning.location.file, []).append(line)
        else:
            warned.setdefault(warning.location.file, []).append(line)
    for file, problems in by_file.items():
        case = _case(suite, "validate", file, file)
        if problems:
            _problem(case, "failure", problems)
        if file in warned:
            ET.SubElement(case, "system-out").text = "\n".join(warned[file])
    return _count(root)
