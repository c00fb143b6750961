"""Comparing CEL values in tests: same value and same CEL type, all the way down."""

from __future__ import annotations

import math

from policyext.cel import Optional


def same(actual: object, expected: object) -> bool:
    """Equal values of the same CEL type, all the way down: 1, 1u, 1.0 and true all differ."""
    if type(actual) is not type(expected):
        return False
    if isinstance(actual, list) and isinstance(expected, list):
        return len(actual) == len(expected) and all(map(same, actual, expected))
    if isinstance(actual, dict) and isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(
            same(actual[k], expected[k]) for k in actual
        )
    if isinstance(actual, Optional) and isinstance(expected, Optional):
        if actual.has_value() != expected.has_value():
            return False
        return not actual.has_value() or same(actual.value, expected.value)
    if isinstance(actual, float) and isinstance(expected, float):
        if math.isnan(expected):
            return math.isnan(actual)
        # -0.0 and 0.0 are equal numbers but different literals
        return actual == expected and math.copysign(1, actual) == math.copysign(1, expected)
    return actual == expected
