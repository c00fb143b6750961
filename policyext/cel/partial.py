"""Partial evaluation: split an expression into the parts that read only known inputs and
the residual that reads the rest.

A scheduling rule such as `pod.metadata.labels.?critical.orValue('') != 'true' ||
node.metadata.labels.?lifecycle.orValue('') != 'spot'` mixes the pod (the same for every node
of a request) with the node. Splitting it into `pod.metadata.labels.?critical.orValue('') !=
'true'` (evaluated once per request) and the residual `@p0 || node...` (evaluated per node,
with `@p0` a constant) lets the caller evaluate the pod side once, and cache the residual's
result per node and per value of the parts.

Placeholders are named `@p0`, `@p1`...: `@` cannot start a CEL identifier, so no name in
the expression can shadow them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from policyext.cel import ast

# `@` cannot start a CEL identifier: no name in a policy can collide with a placeholder
PLACEHOLDER_PREFIX = "@"

Read = str  # "pod", "node", or "variables.zone" for a field of the variables map


@dataclass(frozen=True)
class Split:
    """`residual` reads the parts' values as the variables `@p0`, `@p1`...; the parts are
    subtrees of the expression itself, and so is every subtree of the residual that holds
    no part. `origins`: each node of the residual made here (a node above a part, and the
    placeholder standing for a part) with the node of the expression it stands for, so
    that what was known of the expression's nodes (their types) is known of the
    residual's."""

    residual: ast.Node
    parts: tuple[ast.Node, ...]
    origins: Mapping[ast.Node, ast.Node] = field(default_factory=dict, compare=False)

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(placeholder(i) for i in range(len(self.parts)))


def placeholder(index: int) -> str:
    return f"{PLACEHOLDER_PREFIX}p{index}"


# what a read of a variable bound by an enclosing comprehension looks like: never known
LOCAL = "@local"


# the inputs whose fields `reads` tells apart (as `variables.<name>`) unless told otherwise
BY_FIELD: frozenset[str] = frozenset({"variables"})


def reads(
    node: ast.Node, enclosing: frozenset[str] = frozenset(), by_field: frozenset[str] = BY_FIELD
) -> set[Read]:
    """The inputs an expression reads: free identifiers, and `<input>.<name>` for a
    constant field of an input of `by_field` (`variables.zone`; with `nodeInfo` among them,
    `nodeInfo.allocatable`); such an input read otherwise (whole, or by an index) is
    reported by its name. `enclosing` are the variables of the comprehensions the
    expression sits in: reading one of them is reported as LOCAL."""
    out: set[Read] = set()
    _collect(node, frozenset(), enclosing, out, by_field)
    return out


def _collect(
    node: ast.Node,
    inside: frozenset[str],
    enclosing: frozenset[str],
    out: set[Read],
    by_field: frozenset[str],
) -> None:
    if isinstance(node, ast.Ident):
        if node.name in inside:
            return
        out.add(LOCAL if node.name in enclosing else node.name)
    elif isinstance(node, ast.Select):
        operand = node.operand
        if (
            isinstance(operand, ast.Ident)
            and operand.name in by_field
            and operand.name not in inside | enclosing
        ):
            out.add(f"{operand.name}.{node.field}")
        else:
            _collect(operand, inside, enclosing, out, by_field)
    elif isinstance(node, ast.Call):
        if node.target is not None:
            _collect(node.target, inside, enclosing, out, by_field)
        for arg in node.args:
            _collect(arg, inside, enclosing, out, by_field)
    elif isinstance(node, ast.ListLit):
        for element in node.elements:
            _collect(element, inside, enclosing, out, by_field)
    elif isinstance(node, ast.MapLit):
        for entry in node.entries:
            _collect(entry.key, inside, enclosing, out, by_field)
            _collect(entry.value, inside, enclosing, out, by_field)
    elif isinstance(node, ast.StructLit):
        for _, value, _ in node.fields:
            _collect(value, inside, enclosing, out, by_field)
    elif isinstance(node, ast.Comprehension):
        _collect(node.target, inside, enclosing, out, by_field)
        bound = inside | {node.var} | ({node.var2} if node.var2 else set())
        for arg in node.args:
            _collect(arg, bound, enclosing, out, by_field)


def split(node: ast.Node, known: Callable[[Read], bool]) -> Split | None:
    """The maximal subexpressions that read only known inputs (and read something: a
    literal stays where it is), replaced by placeholders. None when nothing splits off, or
    when the whole expression is known (then it needs no residual)."""
    parts: list[ast.Node] = []
    origins: dict[ast.Node, ast.Node] = {}
    residual = _replace(node, known, parts, frozenset(), origins)
    if not parts or residual is None:
        return None
    return Split(residual, tuple(parts), origins)


def _replace(
    node: ast.Node,
    known: Callable[[Read], bool],
    parts: list[ast.Node],
    enclosing: frozenset[str],
    origins: dict[ast.Node, ast.Node],
) -> ast.Node | None:
    """The node with its known subexpressions replaced; None when the node is known as a
    whole (its parent turns it into a part). A node that reads nothing known holds no part:
    it is its own residual, as it is."""
    node_reads = reads(node, enclosing)
    if not node_reads:
        return node  # a constant: nothing to gain
    if all(known(r) for r in node_reads):
        return None
    if not any(known(r) for r in node_reads):
        return node

    def child(sub: ast.Node, scope: frozenset[str] = enclosing) -> ast.Node:
        replaced = _replace(sub, known, parts, scope, origins)
        if replaced is not None:
            return replaced
        parts.append(sub)
        stand_in = ast.Ident(sub.offset, placeholder(len(parts) - 1))
        origins[stand_in] = sub
        return stand_in

    made: ast.Node
    if isinstance(node, ast.Select):
        if node.test_only:
            return node  # has(x.f) needs the selection itself
        made = ast.Select(node.offset, child(node.operand), node.field, False, node.optional)
    elif isinstance(node, ast.Call):
        target = child(node.target) if node.target is not None else None
        made = ast.Call(node.offset, node.function, [child(a) for a in node.args], target)
    elif isinstance(node, ast.ListLit):
        made = ast.ListLit(node.offset, [child(e) for e in node.elements], node.optional_indices)
    elif isinstance(node, ast.MapLit):
        made = ast.MapLit(
            node.offset,
            [ast.MapEntry(child(e.key), child(e.value), e.optional) for e in node.entries],
        )
    elif isinstance(node, ast.Comprehension):
        scope = enclosing | {node.var} | ({node.var2} if node.var2 else set())
        made = ast.Comprehension(
            node.offset,
            node.kind,
            child(node.target),
            node.var,
            node.var2,
            [child(a, scope) for a in node.args],
        )
    else:
        return node
    origins[made] = node
    return made
