"""Set relations over lists, with CEL equality."""

from __future__ import annotations

import math

import pytest

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import merge_libraries
from policyext.cel.lib.sets import SETS_LIBRARY, equality_key
from policyext.cel.values import Duration, UInt

TABLE = merge_libraries([SETS_LIBRARY])
NAN = math.nan
# long enough for the hashed lookup, short lists take the plain scan
MANY = list(range(100))


def call(name: str, a: object, b: object) -> object:
    overload = TABLE.find_global(name, 2)
    assert overload is not None, name
    return overload.impl(a, b)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([], [], True),
        ([], [1], False),
        ([1], [], True),
        ([1, 2, 3, 4], [2, 3], True),
        ([1, 2, 3], [2, 5], False),
        ([1, 2.0, UInt(3)], [1.0, UInt(2), 3], True),
        ([[1], [2, 3]], [[2, 3.0]], True),
        ([{"a": 1}], [{"a": 1.0}], True),
        ([True], [1], False),
        (["1"], [b"1"], False),
        ([NAN], [NAN], False),
        ([Duration(1)], [Duration(1)], True),
        ((1, 2), (2,), True),
        (MANY, [99, 0.0, UInt(50)], True),
        (MANY, [100], False),
        ([*MANY, [1, 2]], [[1.0, 2], 3], True),
        ([*MANY, True], [True, False], False),
        (MANY, [NAN], False),
    ],
)
def test_contains_holds_when_every_element_of_b_is_in_a(
    a: list[object], b: list[object], expected: bool
) -> None:
    assert call("sets.contains", a, b) is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([], [], True),
        ([1], [1, 1], True),
        ([1], [UInt(1), 1.0], True),
        ([1, 2, 3], [UInt(3), 2.0, 1], True),
        ([1, 2], [2, 3], False),
        ([1], [], False),
        (MANY, list(reversed(MANY)), True),
        (MANY, MANY[:-1], False),
    ],
)
def test_equivalent_ignores_order_and_duplicates(
    a: list[object], b: list[object], expected: bool
) -> None:
    assert call("sets.equivalent", a, b) is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1], [], False),
        ([], [1], False),
        ([1], [1, 2], True),
        ([[1], [2, 3]], [[1, 2], [2, 3.0]], True),
        (["a"], ["b"], False),
        (MANY, [-1, 42.0], True),
        ([-1, -2], MANY, False),
        ([NAN], [NAN], False),
    ],
)
def test_intersects_when_some_element_is_shared(
    a: list[object], b: list[object], expected: bool
) -> None:
    assert call("sets.intersects", a, b) is expected


@pytest.mark.parametrize("name", ["sets.contains", "sets.equivalent", "sets.intersects"])
@pytest.mark.parametrize(("a", "b"), [([1], 1), ("ab", [1]), ({"a": 1}, [1])])
def test_set_functions_take_only_lists(name: str, a: object, b: object) -> None:
    with pytest.raises(CELEvalError, match="no such overload"):
        call(name, a, b)


@pytest.mark.parametrize(
    ("x", "y", "equal"),
    [
        (1, 1.0, True),
        (UInt(1), 1, True),
        (True, 1, False),
        ("a", b"a", False),
        (None, None, True),
        (Duration(5), Duration(5), True),
    ],
)
def test_equality_keys_agree_with_cel_equality(x: object, y: object, equal: bool) -> None:
    assert (equality_key(x) == equality_key(y)) is equal


@pytest.mark.parametrize("value", [NAN, [1], {"a": 1}])
def test_values_without_a_key_are_compared_one_by_one(value: object) -> None:
    assert equality_key(value) is None


@pytest.mark.parametrize("name", ["sets.contains", "sets.equivalent", "sets.intersects"])
def test_cost_is_the_product_of_the_sizes(name: str) -> None:
    overload = TABLE.find_global(name, 2)
    assert overload is not None
    assert overload.cost is not None
    assert overload.cost([1, 2, 3], [1, 2]) == 6
