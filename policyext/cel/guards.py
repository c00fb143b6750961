"""Reads that fail on a pod or node without what they read: a warning at write time.

Kubernetes' OpenAPI schema lists, for each object type, the fields an object always has
(`required`); any other may be absent, and a plain selection of an absent field (`.labels`
on a node without labels) is an evaluation error, so the rule fails on that node. A map of
an object (labels, annotations, a node selector, resources) holds only the keys it was given:
`labels['zone']` or `labels.zone` is an error on a node without that label. This module finds,
in a checked expression, every such read that nothing makes safe:

- an optional selection or index (`.?field`, `[?'key']`, and everything chained after one);
- a test that answers the question without failing on it: `has(a.b)` (of the same path or
  one below it), `'key' in map`, `a.?b.hasValue()`, with `!`, `&&`, `||` and `? :` over them;
- where the test holds: the other operand of `&&` (CEL's `&&` absorbs an error when the other
  side is false; `||` when it is true: there, where the test fails), the branch of `? :` its
  condition selects, the body of a comprehension over a map's own keys (`m.all(k, m[k] ...)`).
  The left operand leans on the right only if the right cannot fail by itself: two tests
  that each read what the other tests (`has(a.b.c) && has(a.b.d)`) fail together.

`has(a.b.c)` reads `a.b` as any selection does: only its last step is the question. The
analysis follows these forms exactly; what it does not follow it does not report (a key
computed at run time, `labels[a + b]`; a map reached through a variable, `cel.bind(l, labels,
l.zone)`; an index past a list's end), and it warns only of reads that can fail (but past
`_STEPS`, below, it no longer sees a left operand that only its right one guards).

A few paths are taken as present though the schema leaves them optional (`ALWAYS_SET`):
every Pod and Node read from the API server has them, and a warning on nearly every rule
would hide the ones that matter.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from policyext.cel import ast
from policyext.cel.celtypes import Type
from policyext.cel.checker import Checked
from policyext.cel.k8stypes import optional_fields
from policyext.cel.lexer import position
from policyext.cel.program import CheckedExpression

# paths every Pod and Node from the API server has: metadata, spec and status (Go structs,
# always serialized), the identity the API server gives every object, a pod's namespace,
# and what the kubelet reports when it registers its node (the engine reads allocatable too,
# and kube-scheduler counts its cpu, memory and pods on every node)
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
        # the kubelet sets its conditions in the Node it registers (Ready among them)
        "node.status.conditions",
        *(
            f"node.status.{part}[{key!r}]"
            for part in ("allocatable", "capacity")
            for key in ("cpu", "memory", "pods")
        ),
    }
)

# a path as steps: the root name, then `.field` or `[key]` (a map's key, however written:
# `m.k`, `m['k']`, `m.?k`, `m[?'k']` are all `['k']`; a key that is a name is `[name]`)
Path = tuple[str, ...]


# what a test shows when it holds: the paths then present, or NEVER when it cannot hold
# (`false` being true), so that what it would guard never counts
Facts = frozenset[Path] | None
NEVER: Final = None


def _all_of(a: Facts, b: Facts) -> Facts:
    """What two tests that both hold show."""
    return NEVER if a is NEVER or b is NEVER else a | b


def _any_of(a: Facts, b: Facts) -> Facts:
    """What one of two tests, either, shows when it holds."""
    if a is NEVER:
        return b
    if b is NEVER:
        return a
    return a & b


@dataclass(frozen=True, slots=True)
class UnguardedRead:
    """A read that fails on an object without what it reads: `path` as written
    (`node.metadata.labels`, `node.metadata.labels['zone']`), `field` the optional field it
    selects (`labels`: empty when the field is guarded and only the key is not), `owner` the
    object type that holds the field or the map, `key` the map's key when the read is of a
    key (`'zone'`: empty for a field) and `map` the map (`node.metadata.labels`), at
    `line`:`column` of the expression."""

    path: str
    field: str
    owner: str
    line: int
    column: int
    key: str = ""
    map: str = ""

    @property
    def map_path(self) -> str:
        """The map a key is read from (`node.metadata.labels`); the path itself for a field."""
        return self.map or self.path

    @property
    def safe_form(self) -> str:
        """The same read made optional: `node.metadata.?labels`, `node.metadata.?labels[?'zone']`,
        `node.metadata.labels[?'zone']`."""
        head = self.map_path
        if self.field:
            before, _, _ = head.rpartition(".")
            head = f"{before}.?{self.field}"
        return f"{head}[?{self.key}]" if self.key else head


def unguarded_reads(expression: CheckedExpression) -> list[UnguardedRead]:
    """Every unguarded read of an optional Kubernetes field or of a map's key, once per path,
    in the order they appear in the source."""
    checked = expression.typed
    found: dict[str, UnguardedRead] = {}
    try:
        reads = list(_Walk(checked, lean_left=True).reads(checked.tree, frozenset()))
    except _TooLong:
        reads = list(_Walk(checked, lean_left=False).reads(checked.tree, frozenset()))
    for read in reads:
        if read.path not in found:
            found[read.path] = read
    return sorted(found.values(), key=lambda r: (r.line, r.column))


# the steps a walk may take before it gives up the left side's leaning on the right (which
# walks the right side twice at each `&&` and `||`: exponential in their nesting, where
# parentheses nest them to the right); the walk without it takes one step per node
_STEPS: Final = 20_000


class _TooLong(Exception):
    pass


class _Walk:
    def __init__(self, checked: Checked, *, lean_left: bool) -> None:
        self.checked = checked
        self.lean_left = lean_left
        self.steps = 0
        # what a test shows depends on the test alone: worked out once for each (a condition
        # nested in conditions is asked about for both of its values at each level)
        self.known_shown: dict[tuple[int, bool], Facts] = {}

    def reads(self, node: ast.Node, known: frozenset[Path]) -> Iterator[UnguardedRead]:
        """The unguarded reads under `node`, where `known` holds the paths the tests around it
        have shown present."""
        self.steps += 1
        if self.lean_left and self.steps > _STEPS:
            raise _TooLong
        if isinstance(node, ast.Select):
            if node.test_only:  # has(a.b): a is read, b is the question
                yield from self.reads(node.operand, known)
                return
            if not node.optional:
                yield from self.step(node, node.operand, known)
                return
            yield from self.reads(node.operand, known)
            return
        if isinstance(node, ast.Call):
            yield from self.call(node, known)
            return
        if isinstance(node, ast.Comprehension):
            yield from self.comprehension(node, known)
        elif isinstance(node, ast.ListLit):
            for child in node.elements:
                yield from self.reads(child, known)
        elif isinstance(node, ast.MapLit):
            for entry in node.entries:
                yield from self.reads(entry.key, known)
                yield from self.reads(entry.value, known)

    def step(
        self, node: ast.Node, operand: ast.Node, known: frozenset[Path]
    ) -> Iterator[UnguardedRead]:
        """A plain selection or constant index `node` of `operand`: a read of a field or of a
        key that may be absent, then the reads of the operand."""
        path = self.path(node, optional=False)
        field_read = self.optional_field(node, known)
        if field_read is not None:
            yield field_read
            yield from self.reads(operand, known)
            return
        key = self.key_of(node)
        if key is None or path is None or path in known or _text(path) in ALWAYS_SET:
            yield from self.reads(operand, known)
            return
        # a key that may be absent: if the map's own field may be too, one warning says both
        map_read = self.optional_field(operand, known)
        owner_node = operand.operand if isinstance(operand, ast.Select) else operand
        line, column = position(self.checked.source, node.offset)
        if map_read is not None:
            assert isinstance(operand, ast.Select)
            line, column = map_read.line, map_read.column
        map_path = self.display(operand)
        yield UnguardedRead(
            f"{map_path}[{key}]",
            map_read.field if map_read is not None else "",
            self.checked.type_of(owner_node).name,
            line,
            column,
            key,
            map_path,
        )
        inner = operand.operand if isinstance(operand, ast.Select) else operand
        yield from self.reads(inner, known)

    def call(self, node: ast.Call, known: frozenset[Path]) -> Iterator[UnguardedRead]:
        if node.function in ("_&&_", "_||_") and len(node.args) == 2:
            # `&&` absorbs an error beside a false, `||` beside a true: a side is guarded by
            # what the other shows when it does not decide the result
            holds = node.function == "_&&_"
            left, right = node.args
            yield from self.under(right, known, self.shown(left, holds))
            # the left side leans on the right only if the right cannot fail by itself (else
            # each would excuse the other's failure while both fail)
            if self.lean_left and next(self.reads(right, known), None) is None:
                yield from self.under(left, known, self.shown(right, holds))
            else:
                yield from self.reads(left, known)
            return
        if node.function == "_?_:_" and len(node.args) == 3:
            condition, then, otherwise = node.args
            yield from self.reads(condition, known)
            yield from self.under(then, known, self.shown(condition, True))
            yield from self.under(otherwise, known, self.shown(condition, False))
            return
        if node.function == "_[_]" and _index(node) and self.key_of(node) is not None:
            yield from self.step(node, node.args[0], known)
            return
        children: list[ast.Node] = list(node.args)
        if node.target is not None:
            children.append(node.target)
        for child in children:
            yield from self.reads(child, known)

    def under(
        self, node: ast.Node, known: frozenset[Path], shown: Facts
    ) -> Iterator[UnguardedRead]:
        """The reads of `node` where `shown` holds too (none where it never can: `node`'s
        value is never used, as in `false && x` or the branch a constant condition skips)."""
        if shown is not NEVER:
            yield from self.reads(node, known | shown)

    def comprehension(
        self, node: ast.Comprehension, known: frozenset[Path]
    ) -> Iterator[UnguardedRead]:
        yield from self.reads(node.target, known)
        bound = {node.var, *([node.var2] if node.var2 else [])}
        # what is known of the names outside says nothing of the loop's variables
        inside = frozenset(p for p in known if not bound & _names(p))
        target = self.path(node.target, optional=False)
        if (
            node.kind != "bind"
            and target is not None
            and self.checked.type_of(node.target).kind == "map"
        ):
            inside |= {(*target, f"[{node.var}]")}  # iterating a map gives its own keys
        for child in node.args:
            yield from self.reads(child, inside)

    def shown(self, test: ast.Node, value: bool) -> Facts:
        """The paths present whenever `test` evaluates to `value` without an error (NEVER
        when it cannot evaluate to `value`)."""
        key = (id(test), value)
        if key not in self.known_shown:
            self.known_shown[key] = self.worked_out(test, value)
        return self.known_shown[key]

    def worked_out(self, test: ast.Node, value: bool) -> Facts:
        if isinstance(test, ast.Literal) and type(test.value) is bool:
            return frozenset() if test.value == value else NEVER
        if isinstance(test, ast.Select) and test.test_only:
            path = self.path(test, optional=True)
            if path is None:
                return frozenset()
            # has(a.b.c) answered at all: a.b was there; answered true: a.b.c is
            return _with_prefixes(path if value else path[:-1])
        if not isinstance(test, ast.Call):
            return frozenset()
        args = test.args
        if test.function == "!_" and len(args) == 1:
            return self.shown(args[0], not value)
        if test.function in ("_&&_", "_||_") and len(args) == 2:
            left, right = (self.shown(a, value) for a in args)
            both = value == (test.function == "_&&_")
            return _all_of(left, right) if both else _any_of(left, right)
        if test.function == "_?_:_" and len(args) == 3:
            condition, then, otherwise = args
            return _any_of(
                _all_of(self.shown(condition, True), self.shown(then, value)),
                _all_of(self.shown(condition, False), self.shown(otherwise, value)),
            )
        if test.function == "@in" and len(args) == 2:
            item, container = args
            where = self.path(container, optional=True)
            key = _key_step(item, self)
            if where is None or _container_kind(self.checked.type_of(container)) != "map":
                return frozenset()
            if value and key is not None:
                return _with_prefixes((*where, key))
            return _with_prefixes(where)
        if test.function == "hasValue" and not args and test.target is not None and value:
            path = self.path(test.target, optional=True)
            return _with_prefixes(path) if path is not None else frozenset()
        return frozenset()

    def optional_field(self, node: ast.Node, known: frozenset[Path]) -> UnguardedRead | None:
        """`node` as a read of an optional field of a Kubernetes object, if nothing guards it."""
        if not isinstance(node, ast.Select) or node.optional or node.test_only:
            return None
        owner = self.checked.type_of(node.operand)
        if owner.kind != "object":
            return None
        optional = optional_fields(owner.name)
        if optional is None or node.field not in optional:
            return None
        path = self.path(node, optional=False)
        if path is not None and (path in known or _text(path) in ALWAYS_SET):
            return None
        display = self.display(node) if path is not None else f"(...).{node.field}"
        line, column = position(self.checked.source, node.offset)
        return UnguardedRead(display, node.field, owner.name, line, column)

    def key_of(self, node: ast.Node) -> str | None:
        """The key (`'zone'`) that a plain selection or constant index reads of a map of a
        Kubernetes object (None for anything else)."""
        if isinstance(node, ast.Select):
            if node.optional or node.test_only:
                return None
            container, key = node.operand, repr(node.field)
        elif isinstance(node, ast.Call) and node.function == "_[_]" and _index(node):
            container, key_node = node.args
            if not isinstance(key_node, ast.Literal) or type(key_node.value) is not str:
                step = _key_step(key_node, self)
                if step is None or not isinstance(key_node, ast.Ident):
                    return None
                key = key_node.name
            else:
                key = repr(key_node.value)
        else:
            return None
        if self.checked.type_of(container).kind != "map":
            return None
        # the map is a field of a Kubernetes object: labels, annotations, resources...
        if not isinstance(container, ast.Select) or container.test_only:
            return None
        holder = self.checked.type_of(container.operand)
        if holder.kind != "object" or optional_fields(holder.name) is None:
            return None
        return key

    def path(self, node: ast.Node, *, optional: bool) -> Path | None:
        """The steps of a chain of selections and indexes from a name (`optional`: the steps
        of `.?` and `[?]` count as plain ones), None for anything else."""
        steps: list[str] = []
        while True:
            if isinstance(node, ast.Select) and (optional or not node.optional):
                operand = node.operand
                if _container_kind(self.checked.type_of(operand)) == "map":
                    steps.append(f"[{node.field!r}]")
                else:
                    steps.append(f".{node.field}")
                node = operand
            elif (
                isinstance(node, ast.Call)
                and _index(node)
                and (optional or node.function == "_[_]")
            ):
                key = _key_step(node.args[1], self)
                if key is None:
                    return None
                steps.append(key)
                node = node.args[0]
            else:
                break
        if not isinstance(node, ast.Ident) or not steps:
            return None
        return (node.name, *reversed(steps))

    def display(self, node: ast.Node) -> str:
        """A plain chain as written: `node.metadata.labels.zone`, `labels['zone']`."""
        if isinstance(node, ast.Select):
            return f"{self.display(node.operand)}.{node.field}"
        if isinstance(node, ast.Call) and _index(node):
            key = node.args[1]
            shown = repr(key.value) if isinstance(key, ast.Literal) else self.display(key)
            return f"{self.display(node.args[0])}[{shown}]"
        if isinstance(node, ast.Ident):
            return node.name
        return "(...)"


def _index(node: ast.Call) -> bool:
    return node.function in ("_[_]", "_[?_]") and node.target is None and len(node.args) == 2


def _key_step(key: ast.Node, walk: _Walk) -> str | None:
    """`['zone']`, `[0]` or `[k]` for a constant key or a name's (None for a computed one)."""
    if isinstance(key, ast.Literal) and type(key.value) in (int, str):
        return f"[{key.value!r}]"
    path = walk.path(key, optional=False)
    if path is not None:
        return f"[{_text(path)}]"
    if isinstance(key, ast.Ident):
        return f"[{key.name}]"
    return None


def _container_kind(type_: Type) -> str:
    while type_.kind == "optional_type":
        type_ = type_.element
    return type_.kind


def _with_prefixes(path: Path) -> frozenset[Path]:
    return frozenset(path[:n] for n in range(1, len(path) + 1))


def _text(path: Path) -> str:
    return "".join(path)


def _names(path: Path) -> set[str]:
    """The names a path depends on: its root and the names used as keys."""
    names = {path[0]}
    for step in path[1:]:
        if step.startswith("[") and step[1:2] not in ("'", '"') and not step[1:2].isdigit():
            names.add(step[1:-1].split(".")[0].split("[")[0])
    return names
