"""`policyext validate` warns of a rule that loads but cannot succeed on a pod or node
without an optional field it reads (issue 40, item 3): a plain `.field` selection of a field
Kubernetes' schema does not list as required, with no `?` or `has()` to guard it. Warnings
are not errors: exit 0, unless `--strict`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.cli.run import RULES, policyext

POLICY = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {{name: p}}
spec:
  filters:
  - name: f
    expression: {expression}
"""

# (a filter, the paths `validate` warns that it reads unguarded: none for a safe one)
CASES = [
    # the README's old headline rule: labels is optional in ObjectMeta
    ("node.metadata.labels.?lifecycle.orValue('') != 'spot'", ["node.metadata.labels"]),
    ("node.metadata.labels.zone == 'a'", ["node.metadata.labels"]),
    ("node.metadata.labels['zone'] == 'a'", ["node.metadata.labels"]),
    ("size(node.spec.taints) == 0", ["node.spec.taints"]),
    ("pod.metadata.annotations['a'] == 'b'", ["pod.metadata.annotations"]),
    ("node.spec.unschedulable != true", ["node.spec.unschedulable"]),
    # a comprehension's variable is an item of the list: Taint.value is optional
    (
        "!has(node.spec.taints) || node.spec.taints.all(t, t.value != 'x')",
        ["t.value"],
    ),
    # one warning per path, however often it is read
    (
        "node.metadata.labels.a == 'x' || node.metadata.labels.b == 'y'",
        ["node.metadata.labels"],
    ),
    # a has() of another path guards nothing here
    ("has(node.metadata.annotations) && node.metadata.labels.a == 'x'", ["node.metadata.labels"]),
    # optional selection, and everything chained after it
    ("node.metadata.?labels[?'lifecycle'].orValue('') != 'spot'", []),
    ("node.metadata.?labels.?lifecycle.orValue('') != 'spot'", []),
    ("node.spec.?taints.orValue([]).all(t, t.effect != 'NoSchedule')", []),
    # inside has()
    ("has(node.metadata.labels)", []),
    ("has(node.metadata.labels.zone)", []),
    # guarded by a has() of the same path on either side of && or ||
    ("has(node.metadata.labels) && node.metadata.labels.zone == 'a'", []),
    ("!has(node.metadata.labels) || node.metadata.labels.zone != 'a'", []),
    ("node.metadata.labels.zone == 'a' && has(node.metadata.labels)", []),
    # or of a path below it (its presence means theirs)
    ("has(node.metadata.labels.zone) && node.metadata.labels.zone == 'a'", []),
    # or in the condition of ? :
    ("has(node.spec.taints) ? node.spec.taints.size() == 0 : true", []),
    # required fields: a Taint always has a key and an effect, a Container a name
    ("node.spec.?taints.orValue([]).all(t, t.key != 'x' && t.effect != 'NoSchedule')", []),
    ("pod.spec.containers.all(c, c.name != '')", []),
    # what every Pod and Node from the API server has
    ("node.metadata.name != '' && pod.metadata.namespace != 'kube-system'", []),
    ("quantity(node.status.allocatable.cpu).isGreaterThan(quantity('1'))", []),
    # policyext's own variables are always complete
    ("nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0", []),
]


def _write(folder: Path, expression: str) -> Path:
    path = folder / "policy.yaml"
    path.write_text(POLICY.format(expression=json.dumps(expression)))
    return path


@pytest.mark.parametrize(("expression", "warned"), CASES, ids=[c[0] for c in CASES])
def test_validate_warns_of_exactly_the_optional_fields_read_unguarded(
    tmp_path: Path, expression: str, warned: list[str]
) -> None:
    path = _write(tmp_path, expression)
    done = policyext("validate", path, "-o", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["valid"] is True
    assert report["problems"] == []
    messages = [w["message"] for w in report["warnings"]]
    assert [m.split()[1] for m in messages] == warned
    for warning in report["warnings"]:
        assert (warning["policy"], warning["rule"], warning["line"]) == ("p", "f", 7)


def test_a_warning_is_a_line_that_says_where_what_and_how_to_fix_it(tmp_path: Path) -> None:
    path = _write(tmp_path, "node.metadata.labels.?lifecycle.orValue('') != 'spot'")
    done = policyext("validate", path)
    assert done.returncode == 0
    # the expression starts at column 18 (after `    expression: "`); `labels` 14 further
    assert done.stderr.splitlines() == [
        f"{path}:7:32: warning: p/f: reads node.metadata.labels without ? or has(): errors on "
        "a node without labels (ObjectMeta.labels is optional in Kubernetes' schema; use "
        "node.metadata.?labels... or guard it with has(node.metadata.labels))"
    ]
    assert done.stdout.startswith("valid: 1 policy, 1 rule, version ")
    assert done.stdout.rstrip().endswith(", 1 warning")


def test_strict_turns_warnings_into_a_failure(tmp_path: Path) -> None:
    warned = _write(tmp_path, "node.metadata.labels.zone == 'a'")
    done = policyext("validate", "--strict", warned)
    assert done.returncode == 1
    assert done.stdout.startswith("invalid (--strict): 1 policy")
    as_json = json.loads(policyext("validate", "--strict", warned, "-o", "json").stdout)
    assert as_json["valid"] is False
    assert len(as_json["warnings"]) == 1
    clean = _write(tmp_path, "node.metadata.?labels.?zone.orValue('') == 'a'")
    assert policyext("validate", "--strict", clean).returncode == 0


def test_warnings_are_listed_in_yaml_output(tmp_path: Path) -> None:
    path = _write(tmp_path, "node.spec.taints.size() == 0")
    done = policyext("validate", path, "-o", "yaml")
    assert done.returncode == 0
    report = yaml.safe_load(done.stdout)
    [warning] = report["warnings"]
    assert (warning["file"], warning["line"], warning["column"]) == (str(path), 7, 28)
    assert warning["message"].startswith("reads node.spec.taints without ? or has()")


@pytest.mark.parametrize("strict", [False, True])
def test_junit_output_shows_warnings_as_output_or_with_strict_as_failures(
    tmp_path: Path, strict: bool
) -> None:
    path = _write(tmp_path, "node.metadata.labels.zone == 'a'")
    done = policyext("validate", path, "-o", "junit", *(["--strict"] if strict else []))
    assert done.returncode == (1 if strict else 0)
    [case] = ET.fromstring(done.stdout).iter("testcase")
    failure = case.find("failure")
    output = case.find("system-out")
    if strict:
        assert failure is not None and output is None
        assert "warning: p/f: reads node.metadata.labels" in (failure.text or "")
    else:
        assert failure is None and output is not None
        assert "warning: p/f: reads node.metadata.labels" in (output.text or "")


def test_the_example_rules_and_the_readme_headline_rule_give_no_warning(tmp_path: Path) -> None:
    done = policyext("validate", "--strict", RULES)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    readme = (RULES.parent / "README.md").read_text(encoding="utf-8")
    headline = readme[readme.index("```yaml") + len("```yaml") : readme.index("```\n\n")]
    (tmp_path / "headline.yaml").write_text(headline)
    done = policyext("validate", "--strict", tmp_path / "headline.yaml")
    assert done.returncode == 0, done.stderr
