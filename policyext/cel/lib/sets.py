"""Set relations over lists (cel-go's `ext.Sets`): `sets.contains`, `sets.equivalent`,
`sets.intersects`.

Membership is CEL equality, so `sets.contains([1, 2.0], [1u, 2])` holds. Lists of
scalars are looked up through a hash of their values; lists and maps inside the lists are
compared one by one.
"""

from __future__ import annotations

import math
from typing import Final

from policyext.cel.functions import Library
from policyext.cel.values import UInt, cel_equals, no_such_overload

SETS_LIBRARY: Final = Library("sets")

ListValue = list[object] | tuple[object, ...]
_LISTS: Final = (list, tuple)
_NUMBERS: Final = (int, UInt, float)

# below this many comparisons a plain scan beats building a hash set
_SCAN_LIMIT: Final = 64


def equality_key(value: object) -> object | None:
    """A hashable key such that two values have equal keys exactly when CEL finds them
    equal, or None for values that have none (lists, maps, NaN, unhashable values)."""
    t = type(value)
    if t in _NUMBERS:
        if isinstance(value, float) and math.isnan(value):
            return None
        # Python already equates 1, 1.0 and UInt(1) and hashes them alike
        return ("number", value)
    if t is list or t is tuple or t is dict:
        return None
    try:
        hash(value)
    except TypeError:
        return None
    # the type keeps true apart from 1 and "1" apart from b"1"
    return (t, value)


class _Members:
    """The values of a list, ready for repeated CEL-equality membership tests."""

    __slots__ = ("keys", "others")

    def __init__(self, items: ListValue) -> None:
        self.keys: set[object] = set()
        self.others: list[object] = []
        for item in items:
            key = equality_key(item)
            if key is None:
                self.others.append(item)
            else:
                self.keys.add(key)

    def __contains__(self, value: object) -> bool:
        key = equality_key(value)
        if key is not None:
            return key in self.keys
        # lists and maps can only equal values that have no key themselves
        return any(cel_equals(value, other) for other in self.others)


def _membership(items: ListValue, probes: int) -> ListValue | _Members:
    if len(items) * probes <= _SCAN_LIMIT:
        return items
    return _Members(items)


def _includes(haystack: ListValue | _Members, value: object) -> bool:
    if isinstance(haystack, _Members):
        return value in haystack
    return any(cel_equals(value, item) for item in haystack)


def _pair_cost(a: object, b: object) -> int:
    if isinstance(a, _LISTS) and isinstance(b, _LISTS):
        return len(a) * len(b)
    return 0


def _lists(name: str, a: object, b: object) -> tuple[ListValue, ListValue]:
    if not isinstance(a, _LISTS) or not isinstance(b, _LISTS):
        raise no_such_overload(name, a, b)
    return a, b


@SETS_LIBRARY.function("sets.contains", 2, result="bool", cost=_pair_cost)
def contains(a: object, b: object) -> bool:
    """Every element of `b` is in `a`."""
    items, wanted = _lists("sets.contains", a, b)
    return _contains(items, wanted)


def _contains(items: ListValue, wanted: ListValue) -> bool:
    haystack = _membership(items, len(wanted))
    return all(_includes(haystack, value) for value in wanted)


@SETS_LIBRARY.function("sets.equivalent", 2, result="bool", cost=_pair_cost)
def equivalent(a: object, b: object) -> bool:
    """Each list contains every element of the other; sizes and duplicates do not matter."""
    left, right = _lists("sets.equivalent", a, b)
    return _contains(left, right) and _contains(right, left)


@SETS_LIBRARY.function("sets.intersects", 2, result="bool", cost=_pair_cost)
def intersects(a: object, b: object) -> bool:
    """Some element of `a` is in `b`."""
    left, right = _lists("sets.intersects", a, b)
    haystack = _membership(right, len(left))
    return any(_includes(haystack, value) for value in left)
