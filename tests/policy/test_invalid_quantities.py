"""A quantity kube-scheduler could not count ("1.5.5", "abc", "", "1e400", "-1") is never
read as 0 or infinity: in a request, the rules that read it fail for that pod or node (their
failurePolicy decides); in `simulate` and PolicyTest fixtures it is an error naming the
field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policyext.cli import main
from policyext.cluster.snapshot import SnapshotError, SnapshotSource
from tests.policy.helpers import node, pod, policies, policy, run

INVALID = [
    ("1.5.5", "quantities must match"),
    ("abc", "quantities must match"),
    ("", "quantities must match"),
    ("1e400", "is too large"),
    ("-1", "must not be negative"),
]


def with_requests(where: str, value: str) -> dict[str, Any]:
    """A pod `web` in `shop` with an invalid cpu request at `where`, and the field named."""
    made = pod(cpu="1")
    spec = made["spec"]
    if where == "container":
        spec["containers"].append({"name": "proxy", "resources": {"requests": {"cpu": value}}})
    elif where == "init container":
        spec["initContainers"] = [{"name": "setup", "resources": {"requests": {"cpu": value}}}]
    elif where == "overhead":
        spec["overhead"] = {"cpu": value}
    else:
        spec["resources"] = {"requests": {"cpu": value}}
    return made


FIELDS = {
    "container": "pod shop/web, container proxy: spec.containers[1].resources.requests[cpu]",
    "init container": "pod shop/web, container setup: spec.initContainers[0].resources.requests[cpu]",
    "overhead": "pod shop/web: spec.overhead[cpu]",
    "pod-level": "pod shop/web: spec.resources.requests[cpu]",
}

RULES = """
filters:
- {name: fits, failurePolicy: FAILURE, expression: "podRequests.cpu.isLessThan(quantity('100'))"}
- {name: no-spot, expression: "node.metadata.labels.?lifecycle.orValue('') != 'spot'"}
"""


@pytest.mark.parametrize(("value", "reason"), INVALID)
@pytest.mark.parametrize("where", FIELDS)
@pytest.mark.parametrize("failure", ["Fail", "Ignore"])
def test_in_a_request_the_rules_reading_podrequests_fail_for_that_pod(
    value: str, reason: str, where: str, failure: str
) -> None:
    result = run(
        policies(policy("p", RULES.replace("FAILURE", failure))),
        with_requests(where, value),
        [node("n1")],
    )
    verdict = result.nodes[0]
    failed = verdict.rejections if failure == "Fail" else verdict.skipped
    assert verdict.feasible is (failure == "Ignore")
    assert [r.rule_id for r in failed] == ["p/fits"]  # no-spot is not affected
    error = failed[0].error or ""
    assert error.startswith(f"podRequests cannot be read: {FIELDS[where]}: ")
    assert reason in error


def test_a_pod_with_valid_requests_reads_them() -> None:
    result = run(
        policies(policy("p", RULES.replace("FAILURE", "Fail"))),
        with_requests("container", "2"),
        [node("n1")],
    )
    assert result.nodes[0].feasible


@pytest.mark.parametrize(("value", "reason"), INVALID)
def test_in_a_request_a_node_with_invalid_allocatable_fails_the_rules_reading_it(
    value: str, reason: str
) -> None:
    text = policy(
        "p",
        """
        filters:
        - {name: cpu, expression: "nodeInfo.allocatable.cpu.isGreaterThan(quantity('1'))"}
        - {name: named, expression: "node.metadata.name != ''"}
        """,
    )
    broken = node("n1")
    broken["status"]["allocatable"]["cpu"] = value
    verdict = run(policies(text), pod(), [broken, node("n2")]).nodes
    assert [v.feasible for v in verdict] == [False, True]
    (rejection,) = verdict[0].rejections
    assert rejection.rule_id == "p/cpu"
    error = rejection.error or ""
    assert error.startswith("nodeInfo.allocatable cannot be read: node n1: ")
    assert "status.allocatable[cpu]" in error and reason in error


def as_object(made: dict[str, Any], kind: str) -> dict[str, Any]:
    return {"kind": kind, **made}


def snapshot_error(objects: list[dict[str, Any]]) -> str:
    with pytest.raises(SnapshotError) as raised:
        SnapshotSource(objects, "cluster.yaml")
    return str(raised.value)


@pytest.mark.parametrize(("value", "reason"), INVALID)
def test_a_snapshot_with_an_invalid_quantity_is_an_error_naming_the_field(
    value: str, reason: str
) -> None:
    bound = with_requests("container", value)
    bound["spec"]["nodeName"] = "n1"
    message = snapshot_error([as_object(node("n1"), "Node"), as_object(bound, "Pod")])
    assert message.startswith(f"cluster.yaml: {FIELDS['container']}: ")
    assert reason in message
    broken = node("n1")
    broken["status"]["allocatable"]["memory"] = value
    message = snapshot_error([as_object(broken, "Node")])
    assert message.startswith("cluster.yaml: node n1: status.allocatable[memory]: ")
    assert reason in message


@pytest.mark.parametrize(("value", "reason"), INVALID)
def test_simulate_refuses_a_pod_with_an_invalid_quantity_naming_the_field(
    value: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(yaml.safe_dump(with_requests("init container", value)))
    rules = tmp_path / "rules.yaml"
    rules.write_text(policy("p", RULES.replace("FAILURE", "Fail")))
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump(as_object(node("n1"), "Node")))
    code = main(["simulate", "--rules", str(rules), "--pod", str(pod_file), "--nodes", str(nodes)])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{pod_file}: {FIELDS['init container']}: " in err
    assert reason in err


@pytest.mark.parametrize(("value", "reason"), INVALID)
def test_simulate_refuses_nodes_with_an_invalid_allocatable_naming_the_field(
    value: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(yaml.safe_dump(pod()))
    rules = tmp_path / "rules.yaml"
    rules.write_text(policy("p", RULES.replace("FAILURE", "Fail")))
    broken = node("n1")
    broken["status"]["allocatable"]["pods"] = value
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump(as_object(broken, "Node")))
    code = main(["simulate", "--rules", str(rules), "--pod", str(pod_file), "--nodes", str(nodes)])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{nodes}: node n1: status.allocatable[pods]: " in err
    assert reason in err


@pytest.mark.parametrize(("value", "reason"), INVALID)
def test_a_policytest_case_with_an_invalid_quantity_fails_naming_the_field(
    value: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "rules.yaml").write_text(policy("p", RULES.replace("FAILURE", "Fail")))
    test = {
        "apiVersion": "policyext.io/v1alpha1",
        "kind": "PolicyTest",
        "metadata": {"name": "t"},
        "spec": {
            "policies": ["rules.yaml"],
            "cases": [
                {
                    "name": "an inline pod",
                    "pod": with_requests("overhead", value),
                    "expect": {"feasible": []},
                }
            ],
        },
    }
    (tmp_path / "t.test.yaml").write_text(yaml.safe_dump(test))
    assert main(["test", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"cannot load the case: {FIELDS['overhead']}: " in out
    assert reason in out
