"""List functions: Kubernetes' list library and cel-go's list extension."""

from __future__ import annotations

import math

import pytest

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import merge_libraries
from policyext.cel.lib.lists import LISTS_LIBRARY, MAX_RANGE_SIZE, traversal_cost
from policyext.cel.values import (
    INT64_MAX,
    OPTIONAL_NONE,
    UINT64_MAX,
    Duration,
    Optional,
    Timestamp,
    UInt,
)
from tests.cel.same import same

TABLE = merge_libraries([LISTS_LIBRARY])
NAN = math.nan


def member(name: str, target: object, *args: object) -> object:
    """`target.name(args)`: the overload is chosen by the target's type, as the engine does."""
    table = TABLE.find_member(name, len(args))
    if table is None or type(target) not in table.by_type:
        raise LookupError(f"no member {name}/{len(args)} for {type(target).__name__}")
    return table.by_type[type(target)].impl(target, *args)


def member_cost(name: str, target: object, *args: object) -> int:
    table = TABLE.find_member(name, len(args))
    assert table is not None
    cost = table.by_type[type(target)].cost
    assert cost is not None
    return cost(target, *args)


def d(seconds: int) -> Duration:
    return Duration(seconds * 1_000_000_000)


def t(seconds: int) -> Timestamp:
    return Timestamp(seconds * 1_000_000_000)


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], True),
        ([1], True),
        ([1, 2, 2, 3], True),
        ([3, 2], False),
        (["a", "b", "b", "c"], True),
        (["b", "a"], False),
        ([2.0, 1.0], False),
        ([1, 1.5, UInt(2)], True),
        ([UInt(2), 1.5], False),
        ([False, True], True),
        ([True, False], False),
        ([b"a", b"b"], True),
        ([d(1), d(2)], True),
        ([t(2), t(1)], False),
        ((1, 2), True),
    ],
)
def test_is_sorted_compares_neighbours(items: list[object], expected: bool) -> None:
    assert member("isSorted", items) is expected


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], 0),
        ([1, 3], 4),
        ([UInt(1), UInt(3)], UInt(4)),
        ([1.0, 3.5], 4.5),
        ([d(60), d(1)], d(61)),
        ([INT64_MAX, 1, -1], None),
    ],
)
def test_sum_adds_elements_of_one_type(items: list[object], expected: object) -> None:
    if expected is None:
        with pytest.raises(CELEvalError, match="overflow"):
            member("sum", items)
        return
    result = member("sum", items)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    "items",
    [
        [1, 2.0],
        [1, UInt(2)],
        ["a", "b"],
        [True],
        [[1]],
    ],
)
def test_sum_of_mixed_or_non_numeric_elements_has_no_overload(items: list[object]) -> None:
    with pytest.raises(CELEvalError, match="no such overload"):
        member("sum", items)


def test_sum_of_uints_past_the_uint_range_overflows() -> None:
    with pytest.raises(CELEvalError, match="overflow"):
        member("sum", [UInt(UINT64_MAX), UInt(1)])


@pytest.mark.parametrize(
    ("name", "items", "expected"),
    [
        ("min", [1, 3], 1),
        ("max", [1, 3], 3),
        ("min", [1], 1),
        ("max", ["b", "c", "a"], "c"),
        ("min", [2, 1.5, UInt(3)], 1.5),
        ("max", [2, 1.5, UInt(3)], UInt(3)),
        ("min", [d(2), d(1)], d(1)),
        ("max", [t(2), t(1)], t(2)),
        ("max", [b"a", b"b"], b"b"),
        ("min", [True, False], False),
        # ties keep the first element
        ("min", [1, 1.0], 1),
        ("max", [1.0, 1], 1.0),
    ],
)
def test_min_and_max_pick_the_extreme_element(
    name: str, items: list[object], expected: object
) -> None:
    result = member(name, items)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("name", "items", "message"),
    [
        ("min", [], "min called on empty list"),
        ("max", [], "max called on empty list"),
        ("min", [[1], [2]], "no such overload"),
        ("min", [None], "no such overload"),
        ("isSorted", [[1]], "no such overload"),
        ("max", [1, [1]], "no such overload"),
        ("isSorted", [1, None], "no such overload"),
    ],
)
def test_min_max_and_is_sorted_need_ordered_elements(
    name: str, items: list[object], message: str
) -> None:
    with pytest.raises(CELEvalError, match=message):
        member(name, items)


@pytest.mark.parametrize(
    ("name", "items", "expected"),
    [
        ("max", [1, "a"], 1),
        ("min", ["x", 2, 1], "x"),
        ("min", [2, "x", 1], 1),
        ("isSorted", [1, "a"], True),
        ("isSorted", [2, "x", 1], True),
        ("isSorted", ["b", 1, "a"], True),
    ],
)
def test_a_comparison_between_types_that_do_not_order_is_skipped_as_kubernetes_skips_it(
    name: str, items: list[object], expected: object
) -> None:
    assert member(name, items) == expected


@pytest.mark.parametrize(
    ("name", "items", "value", "expected"),
    [
        ("indexOf", [1, 2, 2, 3], 2, 1),
        ("lastIndexOf", [1, 2, 2, 3], 2, 2),
        ("indexOf", ["a", "b"], "c", -1),
        ("lastIndexOf", ["a", "b"], "c", -1),
        ("indexOf", [], "x", -1),
        ("indexOf", [1.0], 1.1, -1),
        # CEL equality: numbers across types, lists element by element
        ("indexOf", [5, 1], UInt(1), 1),
        ("lastIndexOf", [1.0, 1, UInt(1)], 1, 2),
        ("indexOf", [[1, 2], [3]], [3.0], 1),
        ("indexOf", [True], 1, -1),
        ("indexOf", [NAN], NAN, -1),
    ],
)
def test_index_of_finds_equal_elements(
    name: str, items: list[object], value: object, expected: int
) -> None:
    assert member(name, items, value) == expected


@pytest.mark.parametrize(
    ("items", "start", "end", "expected"),
    [
        ([1, 2, 3, 4], 1, 3, [2, 3]),
        ([1, 2, 3, 4], 2, 4, [3, 4]),
        ([1, 2, 3, 4], 0, 0, []),
        ((1, 2), 0, 2, [1, 2]),
    ],
)
def test_slice_takes_a_sub_list(
    items: list[object], start: int, end: int, expected: list[object]
) -> None:
    assert member("slice", items, start, end) == expected


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (-1, 2, "cannot slice(-1, 2), negative indexes not supported"),
        (3, 2, "cannot slice(3, 2), start index must be less than or equal to end index"),
        (0, 5, "cannot slice(0, 5), list is length 4"),
    ],
)
def test_slice_rejects_bad_bounds(start: int, end: int, message: str) -> None:
    with pytest.raises(CELEvalError) as e:
        member("slice", [1, 2, 3, 4], start, end)
    assert e.value.message == message


@pytest.mark.parametrize(
    ("items", "depth", "expected"),
    [
        ([1, [2, 3], [4]], None, [1, 2, 3, 4]),
        ([1, [2, [3, 4]]], None, [1, 2, [3, 4]]),
        ([1, 2, [], [], [3, 4]], None, [1, 2, 3, 4]),
        ([1, [2, [3, [4]]]], 2, [1, 2, 3, [4]]),
        ([1, [2, [3, [4]]]], 0, [1, [2, [3, [4]]]]),
        ([1, (2, (3,))], 5, [1, 2, 3]),
        ([], 1, []),
    ],
)
def test_flatten_unnests_to_the_given_depth(
    items: list[object], depth: int | None, expected: list[object]
) -> None:
    result = member("flatten", items) if depth is None else member("flatten", items, depth)
    assert result == expected


def test_flatten_to_a_negative_depth_is_an_error() -> None:
    with pytest.raises(CELEvalError, match="level must be non-negative"):
        member("flatten", [1, [2]], -1)


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([1, 2, 2, 3, 3, 3], [1, 2, 3]),
        (["b", "b", "c", "a", "c"], ["b", "c", "a"]),
        ([1, "b", 2, "b"], [1, "b", 2]),
        ([1, 1.0, UInt(1), 2], [1, 2]),
        ([True, 1, False, 0], [True, 1, False, 0]),
        (["1", b"1", 1], ["1", b"1", 1]),
        ([[1], [1.0], [2], {"a": 1}, {"a": 1.0}], [[1], [2], {"a": 1}]),
        ([NAN, NAN], [NAN, NAN]),
        ([d(1), d(1), t(1)], [d(1), t(1)]),
        ([], []),
    ],
)
def test_distinct_keeps_the_first_of_equal_elements(
    items: list[object], expected: list[object]
) -> None:
    result = member("distinct", items)
    assert len(result) == len(expected)  # type: ignore[arg-type]
    assert repr(result) == repr(expected)


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([5, 3, 1, 2], [2, 1, 3, 5]),
        ((1, "a"), ["a", 1]),
        ([], []),
    ],
)
def test_reverse_reverses_a_list(items: list[object], expected: list[object]) -> None:
    assert member("reverse", items) == expected


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([3, 2, 1], [1, 2, 3]),
        (["b", "c", "a"], ["a", "b", "c"]),
        ([2.5, -1.0], [-1.0, 2.5]),
        ([UInt(2), UInt(1)], [UInt(1), UInt(2)]),
        ([True, False], [False, True]),
        ([d(3), d(-1)], [d(-1), d(3)]),
        ([t(3), t(1)], [t(1), t(3)]),
        ([b"b", b"a"], [b"a", b"b"]),
        ([], []),
    ],
)
def test_sort_orders_comparable_elements(items: list[object], expected: list[object]) -> None:
    assert member("sort", items) == expected


@pytest.mark.parametrize(
    ("name", "items", "expected"),
    [
        # NaN is neither before nor after anything: Kubernetes' lists skip it, the first of
        # two that cannot be ordered stays
        ("max", [NAN, 1.0], NAN),
        ("max", [1.0, NAN], 1.0),
        ("min", [NAN, 1.0], NAN),
        ("min", [1.0, NAN], 1.0),
        ("isSorted", [NAN, 1.0], True),
        ("isSorted", [1.0, NAN, 0.5], True),
        ("isSorted", [2.0, NAN, 1.0], True),
        ("isSorted", [2.0, 1.0, NAN], False),
        ("sort", [1.0, NAN], [1.0, NAN]),
        ("sort", [NAN, 1.0], [NAN, 1.0]),
    ],
)
def test_nan_in_a_list_is_skipped_by_its_ordering_as_in_kubernetes(
    name: str, items: list[object], expected: object
) -> None:
    assert same(member(name, items), expected)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([1, "b"], "list elements must have the same type"),
        ([1, 2.0], "list elements must have the same type"),
        ([[1, 2, 3]], "list elements must be comparable"),
        ([{"a": 1}], "list elements must be comparable"),
    ],
)
def test_sort_rejects_mixed_or_unordered_elements(items: list[object], message: str) -> None:
    with pytest.raises(CELEvalError, match=message):
        member("sort", items)


def test_sort_by_associated_keys_orders_items_by_their_keys() -> None:
    assert member("@sortByAssociatedKeys", ["foo", "bar", "baz"], [3, 1, 2]) == [
        "bar",
        "baz",
        "foo",
    ]


def test_sort_by_associated_keys_is_stable() -> None:
    assert member("@sortByAssociatedKeys", ["a", "b", "c"], [1, 0, 1]) == ["b", "a", "c"]


def test_sort_by_associated_keys_needs_one_key_per_item() -> None:
    with pytest.raises(CELEvalError, match="same size"):
        member("@sortByAssociatedKeys", ["a", "b"], [1])


@pytest.mark.parametrize(("n", "expected"), [(0, []), (1, [0]), (5, [0, 1, 2, 3, 4])])
def test_lists_range_counts_from_zero(n: int, expected: list[int]) -> None:
    overload = TABLE.find_global("lists.range", 1)
    assert overload is not None
    assert overload.impl(n) == expected


@pytest.mark.parametrize(
    ("n", "message"),
    [
        (-1, "size must be non-negative"),
        (MAX_RANGE_SIZE + 1, "exceeds maximum allowed"),
        (UInt(3), "no such overload"),
    ],
)
def test_lists_range_rejects_negative_huge_or_non_int_sizes(n: object, message: str) -> None:
    overload = TABLE.find_global("lists.range", 1)
    assert overload is not None
    with pytest.raises(CELEvalError, match=message):
        overload.impl(n)


@pytest.mark.parametrize(
    ("name", "items", "expected"),
    [
        ("first", [1, 2, 3], Optional(1)),
        ("last", [1, 2, 3], Optional(3)),
        ("first", [], OPTIONAL_NONE),
        ("last", (), OPTIONAL_NONE),
        ("first", [None], Optional(None)),
    ],
)
def test_first_and_last_are_optional(name: str, items: list[object], expected: Optional) -> None:
    result = member(name, items)
    assert isinstance(result, Optional)
    assert result.has_value() == expected.has_value()
    assert result == expected


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("slice", (0, UInt(1))),
        ("slice", ("0", 1)),
        ("flatten", (1.0,)),
    ],
)
def test_list_functions_reject_arguments_of_the_wrong_type(
    name: str, args: tuple[object, ...]
) -> None:
    with pytest.raises(CELEvalError, match="no such overload"):
        member(name, [1, 2], *args)


@pytest.mark.parametrize(
    ("name", "items", "args", "expected"),
    [
        # Kubernetes: one traversal, 0.1 per character of strings
        ("sum", [1, 2, 3], (), 3),
        ("indexOf", ["x" * 100, "y" * 50], ("z",), 15),
        ("max", [[1, 2], [3]], (), 3),
        # cel-go: the result list plus 10 for the allocation; sorting is quadratic
        ("slice", [1, 2, 3, 4], (1, 3), 12),
        ("reverse", [1, 2, 3], (), 13),
        ("flatten", [[1], [2]], (2,), 14),
        ("sort", [3, 2, 1], (), 28),
        ("distinct", ["a", "b"], (), 18),
    ],
)
def test_cost_follows_the_size_of_the_list(
    name: str, items: list[object], args: tuple[object, ...], expected: int
) -> None:
    assert member_cost(name, items, *args) == expected


def test_traversal_cost_walks_maps_too() -> None:
    assert traversal_cost({"k" * 10: [1, 2], "x": "y"}) == 1 + 2 + 0 + 0
