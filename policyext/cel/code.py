"""A compiled node (`Code`) and the evaluation frame it runs in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from policyext.cel.errors import CostLimitExceeded
from policyext.cel.functions import DYN
from policyext.cel.values import UInt

Activation = dict[Any, Any]
Fn = Callable[[Activation], Any]

# the key of the cost meter in an activation: an object, so no CEL name can collide with it.
# The meter is a list [units used, budget].
COST: Final = object()

LITERAL_TYPES: Final = {
    type(None): "null_type",
    bool: "bool",
    int: "int",
    UInt: "uint",
    float: "double",
    str: "string",
    bytes: "bytes",
}


@dataclass(frozen=True, slots=True)
class Code:
    """A compiled node: its closure, its static type, and its value when constant."""

    fn: Fn
    type: str = DYN
    const: bool = False
    value: object = None
    cost: int = 1  # static cost of one evaluation, loops excluded (they charge as they run)


def constant(value: object, type_: str | None = None) -> Code:
    return Code(
        lambda _a: value,
        type_ or LITERAL_TYPES.get(type(value), DYN),
        const=True,
        value=value,
        cost=0,
    )


def charge(activation: Activation, units: int) -> None:
    meter = activation[COST]
    meter[0] += units
    if meter[0] > meter[1]:
        raise CostLimitExceeded(f"evaluation cost budget of {meter[1]} units exceeded")
