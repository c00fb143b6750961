"""A compiled node (`Code`) and the evaluation frame it runs in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from policyext.cel.errors import CostLimitExceeded
from policyext.cel.values import OPTIONAL_NONE

Activation = dict[Any, Any]
Fn = Callable[[Activation], Any]

__all__ = ["OPTIONAL_NONE"]

# the key of the cost meter in an activation: an object, so no CEL name can collide with it.
# The meter is a list [units used, budget].
COST: Final = object()


@dataclass(frozen=True, slots=True)
class Code:
    """A compiled node: its closure, and its value when constant (its static type is the
    checker's)."""

    fn: Fn
    const: bool = False
    value: object = None
    cost: int = 1  # static cost of one evaluation, loops excluded (they charge as they run)
    # for optional chains (`a.?b.c`): the value, or ABSENT where the optional is empty,
    # without building the Optional (so `.orValue(x)` and `.hasValue()` need none)
    walk: Fn | None = None
    # for reads of the activation (`x`, `x.a.b`): the variable and the keys, so that a
    # consumer can index the dicts inline; `fn` stays the exact (and slower) way
    path: tuple[str, tuple[str, ...]] | None = None


# what a `walk` returns for an empty optional
ABSENT: Final = object()


def constant(value: object) -> Code:
    return Code(lambda _a: value, const=True, value=value, cost=0)


def charge(activation: Activation, units: int) -> None:
    meter = activation[COST]
    meter[0] += units
    if meter[0] > meter[1]:
        raise CostLimitExceeded(f"evaluation cost budget of {meter[1]} units exceeded")
