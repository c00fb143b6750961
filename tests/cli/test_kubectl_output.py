"""The commands read SchedulingPolicies as kubectl prints them: `kubectl get schedpol -o yaml`
or `-o json` (a `kind: List` whose items carry what the API server set: uid,
resourceVersion, generation, creationTimestamp, managedFields, a status), and the API
server's own SchedulingPolicyList. What the server set is accepted and ignored: the same
policies read from kubectl's output and from their files are the same policy set, and an
error inside an item is reported at its line and column in the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.run import FIXTURES, RULES, policyext

KUBECTL_YAML = Path(__file__).parent / "kubectl" / "schedpol.yaml"
# the files the fixture's two policies were applied from
APPLIED = [RULES / "critical-off-spot.yaml", RULES / "gpu-only-for-gpu-pods.yaml"]
CLUSTER = FIXTURES / "cluster.yaml"


def _listed() -> dict[str, Any]:
    listed: dict[str, Any] = yaml.safe_load(KUBECTL_YAML.read_text())
    return listed


@pytest.fixture(params=["-o yaml", "-o json"])
def kubectl_output(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """`kubectl get schedpol` output in either format."""
    if request.param == "-o yaml":
        return KUBECTL_YAML
    path = tmp_path / "schedpol.json"
    path.write_text(json.dumps(_listed(), indent=4))  # kubectl indents its JSON by 4
    return path


def _version(*paths: Path) -> str:
    done = policyext("validate", *paths, "-o", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["policies"] == len(_listed()["items"])
    version: str = report["version"]
    return version


def test_validate_reads_kubectl_output_as_the_files_it_was_applied_from(
    kubectl_output: Path,
) -> None:
    # the version is a digest of the specs: server-set fields and the status left no trace
    assert _version(kubectl_output) == _version(*APPLIED)
    done = policyext("validate", kubectl_output)
    assert done.stdout.startswith("valid: 2 policies, 2 rules, version ")


def test_the_api_servers_schedulingpolicylist_is_read_too(tmp_path: Path) -> None:
    listed = _listed() | {
        "apiVersion": "policyext.io/v1alpha1",
        "kind": "SchedulingPolicyList",
        "metadata": {"continue": "", "resourceVersion": "918301"},
    }
    for item in listed["items"]:  # the items of a typed list may leave these out
        del item["apiVersion"], item["kind"]
    path = tmp_path / "list.json"
    path.write_text(json.dumps(listed))
    assert _version(path) == _version(*APPLIED)


def test_simulate_decides_with_kubectl_output_as_with_the_files(kubectl_output: Path) -> None:
    def simulate(*rules: Path) -> Any:
        done = policyext(
            "simulate",
            *rules,
            "--pod",
            FIXTURES / "critical-pod.yaml",
            "--snapshot",
            CLUSTER,
            "-o",
            "json",
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    from_kubectl = simulate(kubectl_output)
    assert from_kubectl == simulate(*APPLIED)
    spot = next(n for n in from_kubectl["nodes"] if n["name"] == "spot-c")
    assert [r["rule"] for r in spot["rejections"]] == ["no-spot-nodes"]


def test_explain_reads_kubectl_output_as_the_files(kubectl_output: Path, tmp_path: Path) -> None:
    cluster = yaml.safe_load(CLUSTER.read_text())
    pending = yaml.safe_load((FIXTURES / "critical-pod.yaml").read_text())
    pending["status"] = {"phase": "Pending"}
    cluster["items"].append(pending)
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(yaml.safe_dump(cluster))
    target = f"{pending['metadata']['namespace']}/{pending['metadata']['name']}"

    def explain(*rules: Path) -> Any:
        flags = [a for rule in rules for a in ("--rules", str(rule))]
        done = policyext("explain", target, *flags, "--snapshot", snapshot, "-o", "json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert explain(kubectl_output) == explain(*APPLIED)
    assert "no-spot-nodes" in json.dumps(explain(kubectl_output))


def test_a_policy_test_runs_against_kubectl_output(kubectl_output: Path, tmp_path: Path) -> None:
    test = yaml.safe_load((RULES / "tests" / "critical-off-spot.test.yaml").read_text())
    test["spec"]["policies"] = [str(kubectl_output)]
    test["spec"]["snapshot"] = str(CLUSTER)
    for case in test["spec"]["cases"]:
        if isinstance(case["pod"], str):
            case["pod"] = str(RULES / "tests" / case["pod"])
    path = tmp_path / "critical-off-spot.test.yaml"
    path.write_text(yaml.safe_dump(test))
    done = policyext("test", path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("3 passed, 0 failed")


def _policy_test(policies: str) -> dict[str, Any]:
    return {
        "apiVersion": "policyext.io/v1alpha1",
        "kind": "PolicyTest",
        "metadata": {"name": "listed"},
        "spec": {
            "policies": [policies],
            "snapshot": str(CLUSTER),
            "cases": [
                {
                    "name": "a critical pod stays off the spot node",
                    "pod": str(FIXTURES / "critical-pod.yaml"),
                    "expect": {"rejected": {"spot-c": "critical-off-spot/no-spot-nodes"}},
                }
            ],
        },
    }


def test_a_list_may_hold_a_policy_test_beside_the_policies(tmp_path: Path) -> None:
    """As a file of several documents may: validate checks it and serves the policies,
    test runs it."""
    path = tmp_path / "all.yaml"
    listed = _listed()
    listed["items"].append(_policy_test(str(path)))
    path.write_text(yaml.safe_dump(listed))
    assert _version(path) == _version(*APPLIED)
    done = policyext("test", path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PolicyTest listed" in done.stdout
    assert done.stdout.rstrip().endswith("1 passed, 0 failed")


def test_a_schedulingpolicylist_holding_a_policy_test_is_refused_at_the_item(
    tmp_path: Path,
) -> None:
    path = tmp_path / "list.yaml"
    listed = _listed() | {"apiVersion": "policyext.io/v1alpha1", "kind": "SchedulingPolicyList"}
    listed["items"].append(_policy_test(str(path)))
    path.write_text(yaml.safe_dump(listed, sort_keys=False))
    line = _line_of(path, "- apiVersion: policyext.io/v1alpha1\n  kind: PolicyTest")
    done = policyext("validate", path)
    assert done.returncode == 1
    assert (
        f"{path}:{line}:3: a SchedulingPolicyList holds SchedulingPolicy objects of"
        " policyext.io/v1alpha1 only, not 'PolicyTest' of 'policyext.io/v1alpha1'"
    ) in done.stdout + done.stderr


def _line_of(path: Path, text: str) -> int:
    """The 1-based line where `text` starts in the file."""
    content = path.read_text()
    assert text in content
    return content[: content.index(text)].count("\n") + 1


def test_an_error_in_an_item_is_reported_at_its_line_and_column(tmp_path: Path) -> None:
    text = KUBECTL_YAML.read_text().replace(
        "      unresolvable: true\n    match:\n      conditions:",
        "      unresolvable: yes please\n    match:\n      conditions:",
    )
    path = tmp_path / "schedpol.yaml"
    path.write_text(text)
    line = _line_of(path, "      unresolvable: yes please")
    done = policyext("validate", path)
    assert done.returncode == 1
    output = done.stdout + done.stderr
    assert (
        f"{path}:{line}:21: gpu-only-for-gpu-pods: spec.filters[0].unresolvable: 'yes please'"
        " is not of type 'boolean'"
    ) in output


def test_a_cel_error_in_an_item_points_into_its_expression(tmp_path: Path) -> None:
    text = KUBECTL_YAML.read_text().replace("!= 'spot'\n", "!= spot\n")  # an undeclared name
    path = tmp_path / "schedpol.yaml"
    path.write_text(text)
    line = _line_of(path, "    - expression: node.metadata.?labels[?'lifecycle']")
    done = policyext("validate", path)
    assert done.returncode == 1
    column = len("    - expression: node.metadata.?labels[?'lifecycle'].orValue('') != ") + 1
    assert f"{path}:{line}:{column}:" in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        (
            {"apiVersion": "policyext.io/v1alpha1", "kind": "List", "items": []},
            "a List has apiVersion v1, not 'policyext.io/v1alpha1'",
        ),
        (
            {"apiVersion": "v1", "kind": "SchedulingPolicyList", "items": []},
            "a SchedulingPolicyList has apiVersion policyext.io/v1alpha1, not 'v1'",
        ),
        ({"apiVersion": "v1", "kind": "List"}, "a List needs `items`, a list of objects"),
        (
            {"apiVersion": "v1", "kind": "List", "items": {"a": 1}},
            "a List needs `items`, a list of objects",
        ),
        ({"apiVersion": "v1", "kind": "List", "items": ["x"]}, "an item of a List must be"),
        (
            {"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "List"}]},
            "a List inside a List is not read",
        ),
        (
            {"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Pod"}]},
            "unknown kind 'Pod': expected SchedulingPolicy or PolicyTest",
        ),
    ],
    ids=[
        "a List of another apiVersion",
        "a SchedulingPolicyList of another apiVersion",
        "a List without items",
        "items not a list",
        "an item not an object",
        "a List in a List",
        "an item of another kind",
    ],
)
def test_a_list_that_is_not_one_of_policies_is_refused_with_the_reason(
    tmp_path: Path, document: dict[str, Any], problem: str
) -> None:
    path = tmp_path / "list.yaml"
    listed = _listed()
    path.write_text(yaml.safe_dump_all([listed, document]))
    done = policyext("validate", path)
    assert done.returncode == 1
    assert problem in done.stdout + done.stderr


def test_an_empty_list_holds_no_policy(tmp_path: Path) -> None:
    """`kubectl get schedpol -o yaml` where none exists: validate finds nothing to check."""
    path = tmp_path / "none.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": []}))
    done = policyext("validate", path)
    assert done.returncode == 1
    assert "no SchedulingPolicy found" in done.stdout + done.stderr


def test_the_top_of_rules_holds_only_policies_for_kubectl_apply() -> None:
    """`kubectl apply -f rules/` reads the folder's own files, not its subfolders (unless
    -R): they must all be SchedulingPolicies, the PolicyTests below them in rules/tests/."""
    top = sorted(
        p for p in RULES.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml", ".json")
    )
    assert top
    for path in top:
        kinds = {d["kind"] for d in yaml.safe_load_all(path.read_text()) if d}
        assert kinds == {"SchedulingPolicy"}, path
    assert list((RULES / "tests").glob("*.test.yaml"))
