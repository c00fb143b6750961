"""The engine's semantics, rule by rule of policy-format.md."""

from __future__ import annotations

import pytest

from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import PolicySet
from tests.policy.helpers import node, pod, policies, policy, run

NODES = [
    node("small", labels={"size": "s", "lifecycle": "spot"}, cpu="2"),
    node("medium", labels={"size": "m"}, cpu="8"),
    node("large", labels={"size": "l"}, cpu="16"),
]


def filter_policy(rule: str, name: str = "p", extra: str = "") -> str:
    return policy(name, f"{extra}\nfilters:\n- {rule}")


@pytest.mark.parametrize(
    ("rule", "feasible", "message"),
    [
        ("{name: all, expression: 'true'}", ["small", "medium", "large"], None),
        ("{name: none, expression: 'false', message: no room}", [], "no room"),
        (
            "{name: no-spot, expression: \"node.metadata.labels.?lifecycle.orValue('') != 'spot'\","
            " message: critical pods avoid spot nodes}",
            ["medium", "large"],
            "critical pods avoid spot nodes",
        ),
        ("{name: none, expression: 'false'}", [], "p/none"),
        (
            "{name: none, expression: 'false', messageExpression: \"'size ' + node.metadata.labels.size\"}",
            [],
            "size s",
        ),
        (
            "{name: none, expression: 'false', messageExpression: 'node.metadata.labels.missing'}",
            [],
            "p/none",
        ),
    ],
)
def test_a_filter_keeps_the_nodes_it_yields_true_for_and_rejects_the_rest_with_its_message(
    rule: str, feasible: list[str], message: str | None
) -> None:
    result = run(policies(filter_policy(rule)), pod(), NODES)
    assert [v.name for v in result.feasible()] == feasible
    rejected = [v for v in result.nodes if not v.feasible]
    if message is not None:
        assert rejected and rejected[0].message() == message


@pytest.mark.parametrize(
    ("failure_policy", "feasible", "skipped"),
    [("Fail", [], 0), ("Ignore", ["small", "medium", "large"], 3)],
)
def test_a_filter_that_fails_to_evaluate_rejects_under_fail_and_is_skipped_under_ignore(
    failure_policy: str, feasible: list[str], skipped: int
) -> None:
    rule = f"{{name: broken, expression: 'node.metadata.labels.absent == \"x\"', failurePolicy: {failure_policy}}}"
    result = run(policies(filter_policy(rule)), pod(), NODES)
    assert [v.name for v in result.feasible()] == feasible
    assert sum(len(v.skipped) for v in result.nodes) == skipped
    assert result.errors == 3
    if failure_policy == "Fail":
        rejection = result.nodes[0].rejections[0]
        assert rejection.message == "p/broken could not be evaluated"
        assert rejection.error is not None and "no such key: absent" in rejection.error


def test_the_policy_failure_policy_is_the_default_of_its_filters() -> None:
    rule = "{name: broken, expression: 'node.metadata.labels.absent == \"x\"'}"
    result = run(policies(filter_policy(rule, extra="failurePolicy: Ignore")), pod(), NODES)
    assert len(result.feasible()) == 3


def test_a_filter_that_yields_a_non_bool_at_run_time_is_an_evaluation_error() -> None:
    rule = "{name: dyn, expression: 'dyn(node.metadata.labels.size)'}"
    result = run(policies(filter_policy(rule)), pod(), NODES)
    assert result.feasible() == []
    assert "must yield a bool" in (result.nodes[0].rejections[0].error or "")


def test_an_audit_filter_records_would_be_rejections_but_never_rejects() -> None:
    rule = "{name: no-spot, mode: Audit, expression: \"node.metadata.labels.?lifecycle.orValue('') != 'spot'\"}"
    result = run(policies(filter_policy(rule)), pod(), NODES)
    assert len(result.feasible()) == 3
    assert [r.rule_id for r in result.nodes[0].audits] == ["p/no-spot"]
    assert not result.nodes[1].audits


@pytest.mark.parametrize(
    ("mode", "failure_policy", "feasible", "where"),
    [
        ("Enforce", "Fail", False, "rejections"),
        ("Enforce", "Ignore", True, "skipped"),
        ("Audit", "Fail", True, "audits"),
        ("Audit", "Ignore", True, "audits"),
    ],
)
def test_a_filter_error_is_a_rejection_an_ignored_error_or_an_audit_would_be_rejection(
    mode: str, failure_policy: str, feasible: bool, where: str
) -> None:
    rule = (
        f"{{name: broken, mode: {mode}, failurePolicy: {failure_policy},"
        " expression: 'node.metadata.labels.absent == \"x\"'}"
    )
    result = run(policies(filter_policy(rule)), pod(), NODES[:1])
    verdict = result.nodes[0]
    assert verdict.feasible is feasible
    found = {
        kind: [(r.rule_id, r.message) for r in getattr(verdict, kind)]
        for kind in ("rejections", "skipped", "audits")
    }
    expected = {kind: [] for kind in found}
    expected[where] = [("p/broken", "p/broken could not be evaluated")]
    assert found == expected
    assert result.tally().errors == {("p", "broken"): 1}


def test_an_unresolvable_filter_marks_the_nodes_it_rejects_unresolvable() -> None:
    rule = "{name: big, unresolvable: true, expression: \"node.metadata.labels.size == 'l'\"}"
    result = run(policies(filter_policy(rule)), pod(), NODES)
    assert [v.unresolvable for v in result.nodes] == [True, True, False]


def test_every_failing_rule_of_every_policy_is_reported_in_name_order() -> None:
    a = filter_policy("{name: one, expression: 'false', message: first}", name="b-policy")
    b = filter_policy("{name: two, expression: 'false', message: second}", name="a-policy")
    result = run(policies(a, b), pod(), NODES[:1])
    assert [r.rule_id for r in result.nodes[0].rejections] == ["a-policy/two", "b-policy/one"]


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ({"p": ["{name: a, expression: 'false', message: one}"]}, "one"),
        (
            {
                "p": [
                    "{name: a, expression: 'false', message: one}",
                    "{name: b, expression: 'false'}",
                ]
            },
            "one; p/b",
        ),
        (
            {
                "z": ["{name: a, expression: 'false', message: last}"],
                "m": ["{name: a, expression: 'false', message: middle}"],
                "b": ["{name: a, expression: 'false', message: first}"],
            },
            "first; middle; last",
        ),
        (
            {
                "b": ["{name: a, expression: 'false', message: same}"],
                "a": [
                    "{name: x, expression: 'false', message: same}",
                    "{name: y, expression: 'false', message: other}",
                ],
            },
            "same; other",
        ),
        (
            {
                "p": [
                    "{name: a, expression: 'false', message: kept}",
                    "{name: audit, mode: Audit, expression: 'false', message: audit}",
                    "{name: ignored, failurePolicy: Ignore, expression: 'int(node.metadata.labels.x) == 1'}",
                    "{name: failed, expression: 'int(node.metadata.labels.x) == 1'}",
                    "{name: why, expression: 'false', messageExpression: \"'on ' + 'every node'\"}",
                ]
            },
            "kept; p/failed could not be evaluated; on every node",
        ),
    ],
    ids=[
        "one rule",
        "two rules of a policy, in file order",
        "policies in name order",
        "a message given twice is kept once",
        "Audit rules and ignored errors are not rejections",
    ],
)
def test_a_node_s_message_names_every_rule_that_rejected_it(
    rules: dict[str, list[str]], message: str
) -> None:
    texts = [
        policy(name, "filters:\n" + "".join(f"- {r}\n" for r in rs)) for name, rs in rules.items()
    ]
    result = run(policies(*texts), pod(), NODES[:1])
    assert result.nodes[0].message() == message


def score_policy(rules: str, name: str = "s") -> str:
    return policy(name, f"scores:\n{rules}")


@pytest.mark.parametrize(
    ("rule", "scores"),
    [
        # Clamp (the default) keeps values inside [0, 10]
        (
            "- {name: cores, expression: \"double(node.metadata.labels.size == 'l' ? 20 : 5)\"}",
            [5, 5, 10],
        ),
        ("- {name: negative, expression: '-3'}", [0, 0, 0]),
        # MinMax rescales this request's values linearly onto [0, 10]
        (
            '- {name: cpu, normalize: MinMax, expression: "nodeInfo.allocatable.cpu.asApproximateFloat()"}',
            [0, 4, 10],
        ),
        ("- {name: same, normalize: MinMax, expression: '7'}", [0, 0, 0]),
        # a score that errors counts as 0 for that node
        (
            "- {name: broken, expression: \"node.metadata.labels.lifecycle == 'spot' ? 10 : 4\"}",
            [10, 0, 0],
        ),
    ],
)
def test_scores_are_clamped_or_rescaled_into_0_to_10_and_errors_score_0(
    rule: str, scores: list[int]
) -> None:
    result = run(policies(score_policy(rule)), pod(), NODES)
    assert [v.score for v in result.nodes] == scores


INF = "(1e308 * 10.0)"  # CEL doubles overflow to infinity, as in Go


@pytest.mark.parametrize(
    ("normalize", "values", "normalised", "scores"),
    [
        ("Clamp", ["-0.5", "0.5", "12.0"], [0.0, 0.5, 10.0], [0, 1, 10]),
        ("Clamp", ["0.0", "10.0", "9.99"], [0.0, 10.0, 9.99], [0, 10, 10]),
        ("MinMax", ["-1.0", "0.0", "3.0"], [0.0, 2.5, 10.0], [0, 3, 10]),
        ("Clamp", [INF, "0.5", "-0.5"], [0.0, 0.5, 0.0], [0, 1, 0]),
        ("MinMax", [INF, "1.0", "3.0"], [0.0, 0.0, 10.0], [0, 0, 10]),
        ("MinMax", [INF, "-1.7e308", "1.7e308"], [0.0, 0.0, 10.0], [0, 0, 10]),
    ],
    ids=[
        "Clamp below 0, between 0 and 1, above 10",
        "Clamp at the bounds",
        "MinMax",
        "Clamp: a value that is not a finite number scores 0",
        "MinMax: a value that is not a finite number scores 0, the others are rescaled",
        "MinMax over more than the largest double: one not a finite number scores 0",
    ],
)
def test_each_rule_s_normalised_score_is_shown_and_the_final_score_rounds_it(
    normalize: str, values: list[str], normalised: list[float], scores: list[int]
) -> None:
    table = ", ".join(f"'{n['metadata']['name']}': {v}" for n, v in zip(NODES, values, strict=True))
    rule = f'- {{name: v, normalize: {normalize}, expression: "{{{table}}}[node.metadata.name]"}}'
    result = run(policies(score_policy(rule)), pod(), NODES)
    assert [v.scores[0].score for v in result.nodes] == normalised
    assert [v.score for v in result.nodes] == scores


@pytest.mark.parametrize(
    ("normalize", "values", "scores", "errors"),
    [
        ("MinMax", ["-1.7e308", "0.0", "1.7e308"], [0, 5, 10], 0),
        ("MinMax", ["-1.7e308", "-1.7e308", "1.7e308"], [0, 0, 10], 0),
        ("MinMax", ["1.7e308", "1.0", "1.6e308"], [10, 0, 9], 0),
        ("MinMax", [f"-{INF}", "1.0", INF], [0, 0, 0], 2),
        ("MinMax", [INF, "1.0", "3.0"], [0, 0, 10], 1),
        ("MinMax", [f"{INF} - {INF}", "1.0", "3.0"], [0, 0, 10], 1),
        ("Clamp", [INF, "4.0", f"-{INF}"], [0, 4, 0], 2),
        ("Clamp", ["1.7e308", "4.0", "-1.7e308"], [10, 4, 0], 0),
    ],
    ids=[
        "MinMax over the whole range of doubles",
        "MinMax with the lowest value twice",
        "MinMax with huge values only",
        "MinMax: the infinities are errors, the other node is alone",
        "MinMax: an infinity is an error, the others are rescaled among themselves",
        "MinMax: NaN is an error",
        "Clamp: the infinities are errors",
        "Clamp: huge finite values are clamped",
    ],
)
def test_a_score_is_a_finite_number_and_minmax_rescales_without_overflow(
    normalize: str, values: list[str], scores: list[int], errors: int
) -> None:
    table = ", ".join(f"'{n['metadata']['name']}': {v}" for n, v in zip(NODES, values, strict=True))
    rule = f'- {{name: v, normalize: {normalize}, expression: "{{{table}}}[node.metadata.name]"}}'
    result = run(policies(score_policy(rule)), pod(), NODES)
    assert [v.score for v in result.nodes] == scores
    assert result.score_errors == ({("s", "v"): errors} if errors else {})
    failed = [s.error for v in result.nodes for s in v.scores if s.error is not None]
    assert len(failed) == errors
    # explain shows no value for a rule that failed on a node, the value for the others
    assert all((s.value is None) is (s.error is not None) for v in result.nodes for s in v.scores)
    assert all(e.startswith("a score must be a finite number, got ") for e in failed)


def test_the_final_score_is_the_weighted_mean_of_every_applicable_policys_scores() -> None:
    a = score_policy("- {name: ten, weight: 3, expression: '10'}", name="a")
    b = score_policy("- {name: two, weight: 1, expression: '2'}", name="b")
    audit = score_policy("- {name: ignored, weight: 50, mode: Audit, expression: '0'}", name="c")
    result = run(policies(a, b, audit), pod(), NODES[:1])
    # floor((3*10 + 1*2) / 4 + 0.5) = floor(8.5) = 8; the Audit rule is shown, not counted
    assert result.nodes[0].score == 8
    assert [s.rule for s in result.nodes[0].scores] == ["ten", "two", "ignored"]


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ("- {name: r, expression: '4.5'}", 5),
        ("- {name: r, expression: '4.49'}", 4),
        ("- {name: r, expression: '9.5'}", 10),
        ("- {name: r, expression: '0.49'}", 0),
        ("- {name: a, weight: 3, expression: '3'}\n- {name: b, weight: 1, expression: '5'}", 4),
        ("- {name: a, weight: 2, expression: '2'}\n- {name: b, weight: 2, expression: '7'}", 5),
    ],
    ids=["4.5 up", "4.49 down", "9.5 up", "0.49 down", "3.5 up", "4.5 up, weighted"],
)
def test_the_final_score_is_the_weighted_mean_rounded_half_up(rules: str, expected: int) -> None:
    result = run(policies(score_policy(rules)), pod(), NODES[:1])
    assert result.nodes[0].score == expected


def test_with_no_score_rule_every_node_scores_0() -> None:
    result = run(policies(filter_policy("{name: t, expression: 'true'}")), pod(), NODES)
    assert [v.score for v in result.nodes] == [0, 0, 0]


def test_only_feasible_nodes_are_scored_when_filtering_and_scoring_together() -> None:
    text = policy(
        "p",
        """
        filters: [{name: no-small, expression: "node.metadata.labels.size != 's'"}]
        scores: [{name: cpu, normalize: MinMax, expression: "nodeInfo.allocatable.cpu.asApproximateFloat()"}]
        """,
    )
    result = run(policies(text), pod(), NODES)
    assert [(v.name, v.score) for v in result.nodes] == [
        ("small", None),
        ("medium", 0),
        ("large", 10),
    ]
    assert result.best() is not None and result.best().name == "large"  # type: ignore[union-attr]


VARIABLES = """
variables:
- {name: size, expression: "node.metadata.labels.size"}
- {name: team, expression: "pod.metadata.namespace"}
- {name: unused, expression: "node.metadata.name + '!'"}
filters:
- {name: one, expression: "variables.size != 'x' && variables.team != ''"}
- {name: two, expression: "variables.size != 'y' && variables.team != ''"}
"""


def test_variables_are_evaluated_lazily_once_per_node_and_pod_only_ones_once_per_request() -> None:
    result = run(policies(policy("v", VARIABLES)), pod(), NODES)
    assert len(result.feasible()) == 3
    # per node: each filter's node side and `size` once; per request: each filter's pod side
    # (`variables.team != ''`) and `team` once; `unused` never
    assert result.evaluations == 3 * (2 + 1) + 2 + 1


def test_a_variable_that_fails_fails_each_rule_that_reads_it() -> None:
    text = policy(
        "v",
        """
        variables: [{name: gone, expression: "node.metadata.labels.gone"}]
        filters:
        - {name: one, expression: "variables.gone == 'a'"}
        - {name: two, expression: "variables.gone == 'b'", failurePolicy: Ignore}
        """,
    )
    # counted by the per-node evaluator (the column evaluator counts its node values too)
    result = run(policies(text), pod(), NODES[:1], columns=False)
    verdict = result.nodes[0]
    assert [r.rule_id for r in verdict.rejections] == ["v/one"]
    assert [r.rule_id for r in verdict.skipped] == ["v/two"]
    assert result.evaluations == 3  # the variable is evaluated once, its failure reused


def test_a_pod_only_filter_is_evaluated_once_per_request() -> None:
    text = filter_policy("{name: pod-only, expression: \"pod.metadata.namespace == 'shop'\"}")
    result = run(policies(text), pod(), NODES)
    assert len(result.feasible()) == 3
    assert result.evaluations == 1


@pytest.mark.parametrize("field", ["requested", "free", "podCount", "pods"])
def test_node_info_without_a_pod_source_is_a_clear_error_never_zero(field: str) -> None:
    rule = (
        f"{{name: uses, expression: 'has(nodeInfo.allocatable) && size([nodeInfo.{field}]) == 1'}}"
    )
    result = run(policies(filter_policy(rule)), pod(), NODES[:1])
    error = result.nodes[0].rejections[0].error or ""
    assert f"nodeInfo.{field} needs the pods of the cluster" in error


def test_node_info_from_a_snapshot_counts_the_pods_bound_to_each_node() -> None:
    bound = pod(name="db", cpu="1500m")
    bound["spec"]["nodeName"] = "medium"
    finished = pod(name="job", cpu="4")
    finished["spec"]["nodeName"] = "medium"
    finished["status"] = {"phase": "Succeeded"}
    source = SnapshotSource(
        [{"kind": "Node", **n} for n in NODES]
        + [{"kind": "Pod", **bound}, {"kind": "Pod", **finished}]
    )
    text = filter_policy(
        "{name: fits, expression: \"nodeInfo.free.cpu.compareTo(quantity('7')) < 0"
        " && nodeInfo.podCount == 1 && nodeInfo.pods[0].name == 'db'\"}"
    )
    result = run(policies(text), pod(), [source.nodes["medium"]], source)
    assert [v.name for v in result.feasible()] == ["medium"]


def test_pod_requests_are_the_effective_requests_of_the_pod() -> None:
    text = filter_policy(
        "{name: req, expression: \"podRequests.cpu == quantity('500m') && podRequests.memory == quantity('0')\"}"
    )
    result = run(policies(text), pod(cpu="500m"), NODES[:1])
    assert result.feasible() != []


def test_a_pod_only_variable_may_read_another_pod_only_variable() -> None:
    text = policy(
        "v",
        """
        variables:
        - {name: ns, expression: "pod.metadata.namespace"}
        - {name: nsx, expression: "variables.ns + '-x'"}
        filters: [{name: f, expression: "variables.nsx == 'shop-x'"}]
        """,
    )
    result = run(policies(text), pod(namespace="shop"), NODES)
    assert len(result.feasible()) == 3
    assert result.evaluations == 3  # nsx and ns once for the request, the filter once


MIXED = filter_policy(
    "{name: no-spot, expression: \"pod.metadata.labels.?critical.orValue('') != 'true'"
    " || node.metadata.labels.?lifecycle.orValue('') != 'spot'\"}"
)


def cached_run(
    policy_set: object, the_pod: dict[str, object], source: SnapshotSource, columns: bool = True
) -> object:
    from policyext.policy.engine import evaluate
    from tests.policy.helpers import NOW

    nodes = list(source.nodes.values())
    return evaluate(policy_set, the_pod, nodes, source, NOW, cache_nodes=True, columns=columns)  # type: ignore[arg-type]


def snapshot_of(nodes: list[dict[str, object]]) -> SnapshotSource:
    return SnapshotSource([{"kind": "Node", **n} for n in nodes])


def test_a_node_result_is_cached_per_pod_side_value_and_node_version() -> None:
    policy_set = policies(MIXED)
    source = snapshot_of(NODES)
    critical = pod(labels={"critical": "true"})
    first = cached_run(policy_set, critical, source)
    again = cached_run(policy_set, critical, source)
    relaxed = cached_run(policy_set, pod(labels={}), source)
    assert [v.name for v in first.feasible()] == ["medium", "large"]  # type: ignore[attr-defined]
    assert [v.name for v in again.feasible()] == ["medium", "large"]  # type: ignore[attr-defined]
    assert first.evaluations == 1 + 3  # type: ignore[attr-defined]  # the pod side, each node
    assert again.evaluations == 1  # type: ignore[attr-defined]  # the pod side only
    # another value of the pod side is another cache entry, not the critical pod's answer
    assert len(relaxed.feasible()) == 3  # type: ignore[attr-defined]


SIZE_FOR_NAMESPACE = filter_policy(
    "{name: sized, expression: 'variables.fits'}",
    extra="""
variables:
- {name: wanted, expression: "pod.metadata.namespace == 'big' ? 'l' : 'm'"}
- {name: size, expression: "node.metadata.labels.?size.orValue('')"}
- {name: fits, expression: "variables.size == variables.wanted"}
""",
)


@pytest.mark.parametrize(
    ("namespace", "feasible"), [("big", ["large"]), ("small", ["medium"])], ids=["big", "small"]
)
def test_a_rule_reading_a_variable_of_pod_and_node_is_cached_by_what_the_variable_reads(
    namespace: str, feasible: list[str]
) -> None:
    policy_set = policies(SIZE_FOR_NAMESPACE)
    source = snapshot_of(NODES)
    first = cached_run(policy_set, pod(namespace=namespace), source)
    again = cached_run(policy_set, pod("other", namespace=namespace), source)
    other = cached_run(policy_set, pod(namespace="elsewhere"), source)
    assert [v.name for v in first.feasible()] == feasible  # type: ignore[attr-defined]
    assert [v.name for v in again.feasible()] == feasible  # type: ignore[attr-defined]
    # the pod side once per request (`wanted`); the nodes only the first time
    assert again.evaluations < first.evaluations  # type: ignore[attr-defined]
    assert [v.name for v in other.feasible()] == ["medium"]  # type: ignore[attr-defined]


def test_a_rule_reading_the_time_with_the_node_is_evaluated_on_every_node_each_time() -> None:
    """Results keyed by the request's time would never be asked for again: not kept."""
    text = filter_policy(
        '{name: before, expression: "now < timestamp(node.metadata.labels.?until.orValue('
        "'2100-01-01T00:00:00Z'))\"}"
    )
    policy_set = policies(text)
    source = snapshot_of(NODES)
    first = cached_run(policy_set, pod(), source, columns=False)
    again = cached_run(policy_set, pod(), source, columns=False)
    assert first.evaluations == again.evaluations == 1 + 3  # type: ignore[attr-defined]
    rule = policy_set.policies[0].filters[0].compiled
    assert rule.plan is not None and not rule.plan.cacheable
    assert not rule.plan.cache.by_params


def test_a_node_with_a_new_resource_version_is_evaluated_again() -> None:
    policy_set = policies(MIXED)
    critical = pod(labels={"critical": "true"})
    cached_run(policy_set, critical, snapshot_of(NODES))
    changed = [dict(n) for n in NODES]
    changed[0] = node("small", labels={"size": "s", "lifecycle": "on-demand"}, cpu="2")
    changed[0]["metadata"]["resourceVersion"] = "2"  # type: ignore[index]
    result = cached_run(policy_set, critical, snapshot_of(changed))
    assert [v.name for v in result.feasible()] == ["small", "medium", "large"]  # type: ignore[attr-defined]


def test_a_pod_side_part_that_errors_falls_back_to_evaluating_the_whole_rule() -> None:
    text = filter_policy(
        "{name: r, expression: \"pod.metadata.labels.missing == 'x' || node.metadata.labels.size == 'l'\"}"
    )
    result = cached_run(policies(text), pod(labels={}), snapshot_of(NODES))
    # the error on the pod side is absorbed by `||` where the node side is true
    assert [v.name for v in result.feasible()] == ["large"]  # type: ignore[attr-defined]
    assert "no such key: missing" in (result.nodes[0].rejections[0].error or "")  # type: ignore[attr-defined]


def test_node_info_results_are_cached_per_node_information_generation() -> None:
    text = filter_policy(
        '{name: cpu, expression: "nodeInfo.allocatable.cpu.compareTo(podRequests.cpu) >= 0"}'
    )
    policy_set = policies(text)
    source = snapshot_of(NODES)
    small_pod = cached_run(policy_set, pod(cpu="1"), source)
    big_pod = cached_run(policy_set, pod(cpu="10"), source)
    assert len(small_pod.feasible()) == 3  # type: ignore[attr-defined]
    assert [v.name for v in big_pod.feasible()] == ["large"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("one", "other", "labels"),
    [("1", "dyn(true)", {"x": "y"}), ("0", "dyn(false)", {})],
    ids=["one and true", "zero and false"],
)
def test_pod_side_values_equal_in_python_but_not_in_cel_are_cached_apart(
    one: str, other: str, labels: dict[str, str]
) -> None:
    text = filter_policy(
        '{name: typed, expression: "node.metadata.labels.size() == ('
        f"pod.metadata.labels.?kind.orValue('') == 'a' ? {one} : {other})\"}}"
    )
    the_node = node("n")
    the_node["metadata"]["labels"] = labels  # type: ignore[index]

    def feasible(policy_set: PolicySet, kind: str) -> list[str]:
        result = cached_run(policy_set, pod(labels={"kind": kind}), snapshot_of([the_node]))
        return [v.name for v in result.feasible()]  # type: ignore[attr-defined]

    fresh = [feasible(policies(text), kind) for kind in ("a", "b")]  # a cache each
    shared = policies(text)
    assert [feasible(shared, kind) for kind in ("a", "b")] == fresh == [["n"], []]
