"""`policyext eval EXPR --pod FILE [--node NAME --snapshot FILE]`: one expression as a rule
sees it, its value and type, or its error with the position."""

from __future__ import annotations

import pytest

from policyext.cli import main
from tests.cli.run import FIXTURES

POD = ["--pod", str(FIXTURES / "critical-pod.yaml"), "--now", "2026-03-14T21:00:00Z"]
NODE = ["--node", "general-a", "--snapshot", str(FIXTURES / "cluster.yaml")]


@pytest.mark.parametrize(
    ("arguments", "output"),
    [
        (["pod.spec.containers.map(c, c.name).size() > 0", *POD], "true\ntype: bool\n"),
        (["node.metadata.name", *POD, *NODE], "'general-a'\ntype: string\n"),
        (["now", *POD], "timestamp('2026-03-14T21:00:00Z')\ntype: google.protobuf.Timestamp\n"),
        (["podRequests.cpu.isInteger()", *POD], "false\ntype: bool\n"),
        (["[1, 2].includes(2)", *POD], "true\ntype: bool\n"),
        (["dyn(2u)", *POD], "2u\ntype: uint\n"),
        (["nodeInfo.podCount >= 0", *POD, *NODE], "true\ntype: bool\n"),
    ],
    ids=repr,
)
def test_eval_prints_the_value_and_its_type(
    arguments: list[str], output: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", *arguments]) == 0
    assert capsys.readouterr().out == output


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (
            ["node.metadata.?lables[?'zone'].orValue('')", *POD, *NODE],
            "error: check error: 1:16: no field 'lables' in ObjectMeta; did you mean 'labels'?\n"
            "  node.metadata.?lables[?'zone'].orValue('')\n"
            "                 ^\n",
        ),
        (
            ["pod.metadata.labels['nope']", *POD],
            "error: evaluation error: no such key: nope\n",
        ),
        (["1 +", *POD], "error: syntax error: 1:4: unexpected end of input\n  1 +\n     ^\n"),
        (
            ["node.metadata.name", *POD, "--node", "nope", "--snapshot", NODE[3]],
            f"error: no node 'nope' in {NODE[3]}\n",
        ),
    ],
    ids=repr,
)
def test_eval_prints_the_error_with_its_position(
    arguments: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", *arguments]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == error


def test_eval_on_a_node_needs_the_snapshot_that_holds_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["eval", "node.metadata.name", *POD, "--node", "general-a"]) == 2
    assert "--node needs --snapshot" in capsys.readouterr().err
