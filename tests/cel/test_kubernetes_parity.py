"""policyext's CEL against Kubernetes' own (cel-go with k8s.io/apiserver's environment,
`pod` and `node` typed from the v1 Pod and Node schemas): the same verdict (accepted or
refused) for every expression of the corpus, and for the accepted ones the same value, or
an error in both.

The Go side is built with the machine's Go from the module proxy (tests/cel/kubernetes_cel);
without Go these tests skip with the reason, and fail where POLICYEXT_REQUIRE_ALL=1 (CI).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import pytest

from policyext import cel
from policyext.cel import Duration, Optional, Timestamp, UInt
from policyext.cel.values import CELType
from tests.cel import kubernetes_cel
from tests.cel.kubernetes_corpus import (
    ACCEPTED,
    KNOWN_DIFFERENCES,
    REFUSED,
    TYPE_EDGES,
    generated,
    operator_table,
)
from tests.cel.kubernetes_objects import NODE, POD
from tests.unavailable import skip_or_fail

ENVIRONMENT = {"pod": cel.kubernetes_type("pod"), "node": cel.kubernetes_type("node")}
ACTIVATION = {"pod": POD, "node": NODE}
GENERATED = generated()
OPERATORS = operator_table()
EVERY = sorted({*ACCEPTED, *REFUSED, *GENERATED, *OPERATORS, *TYPE_EDGES})


@cache
def kubernetes() -> dict[str, dict[str, Any]]:
    """Kubernetes' answer for every expression of the corpus (one run of the Go program)."""
    if not kubernetes_cel.go_available():
        skip_or_fail("no Go toolchain: cannot build Kubernetes' CEL for the parity tests")
    answers = kubernetes_cel.evaluate({"expr": e, "pod": POD, "node": NODE} for e in EVERY)
    return dict(zip(EVERY, answers, strict=True))


def ours(expr: str) -> dict[str, Any]:
    try:
        program = cel.compile(expr, ENVIRONMENT)
    except cel.CELError as e:
        return {"compiled": False, "error": str(e)}
    try:
        value = program.evaluate(ACTIVATION)
    except cel.CELError as e:
        return {"compiled": True, "eval_error": str(e)}
    return {"compiled": True, "value": as_json(value)}


_AS_STRING = cel.compile("string(v)", {"v": cel.DYN})


def as_json(value: Any) -> Any:
    """A value in the form the Go program prints it."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if type(value) is UInt:
        return {"uint": str(int(value))}
    if isinstance(value, int):
        # cel-go gives an int beyond JSON's exact integers (2^53) as a string
        return value if abs(value) < 2**53 else str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return {"double": {math.inf: "+Inf", -math.inf: "-Inf"}.get(value, "NaN")}
        return {"double": value}
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    if isinstance(value, list | tuple):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {_go_key(k): as_json(v) for k, v in value.items()}
    if isinstance(value, Optional):
        return {"optional": [as_json(value.value)] if value.has_value() else None}
    if isinstance(value, Timestamp | Duration):
        return _AS_STRING.evaluate({"v": value})  # the Go program prints string(v)
    if isinstance(value, CELType):
        return {"string_of": str(value)}
    if getattr(type(value), "cel_type_name", None) == "kubernetes.Quantity":
        return {"unrenderable": str(value)}  # as Go prints it
    return {"unrenderable": repr(value)}


def _go_key(key: Any) -> str:
    """A map key as Go's fmt prints it (the Go program's keys)."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "NULL_VALUE"
    if isinstance(key, float):
        return _AS_STRING.evaluate({"v": key})  # Go's %v of a double is CEL's string()
    return str(key)


def accepted(answer: dict[str, Any]) -> bool:
    """Whether Kubernetes accepts the rule: it compiles, and a program is built from it (a
    constant argument that can never convert, `duration('1d')`, fails the building)."""
    return bool(answer["compiled"]) and "program_error" not in answer


def _same(expr: str) -> None:
    theirs = kubernetes()[expr]
    mine = ours(expr)
    assert mine["compiled"] == accepted(theirs), (
        f"{expr!r}: Kubernetes {'accepts' if accepted(theirs) else 'refuses'} it "
        f"({theirs.get('error', theirs.get('program_error', theirs.get('type')))}); "
        f"policyext: {mine}"
    )
    if not accepted(theirs):
        return
    if "eval_error" in theirs or "eval_error" in mine:
        assert ("eval_error" in theirs) == ("eval_error" in mine), (expr, theirs, mine)
        return
    assert mine["value"] == _unescaped(theirs.get("value")), (expr, theirs, mine)


def _unescaped(value: Any) -> Any:
    """Kubernetes shows an object's field `namespace` (a CEL reserved word) as
    `__namespace__` when the object is read whole; policyext keeps the JSON name (a
    difference docs/cel.md lists). Selecting `.namespace` works in both. Go's JSON writes
    a large double without an exponent (`9223372036854776000`): it is read back as one."""
    if isinstance(value, dict) and set(value) == {"double"} and type(value["double"]) is int:
        return {"double": float(value["double"])}
    if isinstance(value, dict):
        return {
            ("namespace" if k == "__namespace__" else k): _unescaped(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_unescaped(v) for v in value]
    return value


@pytest.mark.parametrize("expr", ACCEPTED, ids=repr)
def test_a_realistic_rule_is_accepted_and_evaluates_as_in_kubernetes(expr: str) -> None:
    assert accepted(kubernetes()[expr]), kubernetes()[expr]  # the corpus itself is right
    _same(expr)


@pytest.mark.parametrize("expr", REFUSED, ids=repr)
def test_a_mistake_is_refused_as_kubernetes_refuses_it(expr: str) -> None:
    assert not accepted(kubernetes()[expr]), kubernetes()[expr]
    _same(expr)


@pytest.mark.parametrize("expr", GENERATED, ids=repr)
def test_every_field_of_pod_and_node_gets_the_kubernetes_verdict_and_value(expr: str) -> None:
    _same(expr)


def _known(expr: str) -> Any:
    reason = KNOWN_DIFFERENCES.get(expr)
    if reason is None:
        return expr
    return pytest.param(expr, marks=pytest.mark.xfail(reason=reason, strict=True))


@pytest.mark.parametrize("expr", [_known(e) for e in OPERATORS], ids=repr)
def test_every_operator_over_every_pair_of_types_gets_the_kubernetes_verdict_and_value(
    expr: str,
) -> None:
    _same(expr)


@pytest.mark.parametrize("expr", [_known(e) for e in TYPE_EDGES], ids=repr)
def test_a_type_edge_gets_the_kubernetes_verdict_and_value(expr: str) -> None:
    _same(expr)


def test_every_known_difference_is_an_expression_of_the_corpus() -> None:
    assert set(KNOWN_DIFFERENCES) <= {*TYPE_EDGES, *OPERATORS}


def test_the_corpus_holds_each_type_edge_and_operator_expression_once() -> None:
    assert len(TYPE_EDGES) == len(set(TYPE_EDGES))
    assert len(OPERATORS) == len(set(OPERATORS))
