"""One run reports every problem of an expression, each at its position (as cel-go's
Issues): the checker goes on past a problem, and a problem is reported once, not again by
each call around it."""

from __future__ import annotations

import pytest

from policyext import cel
from policyext.cel import CELCheckError

OBJECTS = {"pod": cel.kubernetes_type("pod"), "node": cel.kubernetes_type("node")}


def _problems(source: str) -> list[tuple[int | None, int | None, str]]:
    with pytest.raises(CELCheckError) as raised:
        cel.compile(source, OBJECTS)
    return [(issue.line, issue.column, issue.message) for issue in raised.value.issues]


@pytest.mark.parametrize(
    ("source", "problems"),
    [
        (
            "1 + 'a' == 2 && size(1) > 0",
            [
                (1, 3, "found no matching overload for '_+_' applied to '(int, string)'"),
                (1, 17, "found no matching overload for 'size' applied to '(int)'"),
            ],
        ),
        (
            "node.metadata.?lables.orValue({}) == {} ||\n  has(pod.spec.nodName)",
            [
                (1, 16, "no field 'lables' in ObjectMeta; did you mean 'labels'?"),
                (2, 16, "no field 'nodName' in PodSpec; did you mean 'nodeName'?"),
            ],
        ),
        (
            "nod.metadata.name == 'a' && pod.spec.containers.all(c, c.nme != '')",
            [
                (1, 1, "undeclared reference to 'nod'"),
                (1, 58, "no field 'nme' in Container; did you mean 'name'?"),
            ],
        ),
    ],
)
def test_an_expression_with_two_independent_type_errors_reports_both_with_positions(
    source: str, problems: list[tuple[int, int, str]]
) -> None:
    assert _problems(source) == problems


def test_the_error_raised_is_the_first_problem_found_and_carries_every_one() -> None:
    with pytest.raises(CELCheckError) as raised:
        cel.compile("a\n  + b")
    error = raised.value
    assert str(error) == "1:1: undeclared reference to 'a'"  # as with one problem
    assert [str(issue) for issue in error.issues] == [
        "1:1: undeclared reference to 'a'",
        "2:5: undeclared reference to 'b'",
    ]


@pytest.mark.parametrize(
    "source",
    [
        "size(1 + 'a') > 0",  # the sum is wrong; size of it, and the compare, are not again
        "[1 + 'a', 2].all(x, x > 0)",
        "nod.metadata.labels['zone'] == 'a' ? 1 : 2",
    ],
)
def test_a_problem_is_reported_once_not_again_by_each_call_around_it(source: str) -> None:
    assert len(_problems(source)) == 1


def test_an_expression_with_one_problem_reads_as_before() -> None:
    with pytest.raises(CELCheckError) as raised:
        cel.compile("1 + 'a'")
    assert raised.value.issues == (raised.value,)
    assert (
        str(raised.value) == "1:3: found no matching overload for '_+_' applied to '(int, string)'"
    )
