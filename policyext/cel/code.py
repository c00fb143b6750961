"""A compiled node (`Code`) and the evaluation frame it runs in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from policyext.cel.errors import CostLimitExceeded
from policyext.cel.functions import CHARS_PER_UNIT, Impl, SizeFn
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


# the values whose building is charged by their size
SIZED: Final = frozenset((str, bytes, list))


def sized_cost(value: Any) -> int:
    """What building a value costs: a unit per element, per ten characters or bytes."""
    return len(value) if type(value) is list else len(value) // CHARS_PER_UNIT


def build(activation: Activation, size: SizeFn, impl: Impl, args: list[object]) -> object:
    """`impl(*args)`, charged an upper bound of the size of its result before it is called,
    so the budget refuses a result too big before it takes the memory; what the result did
    not use of the bound is given back (and all of it when the call fails), so the
    evaluation is charged what it built, as when results were charged after."""
    meter = activation[COST]
    bound = size(meter[1] - meter[0], *args)
    charge(activation, bound)
    try:
        result = impl(*args)
    except BaseException:
        meter[0] -= bound
        raise
    used = sized_cost(result) if type(result) in SIZED else 0
    if used > bound:  # a bound that fell short: charged all the same
        charge(activation, used - bound)
    else:
        meter[0] -= bound - used
    return result
