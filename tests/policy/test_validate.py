"""`policyext validate`: every kind of bad input is reported at its file, line and column."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from policyext.cli import main

HEADER = "apiVersion: policyext.io/v1alpha1\nkind: SchedulingPolicy\n"


def doc(name: str, spec: str) -> str:
    return (
        HEADER
        + f"metadata:\n  name: {name}\nspec:\n"
        + textwrap.indent(textwrap.dedent(spec).strip("\n"), "  ")
        + "\n"
    )


GOOD = doc("good", "filters:\n- name: ok\n  expression: 'true'")

CASES = [
    (
        "a YAML syntax error",
        HEADER + "metadata:\n  name: x\nspec: [unclosed\n",
        "6:1: YAML syntax error",
    ),
    (
        "a weight outside 1..100",
        doc("w", "scores:\n- name: s\n  expression: '1'\n  weight: 0"),
        "9:13: w: spec.scores[0].weight: 0 is less than the minimum of 1",
    ),
    (
        "an unknown field",
        doc("u", "filters:\n- name: f\n  expression: 'true'\n  mesage: typo"),
        "9:5: u: spec.filters[0]: unknown field 'mesage'",
    ),
    (
        "a CEL syntax error, placed inside the expression",
        doc("c", "filters:\n- name: f\n  expression: 'node.metadata.labels.x == '"),
        "8:44: c/f: unexpected end of input (expression 1:27)",
    ),
    (
        "an unknown function",
        doc("c", 'filters:\n- name: f\n  expression: "nosuch(node) == 1"'),
        "8:18: c/f: undeclared reference to function 'nosuch' (expression 1:1)",
    ),
    (
        "an unknown variable",
        doc("c", "filters:\n- name: f\n  expression: \"nodes.metadata.name == 'a'\""),
        "8:18: c/f: undeclared reference to 'nodes' (expression 1:1)",
    ),
    (
        "a filter that can only yield a string",
        doc("c", "filters:\n- name: f\n  expression: \"'a' + 'b'\""),
        "8:17: c/f: the expression must yield a bool, but it yields string",
    ),
    (
        "a score that can only yield a bool",
        doc("c", "scores:\n- name: s\n  expression: 'true'"),
        "8:17: c/s: a score must yield a number (int, uint or double), but it yields bool",
    ),
    (
        "a duplicate rule name",
        doc("d", "filters:\n- name: f\n  expression: 'true'\n- name: f\n  expression: 'true'"),
        "9:5: d/f: duplicate rule name (first defined at",
    ),
    (
        "an unknown kind",
        "apiVersion: policyext.io/v1alpha1\nkind: SchedulingPolicies\nmetadata: {name: k}\n",
        "2:7: unknown kind 'SchedulingPolicies'",
    ),
    (
        "a bad second document in a multi-document file",
        GOOD + "---\n" + doc("bad", "filters:\n- name: f\n  expression: '1 +'"),
        "17:21: bad/f: unexpected end of input (expression 1:4)",
    ),
    (
        "a variable used before it is defined",
        doc(
            "v",
            "variables:\n- name: a\n  expression: variables.b\n- name: b\n  expression: '1'\n"
            "filters:\n- name: f\n  expression: variables.a == 1",
        ),
        "8:17: v/a: unknown variable 'variables.b' (variables: none defined before this point)",
    ),
    (
        "an error on the third line of a block scalar expression",
        doc(
            "b",
            "filters:\n- name: f\n  expression: |\n    node.metadata.name != '' &&\n"
            "    true &&\n    nosuch()",
        ),
        "11:7: b/f: undeclared reference to function 'nosuch' (expression 3:1)",
    ),
    (
        "cel-go's math library, which Kubernetes does not declare",
        doc("k", 'scores:\n- name: s\n  expression: "1 + math.greatest(1, 2)"'),
        "8:22: k/s: undeclared reference to 'math.greatest'"
        " (Kubernetes' CEL environment has no math library) (expression 1:5)",
    ),
    (
        "cel-go's encoders library, which Kubernetes does not declare",
        doc("k", "filters:\n- name: f\n  expression: \"base64.encode(b'a') != ''\""),
        "8:18: k/f: undeclared reference to 'base64.encode'"
        " (Kubernetes' CEL environment has no encoders library) (expression 1:1)",
    ),
    (
        "cel-go's cel.bind, which Kubernetes does not declare",
        doc("k", 'filters:\n- name: f\n  expression: "[1].all(i, cel.bind(x, i, x > 0))"'),
        "8:29: k/f: undeclared reference to 'cel.bind'"
        " (Kubernetes' CEL environment has no bindings library) (expression 1:12)",
    ),
    (
        "message and messageExpression together",
        doc(
            "m",
            "filters:\n- name: f\n  expression: 'true'\n  message: a\n  messageExpression: \"'b'\"",
        ),
        "7:5: m: spec.filters[0]: give either message or messageExpression, not both",
    ),
    (
        "a YAML anchor, refused where it is written",
        doc("y", "filters:\n- name: f\n  expression: &e 'true'\n  message: *e"),
        "8:17: YAML anchor &e is not accepted: anchors and aliases can make a few bytes"
        " stand for gigabytes",
    ),
    (
        "a YAML alias, refused before anything looks for its anchor",
        HEADER + "metadata: {name: a}\n---\n" + doc("z", "filters: *f"),
        "10:12: YAML alias *f is not accepted",
    ),
    (
        "a YAML value that contains itself",
        HEADER + "metadata: &m {name: *m}\n",
        "3:11: YAML anchor &m is not accepted",
    ),
    (
        "YAML nested 101 levels deep",
        doc("n", "filters: " + "[" * 101 + "]" * 101),
        "6:110: YAML nested more than 100 levels deep",
    ),
    (
        "more than 20,000 YAML values (each takes about 1 kB until the file is checked)",
        doc("v", "filters: [" + "0, " * 20_000 + "]"),
        "6:59974: more than 20,000 YAML values in one file",
    ),
    (
        "a file larger than a ConfigMap can hold",
        doc("b", "filters: []") + "# " + "x" * 1024 * 1024 + "\n",
        "1:1: larger than 1 MiB (what a ConfigMap holds at most)",
    ),
]


@pytest.mark.parametrize(("what", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_validate_reports_bad_input_at_its_file_line_and_column(
    what: str, text: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:{expected}" in err, err


def test_validate_reports_duplicate_policy_names_across_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.yaml").write_text(GOOD)
    (tmp_path / "b.yaml").write_text(GOOD)
    assert main(["validate", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'b.yaml'}:4:9: good: duplicate policy name (first defined at" in err


def test_validate_reports_every_issue_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = doc("x", "filters:\n- name: a\n  expression: 'nosuch()'\n- name: b\n  expression: '1 +'")
    (tmp_path / "p.yaml").write_text(text)
    assert main(["validate", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "x/a: undeclared reference to function 'nosuch'" in err
    assert "x/b: unexpected end of input" in err
    assert "2 problems found" in err


def test_validate_accepts_good_policies_and_skips_hidden_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    hidden = tmp_path / "..2026_11_30_07_00_00.000"
    hidden.mkdir()
    (hidden / "good.yaml").write_text(GOOD)  # a mounted ConfigMap's real copy
    assert main(["validate", str(tmp_path)]) == 0
    assert "valid: 1 policy, 1 rule," in capsys.readouterr().out


def test_a_variable_that_does_not_compile_is_reported_once_where_it_is_defined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = doc(
        "v",
        "variables:\n- name: v\n  expression: nosuch(pod)\n"
        "filters:\n- name: f\n  expression: variables.v == 1",
    )
    (tmp_path / "p.yaml").write_text(text)
    assert main(["validate", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "v/v: undeclared reference to function 'nosuch'" in err
    assert "unknown variable" not in err
    assert "1 problem found" in err


def test_unquoted_timestamps_in_a_policy_test_stay_strings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "policy.yaml").write_text(
        doc(
            "clock",
            "filters:\n- name: after\n  expression: now > timestamp('2026-01-01T00:00:00Z')",
        )
    )
    (tmp_path / "clock.test.yaml").write_text(
        "apiVersion: policyext.io/v1alpha1\nkind: PolicyTest\nmetadata: {name: clock}\n"
        "spec:\n  policies: [policy.yaml]\n  now: 2026-03-14T12:00:00Z\n  cases:\n"
        "  - name: inline nodes are not needed for an empty snapshot\n"
        "    pod: {metadata: {name: p, namespace: d}, spec: {containers: []}}\n"
        "    expect: {feasible: []}\n"
    )
    assert main(["test", str(tmp_path)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "expression",
    [
        # issue 40: passed validate, then failed closed on every node with no such overload
        "nodeInfo.free.memory > podRequests.memory",
        "nodeInfo.free.cpu + podRequests.cpu",
        "pod.spec.priority in [1.0, 2.0]",
        "node.metadata.creationTimestamp + node.metadata.creationTimestamp",
        "duration('1d') < duration('1h')",
    ],
)
def test_validate_refuses_a_rule_kubernetes_refuses_rather_than_fail_it_on_every_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], expression: str
) -> None:
    (tmp_path / "p.yaml").write_text(doc("q", f'filters:\n- name: f\n  expression: "{expression}"'))
    assert main(["validate", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "q/f: " in err
    assert "1 problem found" in err


def test_validate_accepts_quantities_compared_with_compare_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expression = "nodeInfo.free.memory.compareTo(podRequests.memory) >= 0"
    (tmp_path / "p.yaml").write_text(doc("q", f'filters:\n- name: f\n  expression: "{expression}"'))
    assert main(["validate", str(tmp_path)]) == 0
