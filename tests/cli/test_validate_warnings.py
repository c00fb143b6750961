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
from tests.policy.unguarded_cases import CASES

POLICY = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {{name: p}}
spec:
  filters:
  - name: f
    expression: {expression}
"""


def _write(folder: Path, expression: str) -> Path:
    path = folder / "policy.yaml"
    path.write_text(POLICY.format(expression=json.dumps(expression)))
    return path


def test_validate_warns_of_exactly_the_reads_that_can_fail(tmp_path: Path) -> None:
    # the whole table as the filters of one policy: one run of validate
    filters = "".join(
        f"  - name: f{n}\n    expression: {json.dumps(expression)}\n"
        for n, (expression, _) in enumerate(CASES)
    )
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY.format(expression="true").split("  - name")[0] + filters)
    done = policyext("validate", path, "-o", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["valid"] is True
    assert report["problems"] == []
    warned: dict[str, list[str]] = {}
    for warning in report["warnings"]:
        assert warning["policy"] == "p"
        warned.setdefault(warning["rule"], []).append(warning["message"].split()[1])
        # each warning is on its filter's line: the filters are two lines each from line 6
        assert warning["line"] == 7 + 2 * int(warning["rule"][1:])
    got = [(expression, warned.get(f"f{n}", [])) for n, (expression, _) in enumerate(CASES)]
    assert got == CASES


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


def _shipped_policies(folder: Path) -> list[Path]:
    """Every policy we ship outside rules/, each in a file of its own: the benchmark's, the
    chart's inline examples, and any in examples/."""
    from bench.policy import scheduling_policy

    out = folder / "bench.json"
    out.write_text(json.dumps(scheduling_policy()))
    found = [out]
    for values in sorted((RULES.parent / "charts/policyext/ci").glob("*.yaml")):
        inline = (yaml.safe_load(values.read_text()) or {}).get("policies", {}).get("inline", {})
        for name, text in inline.items():
            found.append(folder / f"{values.stem}-{name}")
            found[-1].write_text(text)
    for example in sorted((RULES.parent / "examples").rglob("*.y*ml")):
        if "kind: SchedulingPolicy" in example.read_text():
            found.append(example)
    return found


def test_nothing_we_ship_warns(tmp_path: Path) -> None:
    # rules/, the README's headline rule, the benchmark's policy, the chart's examples
    # (the docs' examples: tests/server/test_docs.py)
    done = policyext("validate", "--strict", RULES)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    readme = (RULES.parent / "README.md").read_text(encoding="utf-8")
    headline = readme[readme.index("```yaml") + len("```yaml") : readme.index("```\n\n")]
    (tmp_path / "headline.yaml").write_text(headline)
    shipped = _shipped_policies(tmp_path)
    assert len(shipped) >= 2
    for path in [tmp_path / "headline.yaml", *shipped]:
        done = policyext("validate", "--strict", path)
        assert done.returncode == 0, done.stderr
        assert "warning" not in done.stderr
