"""The column evaluator gives exactly the per-node evaluator's answers.

Random policies (filters and scores mixing node columns with the pod's values: labels,
quantities in mixed formats, optionals, `has`, `in`, ternaries, && / || / !, errors under
Fail and Ignore, Audit, unresolvable, messages, Clamp and MinMax, weights), random pods and
random nodes with bound pods: every verdict, message, error and score must be the same,
in NodeNames mode (node values kept across calls) and with the nodes in the request.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from policyext.cel import Quantity
from policyext.cluster.cache import ClusterSource
from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import PolicySet, load_policy_texts
from policyext.policy.engine import evaluate, prepare
from policyext.policy.model import PolicyError
from policyext.policy.verdicts import Evaluation
from tests.cluster.fake_core import fake_api
from tests.policy.helpers import NOW

# -- expressions -------------------------------------------------------------------------
NODE_STR = st.sampled_from(
    [
        "node.metadata.?labels[?'zone'].orValue('')",
        "node.metadata.labels.zone",  # an error where the label is missing
        "node.metadata.?labels.?tier.orValue('none')",
        "node.metadata.name",
    ]
)
POD_STR = st.sampled_from(
    [
        "pod.metadata.?labels[?'zone'].orValue('')",
        "pod.metadata.labels.zone",
        "pod.metadata.?annotations[?'tier'].orValue('none')",
        "'a'",
    ]
)
NODE_QUANTITY = st.sampled_from(
    [
        "nodeInfo.free.cpu",
        "nodeInfo.allocatable.cpu",
        "nodeInfo.free.memory",
        "nodeInfo.requested.cpu",
        "quantity(node.metadata.?labels[?'size'].orValue('1'))",  # invalid sizes fail
    ]
)
POD_QUANTITY = st.sampled_from(
    [
        "podRequests.cpu",
        "podRequests.memory",
        "quantity('1500m')",
        "podRequests[?'gpu'].orValue(quantity('0'))",
    ]
)
NODE_NUMBER = st.sampled_from(
    [
        "nodeInfo.free.cpu.asApproximateFloat()",
        "double(node.metadata.?labels[?'rank'].orValue('1'))",  # 'x' fails
        "int(node.metadata.?labels[?'rank'].orValue('1'))",  # '2.5' and 'x' fail
        "nodeInfo.podCount",
        "nodeInfo.allocatable.memory.asApproximateFloat() / 1073741824.0",
    ]
)
POD_NUMBER = st.sampled_from(
    [
        "double(pod.metadata.?labels[?'weight'].orValue('1'))",
        "int(pod.metadata.?labels[?'rank'].orValue('3'))",
        "podRequests.cpu.asApproximateFloat()",
        "2.5",
        "0.0",
    ]
)
NODE_BOOL = st.sampled_from(
    [
        "has(node.spec.unschedulable)",
        "node.spec.?unschedulable.orValue(false)",
        "node.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
        "node.metadata.?labels[?'spot'].hasValue()",
        "now < timestamp(node.metadata.?annotations[?'until'].orValue('2100-01-01T00:00:00Z'))",
    ]
)
POD_BOOL = st.sampled_from(
    [
        "pod.metadata.?labels[?'critical'].orValue('') == 'true'",
        "has(pod.metadata.labels.critical)",
        "pod.metadata.labels.critical == 'true'",  # an error without the label
    ]
)


def atoms() -> st.SearchStrategy[str]:
    compare = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
    return st.one_of(
        NODE_BOOL,
        POD_BOOL,
        st.builds(
            lambda a, b, op: f"{a} {op} {b}", NODE_STR, POD_STR, st.sampled_from(["==", "!="])
        ),
        st.builds(
            lambda a, b, op: f"{b} {op} {a}", NODE_STR, POD_STR, st.sampled_from(["==", "!="])
        ),
        st.builds(
            lambda a, b, op: f"{a}.compareTo({b}) {op} 0", NODE_QUANTITY, POD_QUANTITY, compare
        ),
        st.builds(
            lambda a, b, op, k: f"{a}.compareTo({b}) {op} {k}",
            NODE_QUANTITY,
            POD_QUANTITY,
            compare,
            st.sampled_from(["-1", "1", "2"]),
        ),
        st.builds(
            lambda a, b, op: f"0 {op} {b}.compareTo({a})", NODE_QUANTITY, POD_QUANTITY, compare
        ),
        st.builds(lambda a, b: f"{a}.isGreaterThan({b})", NODE_QUANTITY, POD_QUANTITY),
        st.builds(lambda a, b: f"{b}.isLessThan({a})", NODE_QUANTITY, POD_QUANTITY),
        st.builds(lambda a, b, op: f"{a} {op} {b}", NODE_NUMBER, POD_NUMBER, compare),
        st.builds(lambda a: f"{a} in node.metadata.?labels.orValue({{}})", POD_STR),
        st.builds(lambda a: f"{a} in ['a', 'b', pod.metadata.name]", NODE_STR),
        st.builds(lambda a: f"{a} in node.metadata.?annotations.orValue({{}})", POD_STR),
        # operators the columns do not evaluate, over the pod and the node together: as an
        # operand of && / ||, a partial plan
        st.builds(lambda a, b: f"{a}.startsWith({b})", POD_STR, NODE_STR),
        st.builds(lambda a, b: f"{a}.endsWith({b})", NODE_STR, POD_STR),
    )


def bools() -> st.SearchStrategy[str]:
    return st.recursive(
        atoms(),
        lambda inner: st.one_of(
            st.builds(lambda a: f"!({a})", inner),
            st.builds(lambda a, b: f"({a}) && ({b})", inner, inner),
            st.builds(lambda a, b: f"({a}) || ({b})", inner, inner),
            st.builds(lambda a, b, c: f"({a}) ? ({b}) : ({c})", inner, inner, inner),
        ),
        max_leaves=4,
    )


def numbers() -> st.SearchStrategy[str]:
    return st.one_of(
        NODE_NUMBER,
        st.builds(
            lambda b, x, y: f"({b}) ? {x} : {y}",
            bools(),
            st.sampled_from(["10", "7", "-3"]),
            st.sampled_from(["0", "4", "12"]),
        ),
        st.builds(lambda b, x: f"({b}) ? 10.0 : {x}", bools(), POD_NUMBER),
        st.builds(lambda b: f"({b}) ? 10 : 0.5", bools()),  # int or double by row
        st.builds(
            lambda a, b, op: f"{a} {op} {b}",
            NODE_NUMBER,
            POD_NUMBER,
            st.sampled_from(["*", "/", "+", "-"]),
        ),
        st.builds(lambda a, b: f"{a} / {b}", POD_NUMBER, NODE_NUMBER),
        st.builds(lambda a: f"{a}.asApproximateFloat() / 1000000000.0", NODE_QUANTITY),
    )


MESSAGE = st.one_of(
    st.fixed_dictionaries({"message": st.sampled_from(["no", "not this one"])}),
    st.fixed_dictionaries(
        {
            "messageExpression": st.sampled_from(
                [
                    "'pod ' + pod.metadata.name",
                    "'node ' + node.metadata.name",
                    "node.metadata.?labels[?'zone'].orValue('')",  # '' falls back
                ]
            )
        }
    ),
    st.just({}),
)
FILTER = st.builds(
    lambda rule, message: {**rule, **message},
    st.fixed_dictionaries(
        {"expression": bools()},
        optional={
            "failurePolicy": st.sampled_from(["Fail", "Ignore"]),
            "mode": st.sampled_from(["Enforce", "Audit"]),
            "unresolvable": st.booleans(),
        },
    ),
    MESSAGE,
)
SCORE = st.fixed_dictionaries(
    {"expression": numbers()},
    optional={
        "weight": st.integers(1, 5),
        "normalize": st.sampled_from(["Clamp", "MinMax"]),
        "mode": st.sampled_from(["Enforce", "Audit"]),
    },
)
POLICY = st.fixed_dictionaries(
    {
        "failurePolicy": st.sampled_from(["Fail", "Ignore"]),
        "filters": st.lists(FILTER, max_size=3),
        "scores": st.lists(SCORE, max_size=3),
    }
)


def policy_set(specs: list[dict[str, Any]]) -> PolicySet:
    """The policies; a combination the type checker refuses (int / double) is skipped."""
    docs = []
    for p, spec in enumerate(specs):
        for kind in ("filters", "scores"):
            for r, rule in enumerate(spec[kind]):
                rule["name"] = f"{kind[0]}{r}"
        docs.append(
            {
                "apiVersion": "policyext.io/v1alpha1",
                "kind": "SchedulingPolicy",
                "metadata": {"name": f"p{p}"},
                "spec": spec,
            }
        )
    try:
        return load_policy_texts({f"p{i}.json": json.dumps(d) for i, d in enumerate(docs)})
    except PolicyError:
        assume(False)
        raise


# -- pods and nodes ----------------------------------------------------------------------
CPU = st.sampled_from(["100m", "250m", "0.5", "2", "1500m", "1", "0.25", "4", "2000m", "3"])
MEMORY = st.sampled_from(["512Mi", "1G", "1Gi", "1024Mi", "2G", "1000M"])
ZONE = st.sampled_from(["a", "b", ""])
LABEL_VALUES = {
    "zone": ZONE,
    "tier": st.sampled_from(["gold", "none"]),
    "size": st.sampled_from(["2", "500m", "1Gi", "huge"]),
    "rank": st.sampled_from(["1", "5", "2.5", "x", "9007199254740993"]),
    "spot": st.just("true"),
    "critical": st.sampled_from(["true", "false"]),
    "weight": st.sampled_from(["0.5", "2", "x", "1e308", "nan"]),
}


def labels(keys: list[str]) -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries({}, optional={k: LABEL_VALUES[k] for k in keys})


def pods() -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda name, lab, ann, cpu, mem, gpu: {
            "metadata": {"name": name, "namespace": "default", "labels": lab, "annotations": ann},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "resources": {"requests": {"cpu": cpu, "memory": mem, **gpu}},
                    }
                ]
            },
        },
        st.sampled_from(["web", "a", "b"]),
        labels(["zone", "critical", "weight", "rank"]),
        st.fixed_dictionaries({}, optional={"tier": st.sampled_from(["gold", "none"])}),
        CPU,
        MEMORY,
        st.sampled_from([{}, {"gpu": "1"}]),
    )


def nodes() -> st.SearchStrategy[list[tuple[dict[str, Any], list[str]]]]:
    node = st.builds(
        lambda lab, ann, cpu, mem, ready, unsched, bound: (
            {
                "metadata": {"labels": lab, "annotations": ann, "resourceVersion": "1"},
                "spec": {"unschedulable": True} if unsched else {},
                "status": {
                    "allocatable": {"cpu": cpu, "memory": mem},
                    "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                },
            },
            bound,
        ),
        labels(["zone", "tier", "size", "rank", "spot"]),
        st.fixed_dictionaries(
            {},
            optional={
                "until": st.sampled_from(["2000-01-01T00:00:00Z", "2100-01-01T00:00:00Z", "soon"]),
                "zone": ZONE,
            },
        ),
        CPU,
        MEMORY,
        st.booleans(),
        st.booleans(),
        st.lists(CPU, max_size=3),
    )
    return st.lists(node, min_size=1, max_size=7)


def snapshot(
    made: list[tuple[dict[str, Any], list[str]]],
) -> tuple[SnapshotSource, list[dict[str, Any]]]:
    objects: list[dict[str, Any]] = []
    for i, (node, bound) in enumerate(made):
        node["metadata"]["name"] = f"n{i}"
        objects.append({"kind": "Node", **node})
        for j, cpu in enumerate(bound):
            objects.append(
                {
                    "kind": "Pod",
                    "metadata": {"name": f"n{i}-{j}", "namespace": "default", "uid": f"{i}-{j}"},
                    "spec": {
                        "nodeName": f"n{i}",
                        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
                    },
                    "status": {"phase": "Succeeded" if j == 2 else "Running"},
                }
            )
    source = SnapshotSource(objects)
    return source, [source.nodes[f"n{i}"] for i in range(len(made))]


def picture(ev: Evaluation) -> object:
    """Everything an evaluation says, in comparable form."""
    return (
        [
            (
                v.name,
                v.feasible,
                v.unresolvable,
                tuple(v.rejections),
                tuple(v.audits),
                tuple(v.skipped),
                tuple(v.scores),
                v.score,
            )
            for v in ev.nodes
        ],
        ev.rejected(),
        ev.feasible_names(),
        ev.final_scores(),
        ev.errors,
        ev.score_errors,
        ev.tally(),
    )


SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(st.lists(POLICY, min_size=1, max_size=2), st.lists(pods(), min_size=1, max_size=3), nodes())
def test_the_column_evaluator_agrees_with_the_per_node_evaluator_on_every_node(
    specs: list[dict[str, Any]], the_pods: list[dict[str, Any]], made: list[Any]
) -> None:
    policies = policy_set(specs)
    source, node_list = snapshot(made)
    names = [n["metadata"]["name"] for n in node_list]
    for pod in the_pods:  # several pods: node values kept from one call to the next
        for filters, scores, detail in (
            (True, True, True),
            (True, False, False),
            (False, True, False),
        ):
            kwargs: dict[str, Any] = {"filters": filters, "scores": scores, "detail": detail}
            exact = prepare(policies, pod, source, NOW).evaluate(node_list, columns=False, **kwargs)
            by_names = prepare(policies, pod, source, NOW).evaluate(
                node_list, names=names, cache_nodes=True, **kwargs
            )
            in_request = prepare(policies, pod, source, NOW).evaluate(node_list, **kwargs)
            assert picture(by_names) == picture(exact)
            assert picture(in_request) == picture(exact)


def _cluster(made: list[Any]) -> tuple[ClusterSource, list[str]]:
    """The nodes and bound pods of `made` in a live node source fed by hand."""
    snap, node_list = snapshot(made)
    source = ClusterSource(fake_api())  # no API server
    source.replace("nodes", node_list)
    bound = [p for p in snap.pods if p.get("spec", {}).get("nodeName")]
    for pod in bound:
        pod["metadata"]["resourceVersion"] = "1"
    source.replace("pods", bound)
    return source, [n["metadata"]["name"] for n in node_list]


@SETTINGS
@given(
    st.lists(POLICY, min_size=1, max_size=2),
    st.lists(pods(), min_size=2, max_size=3),
    nodes(),
    st.lists(st.tuples(st.integers(0, 6), nodes(), CPU), min_size=1, max_size=3),
)
def test_the_values_kept_for_nodes_that_changed_are_those_of_their_new_versions(
    specs: list[dict[str, Any]],
    the_pods: list[dict[str, Any]],
    made: list[Any],
    changes: list[tuple[int, list[tuple[dict[str, Any], list[str]]], str]],
) -> None:
    """A few nodes change between two calls (new labels, a pod bound): the kept columns
    take their new values row by row, of whatever kind they now are (a label that stops
    being a number, an error), and answer as the per-node evaluator does."""
    policies = policy_set(specs)
    source, names = _cluster(made)
    first, *later = the_pods
    prepare(policies, first, source, NOW).evaluate(source.node_rows(names))  # type: ignore[arg-type]
    for version, (index, drawn, cpu) in enumerate(changes, start=2):
        name = names[index % len(names)]
        node = {"kind": "Node", **json.loads(json.dumps(drawn[0][0]))}
        node["metadata"] = {**node["metadata"], "name": name, "resourceVersion": str(version)}
        source.apply("nodes", "MODIFIED", node)
        source.apply("pods", "ADDED", _bound(f"new-{version}", name, cpu))
    for pod in later:
        exact = prepare(policies, pod, source, NOW).evaluate(
            [source.get_node(n) for n in names],  # type: ignore[misc]
            names=names,
            columns=False,
        )
        kept = prepare(policies, pod, source, NOW).evaluate(source.node_rows(names))  # type: ignore[arg-type]
        assert picture(kept) == picture(exact)


@SETTINGS
@given(POLICY, pods(), nodes(), st.sampled_from([40, 120, 400]))
def test_the_column_evaluator_agrees_when_the_cost_budget_runs_out(
    spec: dict[str, Any], pod: dict[str, Any], made: list[Any], budget: int
) -> None:
    policies = policy_set([spec])
    source, node_list = snapshot(made)
    names = [n["metadata"]["name"] for n in node_list]
    exact = evaluate(policies, pod, node_list, source, NOW, budget=budget, columns=False)
    for _ in range(2):
        by_columns = prepare(policies, pod, source, NOW, budget).evaluate(
            node_list, names=names, cache_nodes=True
        )
        assert picture(by_columns) == picture(exact)


CPU_FITS = """
filters:
- {name: cpu-fits, expression: "nodeInfo.allocatable.cpu.compareTo(podRequests.cpu) >= 0"}
"""


def test_a_pod_never_seen_before_evaluates_no_node_value_again() -> None:
    from tests.policy.helpers import node, policies, policy
    from tests.policy.helpers import pod as make_pod

    policy_set = policies(policy("p", CPU_FITS))
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace("nodes", [node(n, cpu=c) for n, c in [("a", "1"), ("b", "2"), ("c", "4")]])
    source.replace("pods", [])

    def run(cpu: str) -> Evaluation:
        prepared = prepare(policy_set, make_pod(cpu=cpu), source, NOW)
        return prepared.evaluate(source.node_rows(list("abc")))  # type: ignore[arg-type]

    first, second = run("1500m"), run("3")
    assert first.feasible_names() == ["b", "c"]
    assert second.feasible_names() == ["c"]
    assert first.evaluations == 1 + 3  # the pod's request, each node's allocatable CPU
    assert second.evaluations == 1  # the pod's request only: the nodes' column is kept

    changed = node("b", cpu="8")
    changed["metadata"]["resourceVersion"] = "2"
    source.apply("nodes", "MODIFIED", changed)
    third = run("3")
    assert third.feasible_names() == ["b", "c"]
    assert third.evaluations == 1 + 1  # only the node that changed is read again


# what a binding to node "b" makes the kept columns evaluate again: a value of the Node's
# own (its allocatable, its labels) stays current; what counts the node's pods does not
READ_AGAIN_AFTER_A_BINDING: dict[str, tuple[str, int]] = {
    "allocatable CPU": ("nodeInfo.allocatable.cpu.compareTo(podRequests.cpu) >= 0", 0),
    "allocatable CPU, if present": (
        "!has(nodeInfo.allocatable) || nodeInfo.allocatable.cpu.compareTo(podRequests.cpu) >= 0",
        0,
    ),
    "a label": (
        "node.metadata.?labels.?zone.orValue('') != 'x' || podRequests.cpu.isLessThan(quantity('1m'))",
        0,
    ),
    "free CPU": ("nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0", 1),
    "requested CPU": ("nodeInfo.requested.cpu.compareTo(podRequests.cpu) < 0", 1),
    "the pod count": ("nodeInfo.podCount < int(podRequests.cpu.asApproximateFloat()) + 2", 1),
    "whether free is there": (
        "has(nodeInfo.free) && nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0",
        2,
    ),
    # a variable counts as what it reads (when evaluated again: the variable, then the
    # value that reads it)
    "a variable of the allocatable": ("variables.cpu.compareTo(podRequests.cpu) >= 0", 0),
    "a variable of a label": (
        "variables.zone != 'x' || podRequests.cpu.isLessThan(quantity('1m'))",
        0,
    ),
    "a variable of free CPU": ("variables.free.compareTo(podRequests.cpu) >= 0", 2),
    "a variable of a variable of free CPU": ("variables.spare.compareTo(podRequests.cpu) >= 0", 3),
    # a rule the columns do not take (`startsWith` of a node's and a pod's value): its
    # results kept per node version, or per version of the node's information
    "a rule kept by node, of the allocatable": (
        "node.metadata.name.startsWith(pod.metadata.?labels.?prefix.orValue(''))"
        " && nodeInfo.allocatable.cpu.compareTo(podRequests.cpu) >= 0",
        0,
    ),
    "a rule kept by node, of free CPU": (
        "node.metadata.name.startsWith(pod.metadata.?labels.?prefix.orValue(''))"
        " && nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0",
        1,
    ),
}


@pytest.mark.parametrize("case", list(READ_AGAIN_AFTER_A_BINDING))
def test_a_binding_makes_only_what_counts_the_nodes_pods_be_evaluated_again(case: str) -> None:
    """nodeInfo.allocatable is the Node's own (the same in every version of the node
    information of one Node version): a value reading only it (a kept column, or the
    results of a rule the columns do not take) is kept by the Node's version, and a pod
    bound to the node does not make it be evaluated again; free, requested, the pods, and
    a variable that reads any of them are."""
    from tests.policy.helpers import node, policies, policy
    from tests.policy.helpers import pod as make_pod

    expression, again = READ_AGAIN_AFTER_A_BINDING[case]
    policy_set = policies(
        policy(
            "p",
            "variables:\n"
            "- {name: cpu, expression: nodeInfo.allocatable.cpu}\n"
            "- {name: zone, expression: \"node.metadata.?labels.?zone.orValue('')\"}\n"
            "- {name: free, expression: nodeInfo.free.cpu}\n"
            "- {name: spare, expression: variables.free}\n"
            f'filters:\n- {{name: r, expression: "{expression}"}}\n',
        )
    )
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace("nodes", [node(n, cpu=c) for n, c in [("a", "1"), ("b", "2"), ("c", "4")]])
    source.replace("pods", [])
    pod = make_pod(cpu="1500m")

    def run() -> Evaluation:
        prepared = prepare(policy_set, pod, source, NOW)
        return prepared.evaluate(source.node_rows(list("abc")))  # type: ignore[arg-type]

    first = run()
    steady = run().evaluations  # the pod's side only: nothing changed
    assert steady < first.evaluations
    source.apply("pods", "ADDED", _bound("bound", "b", "1"))
    after = run()
    assert after.evaluations == steady + again
    assert _kept_and_exact(policy_set, pod, source, list("abc")) == (picture(after),) * 2


FREE_CPU_AND_ZONE = """
filters:
- {name: free-cpu, expression: "nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0"}
- {name: not-zone-x, expression: "node.metadata.?labels.?zone.orValue('') != 'x'"}
"""


def _bound(name: str, node_name: str, cpu: str) -> dict[str, Any]:
    from tests.policy.helpers import pod as make_pod

    bound = make_pod(name, cpu=cpu)
    bound["metadata"]["uid"] = name
    bound["metadata"]["resourceVersion"] = "1"
    bound["spec"]["nodeName"] = node_name
    bound["status"] = {"phase": "Running"}
    return bound


def _modified(name: str, version: str, **kwargs: Any) -> dict[str, Any]:
    from tests.policy.helpers import node

    changed = node(name, **kwargs)
    changed["metadata"]["resourceVersion"] = version
    return changed


# what happens to the cluster between two requests naming the same list of nodes
CHANGES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "nothing": ("", "", {}),
    "a node's labels": ("nodes", "MODIFIED", _modified("b", "2", labels={"zone": "x"})),
    "a node's capacity": ("nodes", "MODIFIED", _modified("a", "3", cpu="8")),
    "a pod bound to a node": ("pods", "ADDED", _bound("big", "c", "3500m")),
    "a node removed": ("nodes", "DELETED", _modified("b", "4")),
    "a node of the list added back": ("nodes", "ADDED", _modified("b", "5", cpu="2")),
    "a node outside the list added": ("nodes", "ADDED", _modified("z", "1")),
}


def test_a_node_list_given_again_is_answered_as_afresh_whatever_changed_between() -> None:
    """server/names.py gives the same list object for the same NodeNames: the kept columns
    skip checking its rows while no node of the table changed, and check them again after
    any change (the answer equals the per-node evaluator's)."""
    from tests.policy.helpers import node, policies, policy
    from tests.policy.helpers import pod as make_pod

    policy_set = policies(policy("p", FREE_CPU_AND_ZONE))
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace("nodes", [node(n, cpu=c) for n, c in [("a", "1"), ("b", "2"), ("c", "4")]])
    source.replace("pods", [])
    names = list("abc")  # one list object, given again and again
    pod = make_pod(cpu="750m")

    def by_columns() -> Evaluation:
        rows = source.node_rows(names)
        assert rows is not None
        held = rows.known()
        if not held.all():  # as the verbs do: the names the source does not hold apart
            rows = rows.only(held)
        return prepare(policy_set, pod, source, NOW).evaluate(rows)

    def afresh() -> object:
        rows = source.node_rows(list(names))
        assert rows is not None
        known = [i for i, slot in enumerate(rows.slots.tolist()) if slot >= 0]
        nodes = [rows.record(i).node for i in known]
        ev = prepare(policy_set, pod, source, NOW).evaluate(
            nodes, names=[names[i] for i in known], columns=False
        )
        return ev.feasible_names(), ev.rejected()

    by_columns()
    for change, (kind, event, obj) in CHANGES.items():
        if kind:
            source.apply(kind, event, obj)
        first, again = by_columns(), by_columns()
        expected = afresh()
        for ev in (first, again):
            known = ev.feasible_names(), ev.rejected()
            assert known == expected, change
        assert again.evaluations == 1, f"{change}: nothing read again the second time"


# a node value of each kind a kept column holds (in a filter or a score), and a change of
# node "b" between two calls (new labels, a pod bound to it), which the kept column takes row
# by row; each change changes the answer
def _kept_and_exact(
    policy_set: PolicySet, pod: dict[str, Any], source: ClusterSource, names: list[str]
) -> tuple[object, object]:
    """What an evaluation of the source's rows for the names (a list of its own: its rows
    are checked) says, and what the exact evaluator says of the same nodes."""
    rows = source.node_rows([*names])
    kept = prepare(policy_set, pod, source, NOW).evaluate(rows)  # type: ignore[arg-type]
    nodes = [source.get_node(n) for n in names]
    exact = prepare(policy_set, pod, source, NOW).evaluate(
        nodes,  # type: ignore[arg-type]
        names=names,
        columns=False,
    )
    return picture(kept), picture(exact)


ROW_CHANGES: dict[str, tuple[str, str, dict[str, str], dict[str, str]]] = {
    "a bool": ("filters", "node.metadata.?labels.?zone.orValue('') == 'a'", {}, {"zone": "b"}),
    "a string": (
        "filters",
        "node.metadata.?labels.?zone.orValue('') == pod.metadata.labels.zone",
        {},
        {"zone": "b"},
    ),
    "an int": ("filters", "int(node.metadata.labels.rank) > int(pod.metadata.labels.rank)", {}, {}),
    "an int past 2^53": (
        "filters",
        "int(node.metadata.labels.rank) > int(pod.metadata.labels.big)",
        {"rank": "9007199254740992"},
        {"rank": "9007199254740993"},  # the same double: told apart exactly
    ),
    "a double": ("scores", "double(node.metadata.labels.weight) * 2.0", {}, {"weight": "4.5"}),
    "a NaN": ("scores", "double(node.metadata.labels.weight) * 2.0", {}, {"weight": "nan"}),
    # free CPU 2, then exactly the pod's request: told apart by the quantities themselves
    "a quantity": ("filters", "nodeInfo.free.cpu.compareTo(podRequests.cpu) > 0", {}, {}),
    "an int that becomes an error": (
        "filters",
        "int(node.metadata.labels.rank) > int(pod.metadata.labels.rank)",
        {},
        {"rank": "x"},
    ),
    "an error that becomes an int": (
        "filters",
        "int(node.metadata.labels.rank) > int(pod.metadata.labels.rank)",
        {"rank": "x"},
        {"rank": "9"},
    ),
}


@pytest.mark.parametrize("change", ["its Node", "a pod bound to it"])
@pytest.mark.parametrize("kind", ROW_CHANGES)
def test_a_kept_column_takes_the_new_value_of_a_node_that_changed(kind: str, change: str) -> None:
    """Also once every slot of the table was found current (a request, then two more with
    nothing changed between): a Node changed, or a pod bound (which changes no Node object
    but its node information), is evaluated again all the same."""
    from tests.policy.helpers import node, policies, policy
    from tests.policy.helpers import pod as make_pod

    section, expression, before, after = ROW_CHANGES[kind]
    policy_set = policies(policy("p", f'{section}:\n- {{name: r, expression: "{expression}"}}\n'))
    ranks = {"a": "1", "b": "5", "c": "9"}
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace(
        "nodes",
        [
            node(n, cpu="2", labels={"rank": ranks[n], "weight": "1.5", "zone": "a", **before})
            for n in "abc"
        ],
    )
    source.replace("pods", [])
    names = list("abc")
    pod = make_pod(cpu="1500m", labels={"zone": "a", "rank": "4", "big": "9007199254740992"})

    def answers() -> tuple[object, object]:
        return _kept_and_exact(policy_set, pod, source, names)

    for _ in range(3):
        kept, exact = answers()
        assert kept == exact
    if change == "its Node":
        changed = node("b", cpu="2", labels={"rank": "3", "weight": "1.5", "zone": "a", **after})
        changed["metadata"]["resourceVersion"] = "2"
        source.apply("nodes", "MODIFIED", changed)
    else:
        source.apply("pods", "ADDED", _bound("big", "b", "500m"))
    kept_after, exact_after = answers()
    assert kept_after == exact_after
    # (only the quantity, free CPU, reads the node information)
    if (change == "a pod bound to it") == (kind == "a quantity"):
        assert kept_after != kept, "the change changes the answer"
    else:
        assert kept_after == kept


# -- a quantity tested against a constant, at the edges of its approximation --------------
# node sizes equal to, a billionth away from, or far from the constants below, in other
# formats; a negative one; zero; one past 2^53, whose approximation (a double) is 2^53's
SIZES = [
    "1",
    "1000m",
    "999999999n",
    "1000000001n",
    "0",
    "-1",
    "1e-3",
    "2",
    "1Gi",
    "1073741825",
    "9007199254740993",
]
CONSTANTS = ["1", "1073741824", "0", "-1", "1m", "999999999n", "9007199254740992"]
_OPS = ("==", "!=", "<", "<=", ">", ">=")
ORDER_TESTS = [
    *(f"{{q}}.compareTo({{c}}) {op} {k}" for op in _OPS for k in (-1, 0, 1)),
    *(f"{k} {op} {{c}}.compareTo({{q}})" for op in _OPS for k in (-1, 0, 2)),
    "{q}.isGreaterThan({c})",
    "{q}.isLessThan({c})",
    "{c}.isGreaterThan({q})",
    "{c}.isLessThan({q})",
]


@pytest.mark.parametrize("constant", CONSTANTS)
def test_a_quantity_tested_against_a_constant_is_decided_as_the_exact_evaluator_decides_it(
    monkeypatch: pytest.MonkeyPatch, constant: str
) -> None:
    from tests.policy.helpers import pod as make_pod
    from tests.policy.helpers import policies, policy

    # the node's size against the pod's, from their labels ('bad' fails)
    size = "quantity(node.metadata.?labels[?'size'].orValue('bad'))"
    quantity = "quantity(pod.metadata.?labels[?'size'].orValue('bad'))"
    rules = "".join(
        f'- {{name: t{i}, expression: "{test.format(q=size, c=quantity)}"}}\n'
        for i, test in enumerate(ORDER_TESTS)
    )
    policy_set = policies(policy("p", "filters:\n" + rules))
    roots = [rule.compiled.plan.columns.root for rule in policy_set.policies[0].filters]  # type: ignore[union-attr]
    assert all(getattr(root, "admits", None) is not None for root in roots), "tested as orders"
    source, names = _sized_nodes()
    pod = make_pod(labels={"size": constant})
    by_columns, exact = _kept_and_exact(policy_set, pod, source, names)
    assert by_columns == exact
    # the sizes clearly on one side of the constant are decided by their approximations
    compared = _exact_compares(monkeypatch)
    prepare(policy_set, pod, source, NOW).evaluate(source.node_rows([*names]))  # type: ignore[arg-type]
    assert 0 < len(compared) <= len(_close_to(constant)) * len(ORDER_TESTS)


def _sized_nodes() -> tuple[ClusterSource, list[str]]:
    """A node source fed by hand (no API server) with a node labelled with each of SIZES,
    and one without the label; and their names."""
    from tests.policy.helpers import node

    source = ClusterSource(fake_api())
    names = [f"n{i}" for i in range(len(SIZES) + 1)]
    source.replace(
        "nodes",
        [node(n, labels={"size": size}) for n, size in zip(names, SIZES, strict=False)]
        + [node(names[-1])],
    )
    source.replace("pods", [])
    return source, names


def _close_to(constant: str) -> list[str]:
    """The sizes whose approximations are within a millionth of the constant's: a few
    hundred times the band of those compared exactly."""
    c = Quantity.parse(constant).approximate_float()
    return [s for s in SIZES if abs(Quantity.parse(s).approximate_float() - c) <= abs(c) * 1e-6]


# the order itself, where it is not tested against an int literal: a score of its own (from
# either side), and compared with the pod's int; and a test of it beside them
ORDERS = {
    "scores": ["{q}.compareTo({c})", "{c}.compareTo({q})"],
    "filters": ["{q}.compareTo({c}) == int(pod.metadata.labels.order)", "{q}.compareTo({c}) >= 0"],
}


@pytest.mark.parametrize("constant", CONSTANTS)
def test_a_quantitys_order_against_a_constant_is_the_exact_evaluators(
    monkeypatch: pytest.MonkeyPatch, constant: str
) -> None:
    """As often as the kept columns are asked, and after a node's size became one that
    fails (a row unknown, and no quantity kept for it)."""
    from policyext.policy.columns.quantities import QuantityCompare
    from tests.policy.helpers import pod as make_pod
    from tests.policy.helpers import policies, policy

    size = "quantity(node.metadata.?labels[?'size'].orValue('bad'))"
    quantity = "quantity(pod.metadata.?labels[?'size'].orValue('bad'))"
    spec = {
        kind: [
            {"name": f"{kind[0]}{i}", "expression": order.format(q=size, c=quantity)}
            for i, order in enumerate(orders)
        ]
        for kind, orders in ORDERS.items()
    }
    policy_set = policies(policy("p", json.dumps(spec)))
    (compiled,) = policy_set.policies
    roots = [rule.compiled.plan.columns.root for rule in compiled.scores]  # type: ignore[union-attr]
    assert all(type(root) is QuantityCompare and root.admits is None for root in roots)
    orders = sum(map(len, ORDERS.values()))
    source, names = _sized_nodes()
    pod = make_pod(labels={"size": constant, "order": "1"})
    for _ in range(3):
        by_columns, exact = _kept_and_exact(policy_set, pod, source, names)
        assert by_columns == exact
    # a row whose approximation is clearly on one side of the constant's is decided by it:
    # only the sizes close to the constant are compared exactly, once per order
    compared = _exact_compares(monkeypatch)
    prepare(policy_set, pod, source, NOW).evaluate(source.node_rows([*names]))  # type: ignore[arg-type]
    assert 0 < len(compared) <= len(_close_to(constant)) * orders
    source.apply("nodes", "MODIFIED", _modified("n0", "2", labels={"size": "bad"}))
    by_columns, exact = _kept_and_exact(policy_set, pod, source, names)
    assert by_columns == exact


def _exact_compares(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The quantities compared exactly (`Quantity.compare`) from now on."""
    compared: list[object] = []
    compare = Quantity.compare

    def counted(self: Quantity, other: Quantity) -> int:
        compared.append(self)
        return compare(self, other)

    monkeypatch.setattr(Quantity, "compare", counted)
    return compared


def test_a_value_kept_late_for_an_older_version_is_not_taken_for_the_current_one() -> None:
    """A request that looked before a node changed may write that node's older value after
    later requests found every slot current: the next request checks the rows again."""
    from tests.policy.helpers import node, policies, policy
    from tests.policy.helpers import pod as make_pod

    rule = "node.metadata.?labels.?zone.orValue('') == 'a'"
    policy_set = policies(policy("p", f'filters:\n- {{name: r, expression: "{rule}"}}\n'))
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace("nodes", [node(n, labels={"zone": "a"}) for n in "abc"])
    source.replace("pods", [])
    names, pod = list("abc"), make_pod()

    def kept(rows: Any) -> object:
        return picture(prepare(policy_set, pod, source, NOW).evaluate(rows))

    looked_before = source.node_rows([*names])  # b in zone a
    changed = node("b", labels={"zone": "b"})
    changed["metadata"]["resourceVersion"] = "2"
    source.apply("nodes", "MODIFIED", changed)
    for _ in range(3):  # every slot found current, b's new value kept
        now = kept(source.node_rows([*names]))
    kept(looked_before)  # b's older value written late, by the request that looked before
    assert _kept_and_exact(policy_set, pod, source, names) == (now, now)


# a node value that fails on some node (its label is missing there), under each operator
# that carries what is known of its operands' rows: the failing row stays unknown through
# it, and the exact evaluator decides it
UNKNOWN_THROUGH: dict[str, str] = {
    "a compare with a pod value": "node.metadata.labels.rank == pod.metadata.labels.rank",
    "a compare of two node values": "node.metadata.labels.rank == node.metadata.labels.zone",
    "a negation": "!(node.metadata.labels.rank == pod.metadata.labels.rank)",
    "an and": "node.metadata.labels.zone == 'a' && node.metadata.labels.rank == '4'",
    "an or": "node.metadata.labels.zone == 'b' || node.metadata.labels.rank == '4'",
    "a quantity test": "quantity(node.metadata.labels.size).compareTo(podRequests.cpu) >= 0",
}


@pytest.mark.parametrize("failure_policy", ["Fail", "Ignore"])
@pytest.mark.parametrize("case", UNKNOWN_THROUGH)
def test_a_row_a_node_value_fails_on_stays_unknown_through_every_operator(
    case: str, failure_policy: str
) -> None:
    """Whatever the other rows, and however often the kept columns are asked (each time
    knowing more of them), the failing node is decided as the exact evaluator decides it."""
    from tests.policy.helpers import node, policies, policy
    from tests.policy.helpers import pod as make_pod

    expression = UNKNOWN_THROUGH[case]
    policy_set = policies(
        policy(
            "p",
            f'filters:\n- {{name: r, expression: "{expression}", failurePolicy: {failure_policy}}}\n',
        )
    )
    labels = {
        "a": {"rank": "4", "zone": "a", "size": "2"},
        "b": {"zone": "a"},  # no rank, no size: the node value fails here
        "c": {"rank": "1", "zone": "b", "size": "1"},
    }
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace("nodes", [node(n, cpu="2", labels=labels[n]) for n in "abc"])
    source.replace("pods", [])
    pod = make_pod(cpu="1500m", labels={"rank": "4"})
    for _ in range(3):
        kept, exact = _kept_and_exact(policy_set, pod, source, list("abc"))
        assert kept == exact


# a node value compared with a pod-side part, of each kind the columns compare (`Compare`)
# and across kinds through `dyn`: nodes a (the pod's values, some written otherwise), b
# (others) and c (no labels: the node value fails); (the rule, the nodes that pass, whether
# the columns compare it: else the exact evaluator does, node by node)
_SINCE = ("timestamp(node.metadata.labels.since)", "timestamp(pod.metadata.labels.since)")
_GRACE = ("duration(node.metadata.labels.grace)", "duration(pod.metadata.labels.grace)")
_SPOT = ("dyn(node.metadata.labels.spot == 'true')", "dyn(pod.metadata.labels.spot == 'true')")
_RANK = ("dyn(int(node.metadata.labels.rank))", "dyn(int(pod.metadata.labels.rank))")
COMPARED: dict[str, tuple[str, str, bool]] = {
    # a timestamp or a duration equals only its own kind (its `==` says false to a
    # column): the column's operator compares them row by row, whichever side it is on
    "timestamps equal, the node's first": (f"{_SINCE[0]} == {_SINCE[1]}", "a", True),
    "timestamps unequal, the node's first": (f"{_SINCE[0]} != {_SINCE[1]}", "b", True),
    "timestamps equal, the pod's first": (f"{_SINCE[1]} == {_SINCE[0]}", "a", True),
    "durations equal, written otherwise": (f"{_GRACE[0]} == {_GRACE[1]}", "a", True),
    "durations unequal, the pod's first": (f"{_GRACE[1]} != {_GRACE[0]}", "b", True),
    "durations ordered": (f"{_GRACE[0]} > {_GRACE[1]}", "b", True),
    # CEL orders no bool against a number (an error) and a bool equals no number, where
    # numpy takes true for 1
    "a bool ordered against an int": (f"{_SPOT[0]} < {_RANK[1]}", "", False),
    "an int ordered against a bool": (f"{_RANK[0]} <= {_SPOT[1]}", "", False),
    "a bool equal to an int": (f"{_SPOT[0]} == {_RANK[1]}", "", False),
    "an int unequal to a bool": (f"{_RANK[0]} != {_SPOT[1]}", "ab", False),
    # ints and doubles are equal, and ordered, as numbers: the columns order them
    "an int equal to a double": (
        f"{_RANK[0]} == dyn(double(pod.metadata.labels.rank))",
        "a",
        False,
    ),
    "an int ordered against a double": (
        "int(node.metadata.labels.rank) <= double(pod.metadata.labels.rank)",
        "a",
        True,
    ),
}


@pytest.mark.parametrize("case", list(COMPARED))
def test_a_comparison_of_a_node_value_with_the_pods_answers_as_the_exact_evaluator(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """With the failing node and without it, as often as the kept columns are asked, and
    with the nodes in the request. Once every row is known, the kept values decide a
    comparison the columns make by themselves."""
    from policyext.policy.columns.operators import Compare
    from tests.policy.helpers import node, policies, policy
    from tests.policy.helpers import pod as make_pod

    expression, passing, by_columns = COMPARED[case]
    policy_set = policies(
        policy("p", json.dumps({"filters": [{"name": "r", "expression": expression}]}))
    )
    (rule,) = policy_set.policies[0].filters
    assert type(rule.compiled.plan.columns.root) is Compare  # type: ignore[union-attr]
    labels = {
        "a": {"since": "2030-01-01T00:00:00Z", "grace": "1h", "spot": "true", "rank": "1"},
        "b": {"since": "2031-01-01T00:00:00Z", "grace": "90m", "spot": "false", "rank": "2"},
        "c": {},
    }
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace("nodes", [node(n, labels=labels[n]) for n in "abc"])
    source.replace("pods", [])
    pod = make_pod(
        labels={"since": "2030-01-01T00:00:00Z", "grace": "60m", "spot": "true", "rank": "1"}
    )
    for names in (list("abc"), list("ab")):
        for _ in range(3):
            kept, exact = _kept_and_exact(policy_set, pod, source, names)
            assert kept == exact
    ran = _full_runs(monkeypatch)
    _kept_and_exact(policy_set, pod, source, list("ab"))
    assert (ran == []) is by_columns
    nodes = [source.get_node(n) for n in "abc"]
    in_request = prepare(policy_set, pod, source, NOW).evaluate(nodes)  # type: ignore[arg-type]
    exact_ev = prepare(policy_set, pod, source, NOW).evaluate(nodes, columns=False)  # type: ignore[arg-type]
    assert picture(in_request) == picture(exact_ev)
    assert "".join(exact_ev.feasible_names()) == passing


# a filter per form the kept values decide by themselves: a node-only value, a pod-side
# constant or a node value (either side deciding), a quantity tested against the pod's
KEPT_DECIDE = """
filters:
- {name: ready, expression: "node.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"}
- {name: no-spot-for-critical, expression: "pod.metadata.?labels.?critical.orValue('') != 'true' || node.metadata.?labels.?spot.orValue('') != 'true'"}
- {name: gpu-for-gpu-pods, expression: "!node.metadata.?labels[?'gpu'].hasValue() || 'gpu' in podRequests"}
- {name: cpu-fits, expression: "nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0"}
- {name: not-cordoned, expression: "!node.metadata.?labels[?'cordoned'].hasValue()"}
"""

_DECIDE_NODES = [
    ("a", {"spot": "true"}, "2", True),
    ("b", {"gpu": "1"}, "4", True),
    ("c", {"cordoned": "yes"}, "8", True),
    ("d", {}, "1", False),
    ("e", {}, "16", True),
]


def _kept_decide_source() -> tuple[PolicySet, ClusterSource]:
    from tests.policy.helpers import node, policies, policy

    policy_set = policies(policy("p", KEPT_DECIDE))
    source = ClusterSource(fake_api())  # fed by hand: no API server
    nodes = [node(n, labels=lb, cpu=c, ready=r) for n, lb, c, r in _DECIDE_NODES]
    source.replace("nodes", nodes)
    source.replace("pods", [])
    return policy_set, source


def _full_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The rules `ColumnPlan.run` is called for from now on (by the residual's source)."""
    from policyext.policy import columns

    ran: list[str] = []
    run = columns.ColumnPlan.run

    def counted(self: columns.ColumnPlan, rows: Any, policy: str, params: Any) -> Any:
        ran.append(policy)
        return run(self, rows, policy, params)

    monkeypatch.setattr(columns.ColumnPlan, "run", counted)
    return ran


def _against_the_exact(
    monkeypatch: pytest.MonkeyPatch,
    policy_set: PolicySet,
    source: ClusterSource,
    warm: dict[str, Any],
    change: dict[str, Any] | None,
    pod: dict[str, Any],
) -> tuple[Any, Any, list[str]]:
    """A new pod evaluated over the source's rows after `warm` kept their values (and
    `change` modified a node since: its values are evaluated again, the others still read
    as kept); the per-node evaluator's answer for it; the rules that took the full run."""
    names = source.node_names()
    prepare(policy_set, warm, source, NOW).evaluate(source.node_rows(names))  # type: ignore[arg-type]
    if change is not None:
        source.apply("nodes", "MODIFIED", change)
    ran = _full_runs(monkeypatch)
    fast = prepare(policy_set, pod, source, NOW).evaluate(source.node_rows(names))  # type: ignore[arg-type]
    exact = prepare(policy_set, pod, source, NOW).evaluate(
        [source.get_node(n) for n in names],  # type: ignore[misc]
        columns=False,
    )
    return fast, exact, ran


# pods never seen before, and what changed in the cluster since the values were kept
NEW_PODS = {
    "a pod that fits some nodes": ({}, "1500m", False),
    "a critical pod": ({"critical": "true"}, "3", False),
    "a pod that fits every free node": ({}, "0.5", False),
    "a critical pod that fits no node": ({"critical": "true"}, "20", False),
    "a pod after a node changed": ({"critical": "true"}, "2500m", True),
}


@pytest.mark.parametrize("case", list(NEW_PODS))
def test_a_new_pods_filter_is_decided_by_the_kept_values_alone_and_exactly(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    from tests.policy.helpers import pod as make_pod

    labels, cpu, changed = NEW_PODS[case]
    policy_set, source = _kept_decide_source()
    # a critical pod: every node value is read (for others, `||` stops before the spot label)
    warm = make_pod("warm", labels={"critical": "true"}, cpu="1")
    change = _modified("d", "7", cpu="3", labels={"spot": "true"}) if changed else None
    pod = make_pod("new", labels=labels, cpu=cpu)
    fast, exact, ran = _against_the_exact(monkeypatch, policy_set, source, warm, change, pod)
    assert ran == []  # no rule needed the columns' full run
    assert picture(fast) == picture(exact)
    # the pod's parts (critical, a GPU request, its CPU); a node's values only if it changed
    assert fast.evaluations == (3 + 5 if changed else 3)


_CRITICAL = "pod.metadata.?labels.?critical.orValue('') == 'true'"
_NOT_SPOT = "node.metadata.?labels.?spot.orValue('') != 'true'"

# a filter of one of the shapes answered in one step (ColumnPlan.false_rows), a new pod
# (critical or not, its CPU) and the nodes of _DECIDE_NODES it passes
ONE_STEP = {
    "a node value": (_NOT_SPOT, False, "1", "bcde"),
    "a pod-side part || a node value, the part deciding": (
        f"!({_CRITICAL}) || {_NOT_SPOT}",
        False,
        "1",
        "abcde",
    ),
    "a pod-side part || a node value, the node deciding": (
        f"!({_CRITICAL}) || {_NOT_SPOT}",
        True,
        "1",
        "bcde",
    ),
    "a node value || a pod-side part": (f"{_NOT_SPOT} || !({_CRITICAL})", True, "1", "bcde"),
    "a pod-side part && a node value, the part deciding": (
        f"{_CRITICAL} && {_NOT_SPOT}",
        False,
        "1",
        "",
    ),
    "a pod-side part && a node value, the node deciding": (
        f"{_CRITICAL} && {_NOT_SPOT}",
        True,
        "1",
        "bcde",
    ),
    "a node value && a pod-side part": (f"{_NOT_SPOT} && {_CRITICAL}", False, "1", ""),
    "a quantity test, the node's side first": (
        "nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0",
        False,
        "3",
        "bce",
    ),
    "a quantity test, the pod's side first": (
        "podRequests.cpu.compareTo(nodeInfo.free.cpu) <= 0",
        False,
        "3",
        "bce",
    ),
    "a quantity test that admits the greater side only": (
        "nodeInfo.free.cpu.isGreaterThan(podRequests.cpu)",
        False,
        "5",
        "ce",
    ),
    "a quantity test every node passes": (
        "nodeInfo.free.cpu.compareTo(podRequests.cpu) > 0",
        False,
        "100m",
        "abcde",
    ),
    "a quantity test of the pod's side, that admits the lesser side": (
        "podRequests.cpu.isLessThan(nodeInfo.free.cpu)",
        False,
        "5",
        "ce",
    ),
}


def _decide_nodes() -> list[dict[str, Any]]:
    """The nodes of _DECIDE_NODES, every one Ready (a rule alone does not read that)."""
    from tests.policy.helpers import node

    return [node(n, labels=lb, cpu=c) for n, lb, c, _ in _DECIDE_NODES]


def _one_rule(rule: dict[str, str], nodes: list[dict[str, Any]]) -> tuple[PolicySet, ClusterSource]:
    """A policy of this one rule ({"filters": ...} or {"scores": ...}) over these nodes,
    fed by hand (no API server)."""
    from tests.policy.helpers import policies, policy

    source = ClusterSource(fake_api())
    source.replace("nodes", nodes)
    source.replace("pods", [])
    return policies(policy("p", json.dumps(rule))), source


def _keep_values(policy_set: PolicySet, source: ClusterSource, warm: dict[str, Any]) -> None:
    """The node values the rules read for `warm` kept, and found current for every slot
    after a few calls without a change (_look_at_every_slot)."""
    for _ in range(3):
        prepare(policy_set, warm, source, NOW).evaluate(source.node_rows(source.node_names()))  # type: ignore[arg-type]


@pytest.mark.parametrize("case", list(ONE_STEP))
def test_a_filter_of_a_usual_shape_is_answered_in_one_step_and_exactly(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    from policyext.policy import columns
    from tests.policy.helpers import pod as make_pod

    expression, critical, cpu, passing = ONE_STEP[case]
    policy_set, source = _one_rule(
        {"filters": [{"name": "r", "expression": expression}]}, _decide_nodes()
    )
    # a critical pod makes the rule read its node value, kept for the new pod; its CPU
    # clearly apart from every node's
    warm = make_pod("warm", labels={"critical": "true"}, cpu="1500m")
    _keep_values(policy_set, source, warm)
    walks: list[str] = []
    decided = columns.ColumnPlan.decided

    def walked(self: columns.ColumnPlan, rows: Any, policy: str, params: Any) -> Any:
        walks.append(policy)
        return decided(self, rows, policy, params)

    pod = make_pod("new", labels={"critical": "true"} if critical else None, cpu=cpu)
    monkeypatch.setattr(columns.ColumnPlan, "decided", walked)
    fast, exact, ran = _against_the_exact(monkeypatch, policy_set, source, warm, None, pod)
    assert walks == []  # every call answered in one step
    assert ran == []
    assert picture(fast) == picture(exact)
    assert "".join(fast.feasible_names()) == passing


# a quantity test as an operand of `&&` (not the rule itself, which is answered in one step),
# from the node's side and from the pod's: decided by the kept values alone all the same
_NOT_CORDONED = "!node.metadata.?labels[?'cordoned'].hasValue()"
TESTED_IN_AN_AND = {
    "the node's side first": f"nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0 && {_NOT_CORDONED}",
    "the pod's side first": f"podRequests.cpu.isLessThan(nodeInfo.free.cpu) && {_NOT_CORDONED}",
}


@pytest.mark.parametrize("case", list(TESTED_IN_AN_AND))
def test_a_quantity_test_in_an_and_is_decided_by_the_kept_values_alone_and_exactly(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    from tests.policy.helpers import pod as make_pod

    policy_set, source = _one_rule(
        {"filters": [{"name": "r", "expression": TESTED_IN_AN_AND[case]}]}, _decide_nodes()
    )
    warm = make_pod("warm", cpu="1500m")
    _keep_values(policy_set, source, warm)
    pod = make_pod("new", cpu="3")
    fast, exact, ran = _against_the_exact(monkeypatch, policy_set, source, warm, None, pod)
    assert ran == []  # not the columns' full run
    assert picture(fast) == picture(exact)
    assert "".join(fast.feasible_names()) == "be"  # (c is cordoned)


# the shapes of ONE_STEP whose node value is not of the kind the step reads (a string
# where a bool or a quantity is asked for, read through `dyn`): the step leaves them to
# the walk and the full run, whose answer is the exact evaluator's (an error per node)
NOT_ONE_STEP = {
    "a string where a bool is asked for": (
        f"!({_CRITICAL}) || dyn(node.metadata.?labels.?spot.orValue(''))"
    ),
    "a string where a quantity is asked for": (
        "dyn(node.metadata.?labels.?spot.orValue('')).compareTo(podRequests.cpu) >= 0"
    ),
}


@pytest.mark.parametrize("case", list(NOT_ONE_STEP))
def test_a_usual_shape_over_a_value_of_another_kind_is_answered_exactly(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    from tests.policy.helpers import pod as make_pod

    policy_set, source = _one_rule(
        {"filters": [{"name": "r", "expression": NOT_ONE_STEP[case]}]}, _decide_nodes()
    )
    warm = make_pod("warm", labels={"critical": "true"}, cpu="1500m")
    _keep_values(policy_set, source, warm)
    pod = make_pod("new", labels={"critical": "true"}, cpu="3")
    fast, exact, _ = _against_the_exact(monkeypatch, policy_set, source, warm, None, pod)
    assert picture(fast) == picture(exact)
    assert fast.feasible_names() == []  # (the exact evaluator errs on every node)


# what keeps the kept values from deciding a rule's rows by themselves: the full column run
# then says, and the exact evaluator takes the rows it leaves unknown
UNDECIDED_BY_KEPT = {
    "a pod request in the band of a node's free CPU": ("16", True),
    "a pod whose requests cannot be read": ("lots", True),
    "nodes sent in the request": ("1", False),
}


@pytest.mark.parametrize("case", list(UNDECIDED_BY_KEPT))
def test_rows_the_kept_values_do_not_decide_go_to_the_full_run_and_come_out_exact(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    from tests.policy.helpers import pod as make_pod

    cpu, by_rows = UNDECIDED_BY_KEPT[case]
    policy_set, source = _kept_decide_source()
    names = [n for n, *_ in _DECIDE_NODES]
    nodes = [source.get_node(n) for n in names]
    warm = prepare(policy_set, make_pod("warm", labels={"critical": "true"}, cpu="1"), source, NOW)
    warm.evaluate(source.node_rows(names))  # type: ignore[arg-type]
    ran = _full_runs(monkeypatch)
    pod = make_pod("new", labels={"critical": "true"}, cpu=cpu)
    prepared = prepare(policy_set, pod, source, NOW)
    got = prepared.evaluate(source.node_rows(names) if by_rows else nodes)  # type: ignore[arg-type]
    assert ran  # some rule went the full way
    exact = prepare(policy_set, pod, source, NOW).evaluate(nodes, columns=False)  # type: ignore[arg-type]
    assert picture(got) == picture(exact)


# scores of the forms the kept values decide by themselves: a node-only value (the whole
# expression kept), a node value compared with a pod-side constant under `? :`, a MinMax
KEPT_SCORES = """
scores:
- {name: more-cpu, weight: 3, expression: "nodeInfo.allocatable.cpu.asApproximateFloat() / 2.0"}
- {name: zone, weight: 2, expression: "pod.metadata.?annotations[?'zone'].orValue('') != '' && node.metadata.?labels[?'zone'].orValue('') == pod.metadata.annotations['zone'] ? 10 : 0"}
- {name: on-demand, weight: 1, expression: "node.metadata.?labels.?spot.orValue('') == 'true' ? 0 : 10"}
- {name: most-free, weight: 1, normalize: MinMax, expression: "nodeInfo.free.cpu.asApproximateFloat()"}
"""

_SCORED_NODES = [
    ("a", {"spot": "true", "zone": "z1"}, "2"),
    ("b", {"zone": "z2"}, "4"),
    ("c", {"zone": "z1"}, "8"),
    ("d", {}, "1"),
    ("e", {"zone": "z2"}, "16"),
]

# pods never seen before (their preferred zone), and whether a node changed meanwhile
NEW_PODS_SCORED = {
    "a pod that prefers a zone": ("z1", False),
    "a pod that prefers a zone no node is in": ("z9", False),
    "a pod without a preference": (None, False),
    "a pod after a node changed": ("z2", True),
}


@pytest.mark.parametrize("case", list(NEW_PODS_SCORED))
def test_a_new_pods_scores_are_decided_by_the_kept_values_alone_and_exactly(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    from tests.policy.helpers import node, policies, policy
    from tests.policy.helpers import pod as make_pod

    zone, changed = NEW_PODS_SCORED[case]
    policy_set = policies(policy("p", KEPT_SCORES))
    source = ClusterSource(fake_api())  # fed by hand: no API server
    source.replace("nodes", [node(n, labels=lb, cpu=c) for n, lb, c in _SCORED_NODES])
    source.replace("pods", [])
    warm = make_pod("warm", annotations={"zone": "z1"})
    change = _modified("d", "7", cpu="3", labels={"zone": "z2"}) if changed else None
    pod = make_pod("new", annotations={"zone": zone} if zone else None, cpu="700m")
    fast, exact, ran = _against_the_exact(monkeypatch, policy_set, source, warm, change, pod)
    assert ran == []  # no score needed the columns' full run
    assert picture(fast) == picture(exact)
    assert len({v.score for v in fast.nodes}) > 1, "the scores tell the nodes apart"


_NO_UNTIL = "!node.metadata.?labels[?'until'].hasValue()"
_UNTIL = "now < timestamp(node.metadata.labels['until'])"  # fails on a node without it
_TEAM = "node.metadata.?labels[?'team'].orValue('')"
_OWNS = "pod.metadata.namespace.startsWith(node.metadata.labels['team'])"  # not a column

# `&&` / `||` whose first operands decide every node, before an operand that would fail on
# every node or that the columns do not evaluate (a partial plan): (the rule, whether it is
# a score, the nodes' labels, the nodes that pass or their scores)
PREFIX_DECIDES = {
    "|| true on every node before an operand failing on every node": (
        f"{_NO_UNTIL} || {_UNTIL}",
        False,
        {},
        "abc",
    ),
    "&& false on every node before an operand failing on every node": (
        f"!({_NO_UNTIL}) && {_UNTIL}",
        False,
        {},
        "",
    ),
    "|| true on every node before an operand the columns do not evaluate": (
        f"{_TEAM} == '' || {_OWNS}",
        False,
        {},
        "abc",
    ),
    "&& false on every node before it, in the condition of a score": (
        f"{_TEAM} != '' && {_OWNS} ? 10 : 3",
        True,
        {},
        [3, 3, 3],
    ),
}

# the same rules where the first operands leave some node undecided: the exact evaluator
# answers those; (the rule, whether it is a score, the nodes' labels, whether its plan is
# partial: one of those never takes the columns' full run)
PREFIX_UNDECIDED = {
    "|| false on a node whose next operand fails": (
        f"{_NO_UNTIL} || {_UNTIL}",
        False,
        {"b": {"until": "soon"}},
        False,
    ),
    "|| false on nodes an operand the columns do not evaluate decides": (
        f"{_TEAM} == '' || {_OWNS}",
        False,
        {"a": {"team": "sh"}, "b": {"team": "web"}},
        True,
    ),
    "&& true on nodes where it decides a score's condition": (
        f"{_TEAM} != '' && {_OWNS} ? 10 : 3",
        True,
        {"a": {"team": "sh"}, "c": {"team": "web"}},
        True,
    ),
}


def _prefix_source(
    expression: str, score: bool, labels: dict[str, dict[str, str]]
) -> tuple[PolicySet, ClusterSource, dict[str, Any], dict[str, Any]]:
    """The rule alone, nodes a, b and c with these labels, a pod to keep the values with
    (namespace shop) and a new pod (namespace web)."""
    from tests.policy.helpers import node
    from tests.policy.helpers import pod as make_pod

    kind = "scores" if score else "filters"
    policy_set, source = _one_rule(
        {kind: [{"name": "r", "expression": expression}]},
        [node(n, labels=labels.get(n)) for n in "abc"],
    )
    warm, pod = make_pod("warm", namespace="shop"), make_pod("new", namespace="web")
    return policy_set, source, warm, pod


def _by_node(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What is answered node by node from now on, where the columns may answer (the exact
    evaluator, or its results kept per node version): "filter", "kept results"."""
    from policyext.policy import engine

    asked: list[str] = []
    cached = engine._Run.cached

    def counted(self: Any, plan: Any, params: Any) -> Any:
        if self.columns:
            asked.append("kept results")
        return cached(self, plan, params)

    not_true = engine._not_true

    def filtered(run: Any, policy: str, expr: Any) -> Any:
        if run.columns:
            asked.append("filter")
        return not_true(run, policy, expr)

    monkeypatch.setattr(engine._Run, "cached", counted)
    monkeypatch.setattr(engine, "_not_true", filtered)
    return asked


@pytest.mark.parametrize("case", list(PREFIX_DECIDES))
def test_operands_that_decide_every_node_answer_without_the_operands_after_them(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    expression, score, labels, expected = PREFIX_DECIDES[case]
    policy_set, source, warm, pod = _prefix_source(expression, score, labels)
    _keep_values(policy_set, source, warm)  # (the first operands' values)
    asked = _by_node(monkeypatch)
    fast, exact, ran = _against_the_exact(monkeypatch, policy_set, source, warm, None, pod)
    assert ran == []  # not the columns' full run
    assert asked == []  # nor node by node
    assert picture(fast) == picture(exact)
    if score:
        assert [v.score for v in fast.nodes] == expected
    else:
        assert "".join(fast.feasible_names()) == expected


@pytest.mark.parametrize("case", list(PREFIX_UNDECIDED))
def test_nodes_the_first_operands_leave_undecided_are_answered_exactly(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    expression, score, labels, partial = PREFIX_UNDECIDED[case]
    policy_set, source, warm, pod = _prefix_source(expression, score, labels)
    fast, exact, ran = _against_the_exact(monkeypatch, policy_set, source, warm, None, pod)
    assert picture(fast) == picture(exact)
    (rule,) = (*policy_set.policies[0].filters, *policy_set.policies[0].scores)
    assert rule.compiled.plan.columns.partial is partial
    assert (ran == []) is partial  # a partial plan's undecided rows: the exact evaluator's
