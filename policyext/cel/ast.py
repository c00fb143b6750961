"""The abstract syntax tree of a CEL expression.

Operators are calls with cel-go's internal names (`_+_`, `_&&_`, `_?_:_`, `_[_]`, `!_`, `-_`,
`@in`), so the checker and the compiler treat operators and functions alike. Macros are kept
as `Comprehension` nodes of a named kind rather than expanded into cel-go's generic loop, so
that each compiles to a loop written for it. Every node knows its offset in the source.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False, slots=True)
class Node:
    offset: int


@dataclass(eq=False, slots=True)
class Literal(Node):
    value: object


@dataclass(eq=False, slots=True)
class Ident(Node):
    name: str


@dataclass(eq=False, slots=True)
class Select(Node):
    """`operand.field`; `test_only` for `has(operand.field)`; `optional` for `operand.?field`."""

    operand: Node
    field: str
    test_only: bool = False
    optional: bool = False


@dataclass(eq=False, slots=True)
class Call(Node):
    """A function or operator call; `target` is set for member calls `target.f(args)`."""

    function: str
    args: list[Node]
    target: Node | None = None


@dataclass(eq=False, slots=True)
class ListLit(Node):
    elements: list[Node]
    optional_indices: frozenset[int] = frozenset()


@dataclass(eq=False, slots=True)
class MapEntry:
    key: Node
    value: Node
    optional: bool = False


@dataclass(eq=False, slots=True)
class MapLit(Node):
    entries: list[MapEntry]


@dataclass(eq=False, slots=True)
class StructLit(Node):
    """`Name{field: value}`: protobuf message construction (parsed, but not supported)."""

    type_name: str
    fields: list[tuple[str, Node, bool]]


@dataclass(eq=False, slots=True)
class Comprehension(Node):
    """A macro over a collection: `kind` is all, exists, exists_one, map, filter,
    transformList, transformMap, transformMapEntry, sortBy, or bind / optMap / optFlatMap.

    `var2` is the second variable of the two-variable forms (index or key first, then value).
    `args` holds the macro's expressions after the variables: the predicate or transform, and
    for the 3-argument `map` the filter first.
    """

    kind: str
    target: Node
    var: str
    var2: str | None
    args: list[Node] = field(default_factory=list)


def is_chain_step(node: Node) -> bool:
    """A selection, or an index with a constant string key, that extends an access chain
    (`a.b`, `a['b']`, `a[?'b']`): what the checker resolves as one qualified name and the
    planner compiles into one closure."""
    if isinstance(node, Select):
        return not node.test_only
    return (
        isinstance(node, Call)
        and node.target is None
        and node.function in ("_[_]", "_[?_]")
        and isinstance(node.args[1], Literal)
        and type(node.args[1].value) is str
    )
