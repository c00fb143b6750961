"""The checker: `pod` and `node` typed from Kubernetes' schemas, every mistake refused at its
position with a suggestion, nothing valid refused, types inferred. (The parity test checks
the same verdicts against Kubernetes' own CEL; these run without Go.)"""

from __future__ import annotations

import re

import pytest

from policyext import cel
from policyext.cel import CELCheckError
from tests.cel.kubernetes_corpus import ACCEPTED, REFUSED

OBJECTS = {"pod": cel.kubernetes_type("pod"), "node": cel.kubernetes_type("node")}


@pytest.mark.parametrize(
    ("source", "message", "position"),
    [
        (
            "node.metadata.?lables[?'critical'].orValue('') != 'true'",
            "no field 'lables' in ObjectMeta; did you mean 'labels'?",
            (1, 16),
        ),
        (
            "has(node.spec.unschedulabel)",
            "no field 'unschedulabel' in NodeSpec; did you mean 'unschedulable'?",
            (1, 15),
        ),
        (
            "node.spec.taints.exists(t, t.efect == 'NoSchedule')",
            "no field 'efect' in Taint; did you mean 'effect'?",
            (1, 30),
        ),
        (
            "node.spec.?taints.orValue([]).exists(t, t.efect == 'NoSchedule')",
            "no field 'efect' in Taint; did you mean 'effect'?",
            (1, 43),
        ),
        (
            "pod.spec.containers.all(c,\n  c.resources.limit.cpu == '1')",
            "no field 'limit' in ResourceRequirements; did you mean 'limits'?",
            (2, 15),
        ),
        ("pod.spec.zzz", "no field 'zzz' in PodSpec", (1, 10)),
        (
            "node.status.allocatable.cpu > 4",
            "found no matching overload for '_>_' applied to '(string, int)'",
            (1, 29),
        ),
        (
            "node.metadata.name.startsWith(1)",
            "found no matching overload for 'startsWith' applied to 'string.(int)'",
            (1, 20),
        ),
        (
            "node.metadata['name']",
            "found no matching overload for '_[_]' applied to '(ObjectMeta, string)'",
            (1, 14),
        ),
        (
            "node.metadata.creationTimestamp == '2026-01-01T00:00:00Z'",
            "found no matching overload for '_==_' applied to "
            "'(google.protobuf.Timestamp, string)'",
            (1, 33),
        ),
        ("pod.spec.containers.all(c, c.image)", "expected type 'bool' but found 'string'", (1, 30)),
        ("[1, 'a']", "expected type 'int' but found 'string'", (1, 5)),
        (
            "'abc'.reverse()",
            "found no matching overload for 'reverse' applied to 'string.()'",
            (1, 7),
        ),
        (
            "quantity('1').sign()",
            "undeclared reference to function 'sign'",  # Kubernetes has `sign(q)` only
            (1, 15),
        ),
        (
            "string(optional.of(1))",
            "found no matching overload for 'string' applied to '(optional_type(int))'",
            (1, 1),
        ),
    ],
    ids=repr,
)
def test_a_mistake_is_refused_at_its_position_with_what_was_meant(
    source: str, message: str, position: tuple[int, int]
) -> None:
    with pytest.raises(CELCheckError) as refused:
        cel.compile(source, OBJECTS)
    assert refused.value.message == message
    assert (refused.value.line, refused.value.column) == position


@pytest.mark.parametrize(
    ("source", "type_"),
    [
        ("node.metadata.name", "string"),
        ("node.metadata.labels", "map(string, string)"),
        ("node.status.allocatable", "map(string, string)"),
        ("node.spec.taints", "list(Taint)"),
        ("node.spec.taints.map(t, t.key)", "list(string)"),
        ("node.spec.taints.filter(t, t.effect == 'NoSchedule')", "list(Taint)"),
        ("node.metadata.?labels", "optional_type(map(string, string))"),
        ("node.metadata.creationTimestamp", "google.protobuf.Timestamp"),
        ("pod.spec.priority", "int"),
        ("pod.spec.containers[0].readinessProbe.httpGet.port", "dyn"),
        ("pod.spec.containers[0].resources.requests", "map(string, string)"),
        ("has(pod.spec.nodeName)", "bool"),
        ("quantity(node.status.allocatable.cpu)", "kubernetes.Quantity"),
    ],
    ids=repr,
)
def test_the_type_of_a_read_of_pod_or_node_is_the_schemas(source: str, type_: str) -> None:
    assert str(cel.compile(source, OBJECTS).type) == type_


def test_a_date_time_field_reads_as_a_timestamp() -> None:
    program = cel.compile(
        "now - node.metadata.creationTimestamp > duration('24h')"
        " && node.metadata.?deletionTimestamp.orValue(now) == now",
        {**OBJECTS, "now": cel.TIMESTAMP},
    )
    node = {"metadata": {"creationTimestamp": "2026-03-01T08:15:30Z"}}
    now = cel.parse_timestamp("2026-03-03T00:00:00Z")
    assert program.evaluate({"node": node, "now": now}) is True


@pytest.mark.parametrize("source", ACCEPTED, ids=repr)
def test_a_realistic_rule_on_pods_and_nodes_is_accepted(source: str) -> None:
    # the corpus Kubernetes accepts too (test_kubernetes_parity.py): no false positive
    cel.compile(source, OBJECTS)


@pytest.mark.parametrize("source", REFUSED, ids=repr)
def test_a_mistake_of_the_parity_corpus_is_refused(source: str) -> None:
    with pytest.raises(CELCheckError):
        cel.compile(source, OBJECTS)


# cel-go libraries Kubernetes' environment does not declare: (source, message, position)
NOT_IN_KUBERNETES = [
    (
        "1 + math.greatest(1, 2)",
        "undeclared reference to 'math.greatest' (Kubernetes' CEL environment has no math library)",
        (1, 5),
    ),
    (
        "size(node.metadata.name) > 0 &&\n  math.isNaN(1.0)",
        "undeclared reference to 'math.isNaN' (Kubernetes' CEL environment has no math library)",
        (2, 3),
    ),
    (
        "'' != base64.encode(b'a')",
        "undeclared reference to 'base64.encode'"
        " (Kubernetes' CEL environment has no encoders library)",
        (1, 7),
    ),
    (
        "[1].all(i, cel.bind(x, i, x > 0))",
        "undeclared reference to 'cel.bind' (Kubernetes' CEL environment has no bindings library)",
        (1, 12),
    ),
]


@pytest.mark.parametrize(("source", "message", "position"), NOT_IN_KUBERNETES, ids=repr)
def test_a_cel_go_library_kubernetes_lacks_is_refused_at_its_position(
    source: str, message: str, position: tuple[int, int]
) -> None:
    with pytest.raises(CELCheckError) as refused:
        cel.compile(source, OBJECTS)
    assert refused.value.message == message
    assert (refused.value.line, refused.value.column) == position


@pytest.mark.parametrize(("source", "message", "position"), NOT_IN_KUBERNETES, ids=repr)
def test_a_cel_go_library_kubernetes_lacks_compiles_with_extensions_for_conformance(
    source: str, message: str, position: tuple[int, int]
) -> None:
    cel.compile(source, OBJECTS, extensions=True)  # must not raise


# what Kubernetes refuses when the rule is written (the parity test asks Kubernetes itself;
# these hold without Go): an operator or function over types none of its overloads takes,
# type parameters bound to two types, literals mixing types (dyn included), constants that
# can never convert
REFUSED_AS_IN_KUBERNETES = [
    ("quantity('1') < quantity('2')", "'_<_' applied to '(kubernetes.Quantity,"),
    ("timestamp('2024-01-01T00:00:00Z') + timestamp('2024-01-01T00:00:00Z')", "'_+_'"),
    ("duration('1s') * 2", "'_*_' applied to '(google.protobuf.Duration, int)'"),
    ("-duration('1s')", "'-_'"),
    ("[1, 2].sum() + 0.5", "'_+_' applied to '(int, double)'"),
    ("[1, 2].join()", "'join' applied to 'list(int).()'"),
    ("[1, 2].flatten()", "'flatten'"),
    ("[[1]].isSorted()", "'isSorted'"),
    ("{?'a': 1}", "expected type 'optional_type(int)'"),
    ("[?1]", "expected type 'optional_type(int)'"),
    ("[1, 2].existsOne(x, x > 1)", "undeclared reference to 'x'"),
    ("'a,b'.split(',')[0] + 1", "'_+_' applied to '(string, int)'"),
    ("1 in [1.0, 3.0]", "'@in' applied to '(int, list(double))'"),
    ("true ? 1 : 2.0", "'_?_:_' applied to '(bool, int, double)'"),
    ("optional.of(1).orValue(2.0)", "'orValue'"),
    ("[1.0] + [2]", "'_+_' applied to '(list(double), list(int))'"),
    ("[1, 2][1u]", "'_[_]' applied to '(list(int), uint)'"),
    ("sets.contains([1], [1.0])", "'sets.contains'"),
    ("pod.spec.priority in [1.0, 3.0]", "'@in'"),
    ("node.metadata.labels.?zone.orValue(1)", "'orValue'"),
    ("null == duration('1s') && null in [1]", "'@in' applied to '(null_type, list(int))'"),
    ("[1, dyn(1)]", "expected type 'int' but found 'dyn'"),
    ("[int, uint]", "expected type 'type(int)' but found 'type(uint)'"),
    ("{'a': 1, 'b': dyn(2)}", "expected type 'int' but found 'dyn'"),
    ("timestamp('2024-02-30T00:00:00Z')", "invalid timestamp argument"),
    ("duration('1d')", "invalid duration argument"),
    ("int(' 42')", "cannot convert"),
    ("uint(-1)", "uint overflow"),
    ("int(double('NaN'))", "int overflow"),
    ("string(b'\\xff')", "invalid UTF-8"),
]


@pytest.mark.parametrize(("source", "message"), REFUSED_AS_IN_KUBERNETES, ids=repr)
def test_what_kubernetes_refuses_when_it_is_written_is_refused(source: str, message: str) -> None:
    with pytest.raises(CELCheckError, match=re.escape(message)):
        cel.compile(source, OBJECTS)


@pytest.mark.parametrize(
    ("source", "type_"),
    [
        ("[1, 2].sum()", "int"),
        ("[1.5].max()", "double"),
        ("[duration('1s')].sum()", "google.protobuf.Duration"),
        ("'a,b'.split(',')", "list(string)"),
        ("[[1], [2]].flatten()", "list(int)"),
        ("optional.of(1).orValue(2)", "int"),
        # an empty literal takes the optional's type, as a fresh type variable would
        ("node.spec.?taints.orValue([])", "list(Taint)"),
        ("pod.metadata.?labels.orValue({})", "map(string, string)"),
        ("optional.of(1).orValue(dyn(2))", "dyn"),
        (
            "timestamp('2024-01-01T00:00:00Z') - timestamp('2024-01-01T00:00:00Z')",
            "google.protobuf.Duration",
        ),
        ("true ? null : pod.spec", "null_type"),
        ("[1] + [dyn('a')]", "list(dyn)"),
        ("{'a': 1}['a']", "int"),
        ("[dyn(1), dyn('a')]", "list(dyn)"),
        ("1e308 > 1", "bool"),
    ],
    ids=repr,
)
def test_a_generic_result_is_typed_as_kubernetes_types_it(source: str, type_: str) -> None:
    assert str(cel.compile(source, OBJECTS).type) == type_


def test_a_literal_beyond_the_largest_double_is_refused() -> None:
    with pytest.raises(cel.CELSyntaxError, match="invalid double literal"):
        cel.compile("1e309", {})
