"""List functions: Kubernetes' list library and cel-go's `ext.Lists`.

Kubernetes (k8s.io/apiserver/pkg/cel/library/lists.go): `isSorted()`, `sum()`, `min()`,
`max()`, `indexOf(x)`, `lastIndexOf(x)`. cel-go: `slice(a, b)`, `flatten()`,
`flatten(depth)`, `distinct()`, `reverse()`, `sort()`, `first()`, `last()`,
`lists.range(n)`, and `@sortByAssociatedKeys(keys)`, the helper the `sortBy` macro expands
into (`list.@sortByAssociatedKeys(list.map(e, key))`).

Ordering follows CEL's `<`: numbers compare by value across int, uint and double; other
values only compare with values of their own type (string, bytes, bool, duration, timestamp).
Equality is CEL equality (`cel_equals`).
"""

from __future__ import annotations

from typing import Any, Final, cast

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import Library
from policyext.cel.lib.sets import equality_key
from policyext.cel.operators import compare
from policyext.cel.values import (
    OPTIONAL_NONE,
    Duration,
    Optional,
    Timestamp,
    UInt,
    cel_equals,
    check_int,
    make_uint,
    no_such_overload,
)

LISTS_LIBRARY: Final = Library("lists")
_lib = LISTS_LIBRARY

ListValue = list[object] | tuple[object, ...]
_LISTS: Final = (list, tuple)

# cel-go's cost constants: a list allocation costs 10, an element comparison in a sort 2
_LIST_CREATE_COST: Final = 10
_SELF_COMPARE_FACTOR: Final = 2.0
_STRING_FACTOR: Final = 0.1


# -- cost ---------------------------------------------------------------------------------
def traversal_cost(value: object) -> int:
    """What Kubernetes charges to walk a value: 0.1 per character, 1 per scalar."""
    if isinstance(value, str | bytes):
        return int(len(value) * _STRING_FACTOR)
    if isinstance(value, list | tuple):
        return sum(traversal_cost(v) for v in value)
    if isinstance(value, dict):
        return sum(traversal_cost(k) + traversal_cost(v) for k, v in value.items())
    return 1


def _traversal_cost(target: object, *_args: object) -> int:
    return traversal_cost(target)


def _allocation_cost(size: int, factor: float = 1.0) -> int:
    return int(size * factor) + _LIST_CREATE_COST


def _self_compare_cost(items: object) -> int:
    if not isinstance(items, _LISTS) or not items:
        return _allocation_cost(0)
    factor = _SELF_COMPARE_FACTOR
    if type(items[0]) in (str, bytes):
        factor += _STRING_FACTOR
    return _allocation_cost(len(items) * len(items), factor)


def _size_cost(target: object, *_args: object) -> int:
    return _allocation_cost(len(target)) if isinstance(target, _LISTS) else 0


# the types whose values cel-go can order (traits.Comparer): Kubernetes' isSorted, min and
# max refuse any other element, even alone in its list
_COMPARERS: Final = frozenset((bool, bytes, float, Duration, int, str, Timestamp, UInt))


def _ordered(a: object, b: object, name: str) -> int:
    """-1, 0 or 1 as `a` sorts before, with or after `b`; 2 when neither: NaN, or two
    values of types that do not order with each other (`1` and `'a'`), a comparison that
    Kubernetes' lists library skips rather than fail on."""
    try:
        return compare(a, b, name)
    except CELEvalError:
        if type(a) in _COMPARERS and type(b) in _COMPARERS:
            return 2
        raise


def _first_orders(items: ListValue, name: str) -> None:
    if items and type(items[0]) not in _COMPARERS:
        raise no_such_overload(name, items)


# -- Kubernetes ---------------------------------------------------------------------------
@_lib.member("isSorted", 0, receiver=_LISTS, result="bool", cost=_traversal_cost)
def is_sorted(items: ListValue) -> bool:
    _first_orders(items, "isSorted")
    return all(_ordered(items[i - 1], items[i], "isSorted") != 1 for i in range(1, len(items)))


_SUMMABLE: Final = (int, UInt, float, Duration)


@_lib.member("sum", 0, receiver=_LISTS, result="dyn", cost=_traversal_cost)
def sum_(items: ListValue) -> object:
    if not items:
        # cel-go's zero depends on the declared element type; an empty list at run time
        # has none, so its sum is the int 0
        return 0
    first = items[0]
    kind = type(first)
    if kind not in _SUMMABLE:
        raise no_such_overload("sum", items)
    for item in items:
        if type(item) is not kind:
            raise no_such_overload("sum", first, item)
    if kind is Duration:
        nanos = 0
        for d in cast("list[Duration]", items):
            nanos = check_int(nanos + d.nanos)  # every addition checked, as cel-go's
        return Duration(nanos)
    if kind is float:
        # one addition after another, as cel-go adds (Python's sum() may compensate)
        total = 0.0
        for x in cast("list[float]", items):
            total += x
        return total
    # cel-go checks every addition: an overflow midway is an error even if later terms
    # would bring the total back in range
    check = check_int if kind is int else make_uint
    acc = 0
    for n in cast("list[int]", items):
        acc = check(acc + n)
    return make_uint(acc) if kind is UInt else acc


def _extreme(items: ListValue, name: str, prefer: int) -> object:
    if not items:
        raise CELEvalError(f"{name} called on empty list")
    _first_orders(items, name)
    best = items[0]
    for item in items[1:]:
        if _ordered(best, item, name) == prefer:
            best = item
    return best


@_lib.member("min", 0, receiver=_LISTS, result="dyn", cost=_traversal_cost)
def min_(items: ListValue) -> object:
    return _extreme(items, "min", 1)


@_lib.member("max", 0, receiver=_LISTS, result="dyn", cost=_traversal_cost)
def max_(items: ListValue) -> object:
    return _extreme(items, "max", -1)


@_lib.member("indexOf", 1, receiver=_LISTS, result="int", cost=_traversal_cost)
def index_of(items: ListValue, value: object) -> int:
    for i, item in enumerate(items):
        if cel_equals(item, value):
            return i
    return -1


def _includes_cost(target: object, _value: object) -> int:
    return len(target) if type(target) in _LISTS else 0  # type: ignore[arg-type]


@_lib.member("includes", 1, receiver=None, result="bool", cost=_includes_cost)
def includes(target: object, value: object) -> bool:
    """Kubernetes' lists library (version 1, Kubernetes 1.37): whether a list holds the
    value; on any other target, whether the target itself equals it."""
    if type(target) in _LISTS:
        return any(cel_equals(item, value) for item in target)  # type: ignore[attr-defined]
    return cel_equals(target, value)


@_lib.member("lastIndexOf", 1, receiver=_LISTS, result="int", cost=_traversal_cost)
def last_index_of(items: ListValue, value: object) -> int:
    for i in range(len(items) - 1, -1, -1):
        if cel_equals(items[i], value):
            return i
    return -1


# -- cel-go ext.Lists ---------------------------------------------------------------------
def _slice_cost(target: object, start: object = 0, end: object = 0) -> int:
    if type(start) is int and type(end) is int:
        return _allocation_cost(max(end - start, 0))
    return _allocation_cost(0)


@_lib.member("slice", 2, receiver=_LISTS, result="list", cost=_slice_cost)
def slice_(items: ListValue, start: object, end: object) -> list[object]:
    if type(start) is not int or type(end) is not int:
        raise no_such_overload("slice", items, start, end)
    begin: int = start
    stop: int = end
    if begin < 0 or stop < 0:
        raise CELEvalError(f"cannot slice({begin}, {stop}), negative indexes not supported")
    if begin > stop:
        raise CELEvalError(
            f"cannot slice({begin}, {stop}), start index must be less than or equal to end index"
        )
    if stop > len(items):
        raise CELEvalError(f"cannot slice({begin}, {stop}), list is length {len(items)}")
    return list(items[begin:stop])


def _flatten_cost(target: object, depth: object = 1) -> int:
    size = len(target) if isinstance(target, _LISTS) else 0
    levels = depth if type(depth) is int else 1
    return _allocation_cost(size, float(max(levels, 0)))


def _flatten_size(room: int, target: object, depth: object = 1) -> int:
    """The elements the flattening visits (a unit each): at least as many as it keeps. A
    list may hold one inner list many times (a reference each), so this is counted, and the
    count stops once it is past what the budget has left."""
    if not isinstance(target, _LISTS):
        return 0
    return _visits(target, depth if type(depth) is int else 1, room)


def _visits(items: ListValue, depth: int, room: int) -> int:
    count = 0
    for item in items:
        count += 1
        if depth > 0 and isinstance(item, _LISTS):
            count += _visits(item, depth - 1, room - count)
        if count > room:
            break
    return count


@_lib.member("flatten", 0, receiver=_LISTS, result="list", cost=_flatten_cost, size=_flatten_size)
def flatten(items: ListValue) -> list[object]:
    return _flatten(items, 1)


@_lib.member("flatten", 1, receiver=_LISTS, result="list", cost=_flatten_cost, size=_flatten_size)
def flatten_depth(items: ListValue, depth: object) -> list[object]:
    if type(depth) is not int:
        raise no_such_overload("flatten", items, depth)
    if depth < 0:
        raise CELEvalError("level must be non-negative")
    return _flatten(items, depth)


def _flatten(items: ListValue, depth: int) -> list[object]:
    out: list[object] = []
    for item in items:
        if depth > 0 and isinstance(item, _LISTS):
            out.extend(_flatten(item, depth - 1))
        else:
            out.append(item)
    return out


@_lib.member("distinct", 0, receiver=_LISTS, result="list", cost=_self_compare_cost)
def distinct(items: ListValue) -> list[object]:
    """The first occurrence of each value, in order; 1, 1u and 1.0 are the same value."""
    out: list[object] = []
    seen: set[object] = set()
    # values without a hash key (lists, maps) are compared one by one
    unhashed: list[object] = []
    for item in items:
        key = equality_key(item)
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        elif any(cel_equals(item, other) for other in unhashed):
            continue
        else:
            unhashed.append(item)
        out.append(item)
    return out


@_lib.member("reverse", 0, receiver=_LISTS, result="list", cost=_size_cost)
def reverse(items: ListValue) -> list[object]:
    return list(reversed(items))


# the element types `sort()` accepts: all of one type, no mixing of int and double
_SORTABLE: Final = frozenset((int, UInt, float, bool, str, bytes, Duration, Timestamp))


@_lib.member("sort", 0, receiver=_LISTS, result="list", cost=_self_compare_cost)
def sort(items: ListValue) -> list[object]:
    return _sort_by_keys(items, items)


def _sort_by_cost(target: object, keys: object = ()) -> int:
    return _self_compare_cost(keys)


@_lib.member("@sortByAssociatedKeys", 1, receiver=_LISTS, result="list", cost=_sort_by_cost)
def sort_by_keys(items: ListValue, keys: object) -> list[object]:
    """`items` ordered by their keys (`keys[i]` belongs to `items[i]`); a stable sort."""
    if not isinstance(keys, _LISTS):
        raise no_such_overload("@sortByAssociatedKeys", items, keys)
    return _sort_by_keys(items, keys)


def _sort_by_keys(items: ListValue, keys: ListValue) -> list[object]:
    if len(items) != len(keys):
        raise CELEvalError(
            "@sortByAssociatedKeys() expected a list of the same size as the associated keys "
            f"list, but got {len(items)} and {len(keys)} elements respectively"
        )
    if not items:
        return []
    kind = type(keys[0])
    if kind not in _SORTABLE:
        raise CELEvalError("list elements must be comparable")
    if any(type(k) is not kind for k in keys):
        raise CELEvalError("list elements must have the same type")
    order = sorted(range(len(items)), key=cast("list[Any]", keys).__getitem__)
    return [items[i] for i in order]


# cel-go refuses to allocate more than this many elements in one `lists.range`
MAX_RANGE_SIZE: Final = 10_000_000


def _range_cost(n: object) -> int:
    return _allocation_cost(n if type(n) is int and n > 0 else 0)


@_lib.function("lists.range", 1, result="list", cost=_range_cost)
def range_(n: object) -> list[object]:
    if type(n) is not int:
        raise no_such_overload("lists.range", n)
    count: int = n
    if count < 0:
        raise CELEvalError(f"lists.range: size must be non-negative, got {count}")
    if count > MAX_RANGE_SIZE:
        raise CELEvalError(f"lists.range: size {count} exceeds maximum allowed ({MAX_RANGE_SIZE})")
    return list(range(count))


@_lib.member("first", 0, receiver=_LISTS, result="optional_type")
def first(items: ListValue) -> Optional:
    return Optional(items[0]) if items else OPTIONAL_NONE


@_lib.member("last", 0, receiver=_LISTS, result="optional_type")
def last(items: ListValue) -> Optional:
    return Optional(items[-1]) if items else OPTIONAL_NONE
