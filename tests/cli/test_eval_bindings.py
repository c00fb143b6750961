"""`policyext eval`: an expression may start with `-`; `--pod` is needed only when the
expression reads the pod; an input that is read but not given says how to give it."""

from __future__ import annotations

import pytest

from tests.cli.run import FIXTURES, policyext

POD = ["--pod", str(FIXTURES / "web-pod.yaml")]
NODE = ["--node", "general-a", "--snapshot", str(FIXTURES / "cluster.yaml")]


@pytest.mark.parametrize(
    "args",
    [
        ["-nodeInfo.podCount", *NODE],
        [*NODE, "-nodeInfo.podCount"],
        ["--node", "general-a", "-nodeInfo.podCount", "--snapshot", str(FIXTURES / "cluster.yaml")],
    ],
    ids=["first", "last", "between two flags"],
)
def test_an_expression_that_starts_with_a_minus_is_the_expression(args: list[str]) -> None:
    done = policyext("eval", *args)
    assert done.returncode == 0, done.stderr
    count = policyext("eval", "nodeInfo.podCount", *NODE)
    assert done.stdout == f"-{count.stdout.splitlines()[0]}\ntype: int\n"


def test_an_unknown_flag_is_still_a_usage_error() -> None:
    done = policyext("eval", "1 + 1", "--no-such-flag", "x")
    assert done.returncode == 2
    assert "unrecognized arguments" in done.stderr


@pytest.mark.parametrize(
    ("expression", "args", "value"),
    [
        ("1 + 1", [], "2"),
        ("now > timestamp('2020-01-01T00:00:00Z')", [], "true"),
        ("node.metadata.name", NODE, "'general-a'"),
    ],
)
def test_an_expression_that_reads_no_pod_needs_no_pod(
    expression: str, args: list[str], value: str
) -> None:
    done = policyext("eval", expression, *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == value


@pytest.mark.parametrize(
    ("expression", "args", "says"),
    [
        ("pod.metadata.name", [], "'pod', which is not bound: bind it with --pod FILE"),
        ("podRequests", [], "'podRequests', which is not bound: bind it with --pod FILE"),
        (
            "node.metadata.name",
            POD,
            "'node', which is not bound: bind it with --node NAME --snapshot FILE",
        ),
        (
            "nodeInfo.podCount",
            POD,
            "'nodeInfo', which is not bound: bind it with --node NAME --snapshot FILE",
        ),
    ],
)
def test_an_input_the_expression_reads_but_was_not_given_says_how_to_bind_it(
    expression: str, args: list[str], says: str
) -> None:
    done = policyext("eval", expression, *args)
    assert done.returncode == 2
    assert f"error: the expression reads {says}" in done.stderr
    assert done.stdout == ""


def test_each_unbound_input_is_named() -> None:
    done = policyext("eval", "pod.metadata.name + node.metadata.name")
    assert done.returncode == 2
    assert "reads 'pod'" in done.stderr
    assert "reads 'node'" in done.stderr
