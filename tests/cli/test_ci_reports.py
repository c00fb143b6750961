"""PolicyTest for CI: `expect.auditRejected`, the per-test `schedulerEmulation` switch, and
`-o json` / `-o junit` reports from `test` and `validate`, read as CI reads them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.run import FIXTURES, RULES, policyext

MAINTENANCE = str(RULES / "maintenance-window.yaml")
CRITICAL = str(RULES / "critical-off-spot.yaml")
SOON = "maintenance-window/no-maintenance-soon"  # an Audit rule
NOW = "2026-03-14T21:00:00Z"  # an hour before general-c's announced window
POD = {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"containers": []}}
CRITICAL_POD = {**POD, "metadata": {**POD["metadata"], "labels": {"critical": "true"}}}


def _policy_test(folder: Path, expect: dict[str, Any], *, pod: Any = POD, **spec: Any) -> Path:
    path = folder / "t.test.yaml"
    document = {
        "apiVersion": "policyext.io/v1alpha1",
        "kind": "PolicyTest",
        "metadata": {"name": "ci"},
        "spec": {
            "policies": [MAINTENANCE, CRITICAL],
            "snapshot": str(FIXTURES / "cluster.yaml"),
            "now": NOW,
            "cases": [{"name": "the case", "pod": pod, "expect": expect}],
            **spec,
        },
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("expect", "difference"),
    [
        ({"auditRejected": {"general-c": SOON}}, None),
        ({"auditRejected": {"general-c": [SOON]}}, None),
        ({"auditRejected": {"general-a": []}}, None),
        (
            {"auditRejected": {"general-a": SOON}},
            f"auditRejected: expected general-a rejected by Audit rule {SOON}, got no Audit rule",
        ),
        (
            {"auditRejected": {"general-c": []}},
            f"auditRejected: expected no Audit rule to reject general-c, got {SOON}",
        ),
        (
            # an Enforce rule's rejection is not an Audit one
            {"auditRejected": {"spot-c": "critical-off-spot/no-spot-nodes"}},
            "auditRejected: expected spot-c rejected by Audit rule critical-off-spot/"
            "no-spot-nodes, got ",
        ),
        (
            {"auditRejected": {"no-such-node": SOON}},
            "auditRejected: node 'no-such-node' is not in the snapshot",
        ),
    ],
    ids=[
        "the Audit rule, named",
        "the Audit rule, in a list",
        "none, and none would",
        "a node no Audit rule rejects",
        "none, but one would",
        "an Enforce rule",
        "an unknown node",
    ],
)
def test_audit_rejected_asserts_which_audit_rules_would_have_rejected_a_node(
    tmp_path: Path, expect: dict[str, Any], difference: str | None
) -> None:
    done = policyext("test", _policy_test(tmp_path, expect, pod=CRITICAL_POD))
    if difference is None:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "PASS the case" in done.stdout
    else:
        assert done.returncode == 1
        assert "FAIL the case" in done.stdout
        assert difference in done.stdout


@pytest.mark.parametrize("switch", [True, False, None])
def test_a_policy_test_carries_its_scheduler_emulation_switch(
    tmp_path: Path, switch: bool | None
) -> None:
    spec = {} if switch is None else {"schedulerEmulation": switch}
    path = _policy_test(tmp_path, {"auditRejected": {"general-c": SOON}}, **spec)
    done = policyext("test", path, "-o", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    [test] = json.loads(done.stdout)["tests"]
    assert test["schedulerEmulation"] is (True if switch is None else switch)  # on by default


def test_a_scheduler_emulation_switch_that_is_no_boolean_is_a_schema_error(
    tmp_path: Path,
) -> None:
    path = _policy_test(tmp_path, {"best": "general-a"}, schedulerEmulation="yes")
    done = policyext("test", path)
    assert done.returncode == 1
    assert "ERROR" in done.stdout
    assert "schedulerEmulation" in done.stdout


def _passing_and_failing(folder: Path) -> Path:
    """One test with a passing and a failing case, and one whose policies are missing."""
    good = _policy_test(folder, {"auditRejected": {"general-c": SOON}})
    document = yaml.safe_load(good.read_text())
    document["spec"]["cases"].append(
        {"name": "wrong", "pod": POD, "expect": {"feasible": ["general-a"]}}
    )
    broken = {**document, "metadata": {"name": "broken"}}
    broken["spec"] = {**document["spec"], "policies": ["/nonexistent/rules.yaml"]}
    good.write_text(yaml.safe_dump_all([document, broken], sort_keys=False))
    return good


def test_test_reports_as_json(tmp_path: Path) -> None:
    done = policyext("test", _passing_and_failing(tmp_path), "-o", "json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert (report["passed"], report["failed"]) == (1, 2)
    ci, broken = report["tests"]
    assert [(c["name"], c["passed"]) for c in ci["cases"]] == [("the case", True), ("wrong", False)]
    assert ci["cases"][1]["differences"][0].startswith("feasible: expected ['general-a'], got")
    assert broken["cases"] == []
    assert broken["errors"][0]["message"] == "no such file or directory"


def test_test_reports_as_junit_xml(tmp_path: Path) -> None:
    done = policyext("test", _passing_and_failing(tmp_path), "-o", "junit")
    assert done.returncode == 1
    root = ET.fromstring(done.stdout)
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    ci, broken = root.findall("testsuite")
    assert [c.get("name") for c in ci.findall("testcase")] == ["the case", "wrong"]
    failure = ci.find("testcase[@name='wrong']/failure")
    assert failure is not None
    assert "feasible: expected ['general-a']" in (failure.text or "")
    error = broken.find("testcase/error")
    assert error is not None
    assert "/nonexistent/rules.yaml:1:1: no such file or directory" in (error.text or "")


BROKEN_POLICY = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: broken}
spec:
  filters:
  - {name: typo, expression: "node.("}
"""


def test_validate_reports_as_json(tmp_path: Path) -> None:
    valid = policyext("validate", CRITICAL, "-o", "json")
    assert valid.returncode == 0
    assert json.loads(valid.stdout) | {"version": "-"} == {
        "valid": True,
        "version": "-",
        "policies": 1,
        "rules": 1,
        "problems": [],
        "warnings": [],
    }
    (tmp_path / "broken.yaml").write_text(BROKEN_POLICY)
    invalid = policyext("validate", tmp_path, "-o", "json")
    assert invalid.returncode == 1
    report = json.loads(invalid.stdout)
    assert report["valid"] is False
    [problem] = report["problems"]
    assert problem["file"] == str(tmp_path / "broken.yaml")
    assert (problem["line"], problem["policy"], problem["rule"]) == (6, "broken", "typo")


def test_validate_reports_as_junit_xml_with_one_case_per_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN_POLICY)
    done = policyext("validate", broken, CRITICAL, "/nonexistent.yaml", "-o", "junit")
    assert done.returncode == 1
    root = ET.fromstring(done.stdout)
    assert (root.get("tests"), root.get("failures")) == ("3", "2")
    cases = {c.get("name"): c.find("failure") for c in root.iter("testcase")}
    assert cases[CRITICAL] is None
    failure = cases[str(broken)]
    assert failure is not None
    assert f"{broken}:6:" in (failure.get("message") or "")
    assert cases["/nonexistent.yaml"] is not None
