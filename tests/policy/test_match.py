"""Which policies apply to a pod: every match clause, and conditions that fail."""

from __future__ import annotations

import pytest

from tests.policy.helpers import node, pod, policies, policy, run

FILTER = "filters: [{name: never, expression: 'false', message: rejected}]"


def applies(match: str, the_pod: dict[str, object], failure: str = "Fail") -> bool:
    text = policy("p", f"failurePolicy: {failure}\nmatch: {match}\n{FILTER}")
    result = run(policies(text), the_pod, [node("n1")])
    return result.applied() == ["p"]


@pytest.mark.parametrize(
    ("match", "the_pod", "expected"),
    [
        ("{namespaces: [shop]}", pod(namespace="shop"), True),
        ("{namespaces: [shop]}", pod(namespace="payments"), False),
        ("{excludeNamespaces: [kube-system]}", pod(namespace="kube-system"), False),
        ("{excludeNamespaces: [kube-system]}", pod(namespace="shop"), True),
        ("{namespaces: [shop], excludeNamespaces: [shop]}", pod(namespace="shop"), False),
        ("{podSelector: {}}", pod(), True),
        ("{podSelector: {matchLabels: {tier: web}}}", pod(labels={"tier": "web"}), True),
        ("{podSelector: {matchLabels: {tier: web}}}", pod(labels={"tier": "db"}), False),
        ("{podSelector: {matchLabels: {tier: web}}}", pod(labels={}), False),
        (
            "{podSelector: {matchExpressions: [{key: tier, operator: In, values: [web, api]}]}}",
            pod(labels={"tier": "api"}),
            True,
        ),
        (
            "{podSelector: {matchExpressions: [{key: tier, operator: In, values: [web]}]}}",
            pod(labels={}),
            False,
        ),
        (
            "{podSelector: {matchExpressions: [{key: tier, operator: NotIn, values: [web]}]}}",
            pod(labels={}),
            True,
        ),
        (
            "{podSelector: {matchExpressions: [{key: tier, operator: NotIn, values: [web]}]}}",
            pod(labels={"tier": "web"}),
            False,
        ),
        (
            "{podSelector: {matchExpressions: [{key: gpu, operator: Exists}]}}",
            pod(labels={"gpu": ""}),
            True,
        ),
        (
            "{podSelector: {matchExpressions: [{key: gpu, operator: Exists}]}}",
            pod(labels={}),
            False,
        ),
        (
            "{podSelector: {matchExpressions: [{key: gpu, operator: DoesNotExist}]}}",
            pod(labels={"gpu": "x"}),
            False,
        ),
        (
            "{podSelector: {matchExpressions: [{key: gpu, operator: DoesNotExist}]}}",
            pod(labels={}),
            True,
        ),
        ("{schedulerNames: [policy-scheduler]}", pod(scheduler="policy-scheduler"), True),
        ("{schedulerNames: [policy-scheduler]}", pod(scheduler=None), False),
        ("{schedulerNames: [default-scheduler]}", pod(scheduler=None), True),
        (
            '{conditions: [{name: labelled, expression: "has(pod.metadata.labels.team)"}]}',
            pod(labels={"team": "a"}),
            True,
        ),
        (
            '{conditions: [{name: labelled, expression: "has(pod.metadata.labels.team)"}]}',
            pod(labels={}),
            False,
        ),
    ],
)
def test_a_policy_applies_only_when_every_given_match_clause_holds(
    match: str, the_pod: dict[str, object], expected: bool
) -> None:
    assert applies(match, the_pod) is expected


@pytest.mark.parametrize(("failure", "expected"), [("Fail", True), ("Ignore", False)])
def test_a_match_condition_that_errors_applies_the_policy_only_when_it_fails_closed(
    failure: str, expected: bool
) -> None:
    match = "{conditions: [{name: broken, expression: \"pod.metadata.labels.missing == 'x'\"}]}"
    text = policy("p", f"failurePolicy: {failure}\nmatch: {match}\n{FILTER}")
    result = run(policies(text), pod(labels={}), [node("n1")])
    (m,) = result.matches
    assert m.applies is expected
    assert m.error is not None and "no such key" in m.error
    assert result.errors == 1


def test_match_conditions_cannot_read_the_node() -> None:
    from policyext.policy.model import PolicyError

    match = "{conditions: [{name: nodey, expression: \"node.metadata.name == 'x'\"}]}"
    with pytest.raises(PolicyError) as raised:
        policies(policy("p", f"match: {match}\n{FILTER}"))
    assert "undeclared reference to 'node'" in str(raised.value)


def test_no_match_applies_the_policy_to_every_pod() -> None:
    result = run(policies(policy("p", FILTER)), pod(namespace="anything"), [node("n1")])
    assert result.applied() == ["p"]


TRUE = "{name: holds, expression: 'true'}"
FALSE = "{name: fails, expression: 'false'}"
ERROR = "{name: broken, expression: \"pod.metadata.labels.missing == 'x'\"}"
NOT_BOOL = "{name: text, expression: 'dyn(pod.metadata.namespace)'}"


@pytest.mark.parametrize(
    ("conditions", "failure", "applies", "error"),
    [
        ([TRUE, TRUE], "Fail", True, None),
        ([TRUE, FALSE], "Fail", False, None),
        ([ERROR, FALSE], "Fail", False, None),
        ([FALSE, ERROR], "Fail", False, None),
        ([ERROR, FALSE], "Ignore", False, None),
        ([ERROR, TRUE], "Fail", True, "no such key"),
        ([TRUE, ERROR], "Ignore", False, "no such key"),
        ([NOT_BOOL, TRUE], "Fail", True, "not a bool"),
        ([NOT_BOOL, FALSE], "Ignore", False, None),
        ([NOT_BOOL, ERROR], "Fail", True, "not a bool"),
    ],
    ids=[
        "all true: applies",
        "one false: does not apply",
        "an error before a false: the false decides",
        "an error after a false: the false decides",
        "an error and a false under Ignore: the false decides",
        "an error and no false under Fail: applies",
        "an error and no false under Ignore: skipped",
        "a non-bool is an error: applies under Fail",
        "a non-bool and a false: the false decides",
        "two failures: the first is reported",
    ],
)
def test_match_conditions_behave_as_in_validating_admission_policy(
    conditions: list[str], failure: str, applies: bool, error: str | None
) -> None:
    match = f"{{conditions: [{', '.join(conditions)}]}}"
    text = policy("p", f"failurePolicy: {failure}\nmatch: {match}\n{FILTER}")
    result = run(policies(text), pod(labels={}), [node("n1")])
    (m,) = result.matches
    assert m.applies is applies
    if error is None:
        assert m.error is None
        assert result.errors == 0
    else:
        assert m.error is not None and error in m.error
        assert result.errors == 1


def test_each_match_condition_has_a_cost_budget_of_its_own() -> None:
    # each costs 600,000 of the budget of 1,000,000 (a tenth of the string's length)
    conditions = [
        f"{{name: c{i}, expression: \"!pod.metadata.annotations.big.contains('y')\"}}"
        for i in range(2)
    ]
    match = f"{{conditions: [{', '.join(conditions)}]}}"
    text = policy("p", f"failurePolicy: Ignore\nmatch: {match}\n{FILTER}")
    result = run(policies(text), pod(annotations={"big": "x" * 6_000_000}), [node("n1")])
    (m,) = result.matches
    assert (m.applies, m.error) == (True, None)
