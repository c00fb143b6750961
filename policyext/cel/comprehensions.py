"""The macros that loop (`all`, `exists`, `map`, `filter`, the two-variable forms, `sortBy`)
and those that bind a name (`cel.bind`, `optMap`, `optFlatMap`).

Each macro compiles to a loop written for it instead of cel-go's generic accumulator loop.
Loop variables live in the activation for the duration of the loop (saved and restored, so
nested loops may reuse a name), and every iteration charges the static cost of the loop body
to the evaluation's cost meter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from policyext.cel import ast
from policyext.cel import operators as ops
from policyext.cel.code import COST, Activation, Code, Fn
from policyext.cel.errors import CELEvalError, CostLimitExceeded
from policyext.cel.values import Optional, map_get, no_such_overload

_UNSET: Final = object()


def compile_comprehension(node: ast.Comprehension, target: Code, bodies: list[Code]) -> Code:
    """The macro's loop over the compiled target, with its compiled bodies."""
    builder = _BUILDERS[node.kind]  # the checker refused any other kind
    body_cost = sum(b.cost for b in bodies) + 1
    fn = builder(target.fn, node.var, node.var2, [b.fn for b in bodies], body_cost, COST)
    return Code(fn, cost=target.cost + body_cost)


Builder = Callable[[Fn, str, "str | None", list[Fn], int, object], Fn]


def _elements(
    a: Activation, collection: Any, macro: str, two: bool, cost: int, cost_key: object
) -> Iterable[Any]:
    """What a loop iterates: list elements or map keys, or with two variables (index,
    element) or (key, value) pairs. The whole loop is charged before it starts: at most what
    it will use (an `exists` may stop early), never less, so the budget always holds."""
    t = type(collection)
    if t is list or t is tuple:
        items: Iterable[Any] = enumerate(collection) if two else collection
    elif t is dict:
        items = collection.items() if two else collection
    else:
        raise no_such_overload(macro, collection)
    meter = a[cost_key]
    meter[0] += len(collection) * cost
    if meter[0] > meter[1]:
        raise CostLimitExceeded(f"evaluation cost budget of {meter[1]} units exceeded")
    return items


def _bind_names(a: Activation, var: str, var2: str | None) -> tuple[object, object]:
    return a.get(var, _UNSET), (a.get(var2, _UNSET) if var2 else _UNSET)


def _restore(a: Activation, var: str, var2: str | None, saved: tuple[object, object]) -> None:
    for name, old in ((var, saved[0]), (var2, saved[1])):
        if name is None:
            continue
        if old is _UNSET:
            a.pop(name, None)
        else:
            a[name] = old


def _quantifier(kind: str) -> Builder:
    """all / exists: decided by the first element that decides it, whatever errors others
    raise; otherwise the first error, if any."""
    decisive: bool = kind == "exists"
    undecisive: bool = not decisive

    def build(
        target: Fn, var: str, var2: str | None, bodies: list[Fn], cost: int, cost_key: object
    ) -> Fn:
        (pred,) = bodies
        two = var2 is not None

        def run(a: Activation) -> bool:
            items = _elements(a, target(a), kind, two, cost, cost_key)
            saved = _bind_names(a, var, var2)
            error: Exception | None = None
            try:
                for item in items:
                    if two:
                        a[var], a[var2] = item
                    else:
                        a[var] = item
                    try:
                        v = pred(a)
                    except CostLimitExceeded:
                        raise
                    except Exception as e:
                        # without its traceback, which refers to this frame: kept in a
                        # local, it would make a cycle holding the activation (the pod,
                        # the node) until the cycle collector runs
                        error = error or e.with_traceback(None)
                        continue
                    if v is decisive:
                        return decisive  # type: ignore[no-any-return]
                    if v is not undecisive:
                        error = error or no_such_overload(kind, v)
            finally:
                _restore(a, var, var2, saved)
            if error is not None:
                try:
                    raise error
                finally:
                    error = None  # the same: the raised error's traceback has this frame
            return undecisive

        return run

    return build


def _loop(
    target: Fn,
    var: str,
    var2: str | None,
    cost: int,
    cost_key: object,
    macro: str,
    step: Callable[[Activation, object, object], None],
) -> Callable[[Activation], None]:
    """Run `step(a, first, second)` for each element with the variables bound; errors
    propagate (the macros built on this are strict)."""
    two = var2 is not None

    def run(a: Activation) -> None:
        items = _elements(a, target(a), macro, two, cost, cost_key)
        saved = _bind_names(a, var, var2)
        try:
            for item in items:
                if two:
                    first, second = item
                    a[var] = first
                    a[var2] = second
                else:
                    first, second = item, None
                    a[var] = first
                step(a, first, second)
        finally:
            _restore(a, var, var2, saved)

    return run


def _keep_and_transform(bodies: list[Fn]) -> tuple[Fn | None, Fn]:
    """The bodies of map(x, [p,] t) and the transform macros: an optional filter first."""
    if len(bodies) == 1:
        return None, bodies[0]
    return bodies[0], bodies[1]


def _bool(v: object, macro: str) -> bool:
    if type(v) is not bool:
        raise no_such_overload(macro, v)
    return v


def _exists_one(
    target: Fn, var: str, var2: str | None, bodies: list[Fn], cost: int, cost_key: object
) -> Fn:
    (pred,) = bodies

    def run(a: Activation) -> bool:
        count = 0

        def step(act: Activation, _first: object, _second: object) -> None:
            nonlocal count
            if _bool(pred(act), "exists_one"):
                count += 1

        _loop(target, var, var2, cost, cost_key, "exists_one", step)(a)
        return count == 1

    return run


def _map(
    target: Fn, var: str, var2: str | None, bodies: list[Fn], cost: int, cost_key: object
) -> Fn:
    """map(x, t), map(x, p, t), filter(x, p), transformList(i, v, [p,] t)."""
    keep, transform = _keep_and_transform(bodies)

    def run(a: Activation) -> list[object]:
        out: list[object] = []

        def step(act: Activation, _first: object, _second: object) -> None:
            if keep is None or _bool(keep(act), "map"):
                out.append(transform(act))

        _loop(target, var, var2, cost, cost_key, "map", step)(a)
        return out

    return run


def _filter(
    target: Fn, var: str, var2: str | None, bodies: list[Fn], cost: int, cost_key: object
) -> Fn:
    (pred,) = bodies

    def run(a: Activation) -> list[object]:
        out: list[object] = []

        def step(act: Activation, first: object, _second: object) -> None:
            if _bool(pred(act), "filter"):
                out.append(first)

        _loop(target, var, var2, cost, cost_key, "filter", step)(a)
        return out

    return run


def _transform_map(
    target: Fn, var: str, var2: str | None, bodies: list[Fn], cost: int, cost_key: object
) -> Fn:
    """transformMap(k, v, [p,] t): the same keys (indexes for a list), transformed values."""
    keep, transform = _keep_and_transform(bodies)

    def run(a: Activation) -> dict[object, object]:
        out: dict[object, object] = {}

        def step(act: Activation, first: object, _second: object) -> None:
            if keep is None or _bool(keep(act), "transformMap"):
                out[first] = transform(act)

        _loop(target, var, var2, cost, cost_key, "transformMap", step)(a)
        return out

    return run


def _transform_map_entry(
    target: Fn, var: str, var2: str | None, bodies: list[Fn], cost: int, cost_key: object
) -> Fn:
    """transformMapEntry(k, v, [p,] t): t yields a map of entries to merge into the result."""
    keep, transform = _keep_and_transform(bodies)

    def run(a: Activation) -> dict[object, object]:
        out: dict[object, object] = {}

        def step(act: Activation, _first: object, _second: object) -> None:
            if keep is not None and not _bool(keep(act), "transformMapEntry"):
                return
            entry = transform(act)
            if type(entry) is not dict:
                raise no_such_overload("transformMapEntry", entry)
            for key, value in entry.items():
                if map_get(out, key)[0]:
                    raise CELEvalError(f"insert failed: key {key} already exists")
                out[key] = value

        _loop(target, var, var2, cost, cost_key, "transformMapEntry", step)(a)
        return out

    return run


def _sort_by(
    target: Fn, var: str, var2: str | None, bodies: list[Fn], cost: int, cost_key: object
) -> Fn:
    (key_fn,) = bodies

    def run(a: Activation) -> list[object]:
        pairs: list[tuple[object, object]] = []

        def step(act: Activation, first: object, _second: object) -> None:
            pairs.append((key_fn(act), first))

        collection = target(a)
        if type(collection) not in (list, tuple):
            raise no_such_overload("sortBy", collection)
        _loop(lambda _a: collection, var, var2, cost, cost_key, "sortBy", step)(a)
        keys = [k for k, _ in pairs]
        if keys:
            kind = type(keys[0])
            if any(type(k) is not kind for k in keys):
                raise CELEvalError("sortBy: keys must all be of one type")
            for k in keys[1:]:
                ops.compare(keys[0], k, "sortBy")
        order = sorted(range(len(pairs)), key=lambda i: pairs[i][0])  # type: ignore[arg-type, return-value]
        return [pairs[i][1] for i in order]

    return run


def _bind(
    target: Fn, var: str, _var2: str | None, bodies: list[Fn], _cost: int, _cost_key: object
) -> Fn:
    (body,) = bodies

    def run(a: Activation) -> object:
        saved = _bind_names(a, var, None)
        try:
            a[var] = target(a)
            return body(a)
        finally:
            _restore(a, var, None, saved)

    return run


def _opt_map(flat: bool) -> Builder:
    def build(
        target: Fn, var: str, _var2: str | None, bodies: list[Fn], _cost: int, _key: object
    ) -> Fn:
        (body,) = bodies
        macro = "optFlatMap" if flat else "optMap"

        def run(a: Activation) -> object:
            opt = target(a)
            if type(opt) is not Optional:
                raise no_such_overload(macro, opt)
            if not opt.has_value():
                return opt
            saved = _bind_names(a, var, None)
            try:
                a[var] = opt.value
                result = body(a)
            finally:
                _restore(a, var, None, saved)
            if not flat:
                return Optional(result)
            if type(result) is not Optional:
                raise no_such_overload(macro, result)
            return result

        return run

    return build


_BUILDERS: Final[dict[str, Builder]] = {
    "all": _quantifier("all"),
    "exists": _quantifier("exists"),
    "exists_one": _exists_one,
    "map": _map,
    "transformList": _map,
    "filter": _filter,
    "transformMap": _transform_map,
    "transformMapEntry": _transform_map_entry,
    "sortBy": _sort_by,
    "bind": _bind,
    "optMap": _opt_map(flat=False),
    "optFlatMap": _opt_map(flat=True),
}
