"""Function libraries: how CEL functions are declared and dispatched.

A `Library` declares global functions (`quantity(s)`, `math.greatest(a, b)`) and member
functions (`s.lowerAscii()`, `q.compareTo(r)`). Implementations are plain Python callables
over runtime values (see `values`); a member implementation receives the target first.

Member functions are dispatched on the Python type of the target, so several libraries may
declare the same name for different types (`compareTo` for Quantity and Semver, `indexOf`
for strings and lists). Global functions dispatch on their arguments themselves.

Implementations signal failure by raising `CELEvalError` (use `no_such_overload` for
arguments of the wrong type). The checker uses the declared names and arities to reject
unknown functions when a policy is loaded, and the declared result type to infer the type
of an expression.

`cost`, when given, returns the extra cost units of one call from its arguments (the target
first for members), for work that grows with the size of the input, as cel-go counts it.

What a call builds is charged too: a unit per element of a list, per CHARS_PER_UNIT
characters of a string or bytes. `size`, when given, returns an upper bound of that charge
computed from the arguments before the call, so that the budget refuses a result before it
is built (`s.replace('a', big)` could otherwise build gigabytes first). It is called as
`size(room, *args)`: `room` is what is left of the budget, and the bound may stop counting
once it is past it. The part of the bound the result did not use is given back, so what an
evaluation is charged is what it built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

Impl = Callable[..., object]
CostFn = Callable[..., int]
SizeFn = Callable[..., int]

# what building a string (or bytes) costs: a unit per this many characters (bytes)
CHARS_PER_UNIT = 10

# Static result types known to the checker. Library types use their own names.
DYN = "dyn"


@dataclass(frozen=True)
class Overload:
    """One declared function: a name, an arity (None: any number), an implementation."""

    name: str
    arity: int | None
    impl: Impl
    result: str = DYN
    cost: CostFn | None = None
    receiver: type | None = None  # for members: the target type; None: any target
    # the kinds each argument may have, checked where the argument's type is known
    # statically: "string", "int|uint|double"; None: not declared (anything goes)
    params: tuple[str, ...] | None = None
    size: SizeFn | None = None  # an upper bound of the charge for the result, before the call


@dataclass(eq=False)
class Library:
    """A named set of function declarations."""

    name: str
    globals: list[Overload] = field(default_factory=list)
    members: list[Overload] = field(default_factory=list)

    def function(
        self,
        name: str,
        arity: int | None,
        *,
        result: str = DYN,
        cost: CostFn | None = None,
        params: tuple[str, ...] | None = None,
        size: SizeFn | None = None,
    ) -> Callable[[Impl], Impl]:
        """Declare a global function: `@lib.function("quantity", 1, result="Quantity")`."""

        def register(impl: Impl) -> Impl:
            self.globals.append(Overload(name, arity, impl, result, cost, params=params, size=size))
            return impl

        return register

    def member(
        self,
        name: str,
        arity: int | None,
        *,
        receiver: type | tuple[type, ...] | None,
        result: str = DYN,
        cost: CostFn | None = None,
        params: tuple[str, ...] | None = None,
        size: SizeFn | None = None,
    ) -> Callable[[Impl], Impl]:
        """Declare a member function, called as `target.name(args)`; `arity` excludes the
        target. `receiver` is the Python type (or types) of the target it serves."""

        def register(impl: Impl) -> Impl:
            receivers: tuple[type | None, ...]
            if receiver is None:
                receivers = (None,)
            elif isinstance(receiver, tuple):
                receivers = receiver
            else:
                receivers = (receiver,)
            for r in receivers:
                self.members.append(Overload(name, arity, impl, result, cost, r, params, size))
            return impl

        return register


@dataclass(frozen=True)
class MemberTable:
    """All the implementations of one member function name and arity, by target type."""

    by_type: dict[type, Overload]
    fallback: Overload | None
    result: str


@dataclass(frozen=True)
class FunctionTable:
    """The functions of an environment, merged from its libraries."""

    globals: dict[tuple[str, int | None], Overload]
    members: dict[tuple[str, int | None], MemberTable]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_global_names", frozenset(n for n, _ in self.globals))
        object.__setattr__(self, "_member_names", frozenset(n for n, _ in self.members))

    def global_names(self) -> frozenset[str]:
        return self._global_names  # type: ignore[attr-defined, no-any-return]

    def member_names(self) -> frozenset[str]:
        return self._member_names  # type: ignore[attr-defined, no-any-return]

    def find_global(self, name: str, arity: int) -> Overload | None:
        return self.globals.get((name, arity)) or self.globals.get((name, None))

    def find_member(self, name: str, arity: int) -> MemberTable | None:
        return self.members.get((name, arity)) or self.members.get((name, None))


def merge_libraries(libraries: Iterable[Library]) -> FunctionTable:
    """Merge libraries; a later library overrides an earlier one for the same signature."""
    globals_: dict[tuple[str, int | None], Overload] = {}
    members: dict[tuple[str, int | None], dict[type | None, Overload]] = {}
    for lib in libraries:
        for g in lib.globals:
            globals_[(g.name, g.arity)] = g
        for m in lib.members:
            members.setdefault((m.name, m.arity), {})[m.receiver] = m
    tables: dict[tuple[str, int | None], MemberTable] = {}
    for key, by_receiver in members.items():
        fallback = by_receiver.pop(None, None)
        by_type = {t: o for t, o in by_receiver.items() if t is not None}
        results = {o.result for o in by_type.values()} | ({fallback.result} if fallback else set())
        result = results.pop() if len(results) == 1 else DYN
        tables[key] = MemberTable(by_type, fallback, result)
    return FunctionTable(globals_, tables)
