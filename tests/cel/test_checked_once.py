"""An expression is checked once: its pod-side parts and its residual are planned from that
one checked tree (`split_checked`, `plan`), and together they give what the whole gives,
value for value and error for error, over the parity corpus's pods and nodes."""

from __future__ import annotations

from typing import Final

import pytest

from policyext import cel
from tests.cel.kubernetes_corpus import ACCEPTED, TYPE_EDGES, generated, operator_table
from tests.cel.kubernetes_objects import NODE, POD
from tests.cel.same import same

OBJECTS: Final = {"pod": cel.kubernetes_type("pod"), "node": cel.kubernetes_type("node")}
# a node with less of everything: absent fields, so that optional reads and errors show
BARE_NODE: Final = {"metadata": {"name": "bare"}}
# rules of the kind policies write, each mixing the pod with the node
MIXED: Final = [
    "pod.metadata.labels.?critical.orValue('') != 'true' || "
    "node.metadata.labels.?lifecycle.orValue('') != 'spot'",
    "pod.metadata.labels['tier'] == 'critical' && node.metadata.labels['lifecycle'] == 'spot'",
    "pod.metadata.labels.tier == 'critical' ? (node.spec.?unschedulable.orValue(false) ? 0 : 10) : 5",
    "node.metadata.labels[?'topology.kubernetes.io/zone'].orValue('') == "
    "pod.metadata.?annotations[?'zone'].orValue('eu-west-1a')",
    "node.metadata.labels[pod.metadata.labels.app] == 'x'",
    "node.metadata.?labels[?pod.metadata.labels.tier].orValue('none')",
    "node.spec.taints.all(t, t.effect != 'NoSchedule' || pod.spec.tolerations.exists(tol, "
    "tol.key == t.key))",
    "node.spec.taints.exists(t, t.key == pod.spec.tolerations[0].key)",
    "pod.spec.containers.all(c, c.image.startsWith(node.metadata.name))",
    "size(pod.spec.containers) < size(node.metadata.labels)",
    "quantity(node.status.allocatable.cpu).compareTo(quantity(pod.spec.containers[0]"
    ".resources.requests.cpu)) >= 0",
    "quantity(node.status.allocatable.memory).isGreaterThan(quantity('1Gi')) && "
    "pod.spec.priority > 1000",
    "node.metadata.name + '/' + pod.metadata.name",
    "[pod.metadata.name, node.metadata.name].exists(n, n.startsWith('w'))",
    "{'pod': pod.metadata.namespace, 'node': node.metadata.name}",
    "pod.spec.priority + size(node.spec.taints) > 100000",
    "double(pod.spec.priority) * 2.0 > double(size(node.spec.taints))",
    "pod.metadata.labels.missing == node.metadata.labels.lifecycle",
    "pod.metadata.labels.missing == 'a' || node.metadata.labels.lifecycle == 'spot'",
    "node.metadata.labels.lifecycle == 'spot' || pod.metadata.labels.missing == 'a'",
    "pod.metadata.labels.missing == 'a' && node.metadata.labels.missing == 'b'",
    "node.metadata.labels.lifecycle in pod.metadata.labels",
    "pod.metadata.labels.app in node.metadata.labels",
    "timestamp(node.metadata.creationTimestamp) < timestamp(pod.metadata.creationTimestamp)",
    "node.metadata.creationTimestamp < pod.metadata.creationTimestamp",
    "!(pod.metadata.labels.tier == 'critical') || !has(node.spec.unschedulable)",
    "pod.spec.?nodeSelector.orValue({}).all(k, node.metadata.labels[?k] == "
    "pod.spec.nodeSelector[?k])",
]


def _pod_side(read: str) -> bool:
    return read == "pod"


def _split_expressions() -> list[str]:
    """The corpus's expressions that compile and split into pod-side parts and a residual."""
    out = []
    for source in sorted({*MIXED, *ACCEPTED, *TYPE_EDGES, *generated(), *operator_table()}):
        try:
            checked = cel.check_expression(source, OBJECTS)
        except cel.CELError:
            continue
        if cel.split_checked(checked, _pod_side) is not None:
            out.append(source)
    return out


SPLIT: Final = _split_expressions()


def _outcome(run: object) -> tuple[str, object]:
    try:
        return "value", run()  # type: ignore[operator]
    except cel.CELError as e:
        return "error", e.message


@pytest.mark.parametrize("source", SPLIT)
@pytest.mark.parametrize("node", [NODE, BARE_NODE], ids=["node", "bare node"])
def test_the_parts_and_the_residual_planned_from_one_check_give_what_the_whole_gives(
    source: str, node: dict[str, object]
) -> None:
    checked = cel.check_expression(source, OBJECTS)
    pieces = cel.split_checked(checked, _pod_side)
    assert pieces is not None
    whole = _outcome(lambda: cel.plan(checked).evaluate({"pod": POD, "node": node}))
    frame: dict[str, object] = {"pod": POD, "node": node}
    for name, part in zip(pieces.placeholders, pieces.parts, strict=True):
        kind, value = _outcome(lambda part=part: cel.plan(checked, part).evaluate({"pod": POD}))
        # a part's error is its value: raised where the residual reads it
        frame[name] = value if kind == "value" else cel.CELEvalError(str(value))
    split = _outcome(lambda: cel.plan(pieces.residual).evaluate(frame))
    assert split[0] == whole[0], (whole, split)
    if whole[0] == "value":
        assert same(split[1], whole[1]), (whole, split)
    else:
        assert split[1] == whole[1]


def test_every_mixed_rule_compiles_and_splits() -> None:
    assert set(MIXED) <= set(SPLIT)


def test_an_expression_is_checked_once_however_many_parts_it_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from policyext.cel.checker import Checker

    checked_trees: list[object] = []
    run = Checker.run

    def counted(self: Checker, tree: cel.ast.Node) -> object:
        checked_trees.append(tree)
        return run(self, tree)

    monkeypatch.setattr(Checker, "run", counted)
    source = (
        "pod.metadata.labels.?critical.orValue('') != 'true' || "
        "node.metadata.labels.?lifecycle.orValue('') != 'spot' && "
        "size(pod.spec.containers) < size(node.metadata.labels)"
    )
    checked = cel.check_expression(source, OBJECTS)
    pieces = cel.split_checked(checked, _pod_side)
    assert pieces is not None and len(pieces.parts) == 2
    for part in pieces.parts:
        cel.plan(checked, part)
    cel.plan(pieces.residual)
    assert len(checked_trees) == 1
