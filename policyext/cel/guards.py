"""Reads of optional Kubernetes fields that nothing guards: a warning at write time.

Kubernetes' OpenAPI schema lists, for each object type, the fields an object always has
(`required`); any other may be absent, and a plain selection of an absent field (`.labels`
on a node without labels) is an evaluation error, so the rule fails on that node. This
module finds, in a checked expression, every plain `.field` selection of an optional field
of a Kubernetes type that is not made safe by:

- an optional selection (`.?field`, and everything chained after one);
- being inside `has(...)`;
- a `has()` of the same path (or of a path below it) in the other operand of `&&` or `||`
  (CEL's `&&` and `||` absorb an error when the other side decides the result, so either
  side guards), or in the condition of `? :`.

A few paths are taken as present though the schema leaves them optional (`ALWAYS_SET`):
every Pod and Node read from the API server has them, and a warning on nearly every rule
would hide the ones that matter. Map keys (`labels['zone']`, `labels.zone`) are not schema
fields and are not reported here: `has(node.metadata.labels) && node.metadata.labels.zone`
is a usual, deliberate form.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from policyext.cel import ast
from policyext.cel.checker import Checked
from policyext.cel.k8stypes import optional_fields
from policyext.cel.lexer import position
from policyext.cel.program import CheckedExpression

# paths every Pod and Node from the API server has: metadata, spec and status (Go structs,
# always serialized), the identity the API server gives every object, a pod's namespace,
# and what the kubelet reports when it registers its node (the engine reads allocatable too)
ALWAYS_SET: Final = frozenset(
    {
        *(f"{root}.{part}" for root in ("pod", "node") for part in ("metadata", "spec", "status")),
        *(
            f"{root}.metadata.{field}"
            for root in ("pod", "node")
            for field in ("name", "uid", "creationTimestamp")
        ),
        "pod.metadata.namespace",
        "node.status.allocatable",
        "node.status.capacity",
    }
)


# the last step of a path: `.field` or `[index]`
_LAST_STEP: Final = re.compile(r"(\.[^.\[]+|\[[^\]]*\])$")


@dataclass(frozen=True, slots=True)
class UnguardedRead:
    """A plain selection of an optional field: `path` is what is read (`node.metadata.labels`),
    `field` its last step, `owner` the object type that holds it, at `line`:`column` of the
    expression."""

    path: str
    field: str
    owner: str
    line: int
    column: int

    @property
    def safe_form(self) -> str:
        """The same read with an optional selection: `node.metadata.?labels`."""
        head, _, _ = self.path.rpartition(".")
        return f"{head}.?{self.field}"


def unguarded_reads(expression: CheckedExpression) -> list[UnguardedRead]:
    """Every unguarded plain read of an optional Kubernetes field, once per path, in the
    order they appear in the source."""
    checked = expression.typed
    found: dict[str, UnguardedRead] = {}
    for node in _walk(checked.tree, frozenset(), checked):
        path = _path(node) or f"(...).{node.field}"
        if path in found:
            continue
        owner = checked.type_of(node.operand).name
        line, column = position(checked.source, node.offset)
        found[path] = UnguardedRead(path, node.field, owner, line, column)
    return sorted(found.values(), key=lambda r: (r.line, r.column))


def _walk(node: ast.Node, guarded: frozenset[str], checked: Checked) -> Iterator[ast.Select]:
    """The unguarded plain selections of optional fields under `node`, where `guarded` holds
    the paths a `has()` around it has made safe."""
    if isinstance(node, ast.Select):
        if node.test_only:
            return  # inside has(): reading is the question it asks
        if not node.optional and _optional_field(node, checked) and _path(node) not in guarded:
            yield node
        yield from _walk(node.operand, guarded, checked)
        return
    if isinstance(node, ast.Call):
        if node.function in ("_&&_", "_||_") and len(node.args) == 2:
            left, right = node.args
            yield from _walk(left, guarded | _tested(right), checked)
            yield from _walk(right, guarded | _tested(left), checked)
            return
        if node.function == "_?_:_" and len(node.args) == 3:
            condition, then, otherwise = node.args
            tested = guarded | _tested(condition)
            yield from _walk(condition, guarded, checked)
            yield from _walk(then, tested, checked)
            yield from _walk(otherwise, tested, checked)
            return
        children: list[ast.Node] = list(node.args)
        if node.target is not None:
            children.append(node.target)
        for child in children:
            yield from _walk(child, guarded, checked)
        return
    if isinstance(node, ast.Comprehension):
        for child in (node.target, *node.args):
            yield from _walk(child, guarded, checked)
    elif isinstance(node, ast.ListLit):
        for child in node.elements:
            yield from _walk(child, guarded, checked)
    elif isinstance(node, ast.MapLit):
        for entry in node.entries:
            yield from _walk(entry.key, guarded, checked)
            yield from _walk(entry.value, guarded, checked)


def _optional_field(node: ast.Select, checked: Checked) -> bool:
    owner = checked.type_of(node.operand)
    if owner.kind != "object" or _path(node) in ALWAYS_SET:
        return False
    optional = optional_fields(owner.name)
    return optional is not None and node.field in optional


def _tested(node: ast.Node) -> frozenset[str]:
    """The paths a `has()` anywhere in `node` asks about, with every path above them (a
    present `a.b.c` means a present `a.b`)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Select) and current.test_only:
            path = _path(current)
            while path:
                out.add(path)
                shorter = _LAST_STEP.sub("", path)
                path = shorter if shorter != path else None
            continue
        if isinstance(current, ast.Select):
            stack.append(current.operand)
        elif isinstance(current, ast.Call):
            stack.extend(current.args)
            if current.target is not None:
                stack.append(current.target)
        elif isinstance(current, ast.Comprehension):
            stack.extend((current.target, *current.args))
    return frozenset(out)


def _path(node: ast.Node) -> str | None:
    """`a.b[0].c` for a chain of plain selections and constant indexes from a name (None for
    anything else)."""
    steps: list[str] = []
    while True:
        if isinstance(node, ast.Select) and not node.optional:
            steps.append(f".{node.field}")
            node = node.operand
        elif _constant_index(node):
            assert isinstance(node, ast.Call)
            steps.append(f"[{_literal(node.args[1])}]")
            node = node.args[0]
        else:
            break
    if not isinstance(node, ast.Ident) or not steps:
        return None
    return node.name + "".join(reversed(steps))


def _constant_index(node: ast.Node) -> bool:
    return (
        isinstance(node, ast.Call)
        and node.function == "_[_]"
        and node.target is None
        and isinstance(node.args[1], ast.Literal)
        and type(node.args[1].value) in (int, str)
    )


def _literal(node: ast.Node) -> str:
    assert isinstance(node, ast.Literal)
    return repr(node.value)
