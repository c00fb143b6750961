"""Compile a checked tree (checker.py) into Python closures.

Every AST node becomes a closure `fn(activation) -> value`; a parent calls its children's
closures directly, so evaluating an expression is a handful of Python calls with no tree
walk and no conversion of the input. The planner takes names and types as the checker
resolved them; what it adds is speed: access chains indexed inline, constant calls folded,
constant regexes compiled once, and the reads of the expression recorded for its callers.

Errors are values in CEL: here they are exceptions, and the operators that absorb errors
(`&&`, `||`, `?:` and the `all` / `exists` macros) catch them.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Final

from policyext.cel import ast
from policyext.cel import operators as ops
from policyext.cel.celtypes import TIMESTAMP
from policyext.cel.chains import Step, compile_chain
from policyext.cel.checker import FUNCTION, LOCAL, TYPE_NAME, UNDECLARED, Checked
from policyext.cel.code import (
    ABSENT,
    COST,
    SIZED,
    Activation,
    Code,
    Fn,
    build,
    charge,
    constant,
    sized_cost,
)
from policyext.cel.comprehensions import compile_comprehension
from policyext.cel.errors import CELCheckError, CELError, CELEvalError, CostLimitExceeded
from policyext.cel.functions import CHARS_PER_UNIT, FunctionTable, MemberTable, Overload
from policyext.cel.lexer import position
from policyext.cel.lib.regex import compile_regex, regex_cost
from policyext.cel.limits import Limits
from policyext.cel.partial import PLACEHOLDER_PREFIX
from policyext.cel.timeutil import parse_timestamp
from policyext.cel.values import (
    CELType,
    Optional,
    UInt,
    cel_equals,
    no_such_overload,
    type_name,
)

_MISSING: Final = object()
_NUMERIC: Final = frozenset(("int", "uint", "double"))
_ARITHMETIC: Final = {
    "_+_": ops.add,
    "_-_": ops.sub,
    "_*_": ops.mul,
    "_/_": ops.div,
    "_%_": ops.mod,
}
_ORDERING: Final = {
    "_<_": (ops.less, operator.lt),
    "_<=_": (ops.less_equal, operator.le),
    "_>_": (ops.greater, operator.gt),
    "_>=_": (ops.greater_equal, operator.ge),
}


class Planner:
    def __init__(
        self,
        checked: Checked,
        variables: Mapping[str, object],
        functions: FunctionTable,
        limits: Limits,
    ) -> None:
        self.checked = checked
        self.source = checked.source
        self.variables = variables
        self.functions = functions
        self.limits = limits
        self.locals: dict[str, int] = {}  # comprehension variables in scope -> count
        self.uses_frame = False  # comprehensions or metered calls write into the activation
        self.references: set[str] = set()
        self.selections: set[tuple[str, str]] = set()
        # variables read as a whole, not only through constant fields (`variables[k]`)
        self.opaque: set[str] = set()
        # the constant paths read from variables: ("node", "status", "conditions")
        self.paths: set[tuple[str, ...]] = set()

    # -- errors ------------------------------------------------------------------------
    def error(self, message: str, node: ast.Node) -> CELCheckError:
        line, column = position(self.source, node.offset)
        return CELCheckError(message, line, column)

    def kind(self, node: ast.Node) -> str:
        """The kind of a node's static type (`int`, `list`, `dyn`...)."""
        return self.checked.type_of(node).kind

    # -- dispatch ----------------------------------------------------------------------
    def compile(self, node: ast.Node) -> Code:
        if isinstance(node, ast.Literal):
            return constant(node.value)
        if isinstance(node, ast.Ident):
            return self.ident(node)
        if isinstance(node, ast.Select):
            return self.select(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.ListLit):
            return self.list_literal(node)
        if isinstance(node, ast.MapLit):
            return self.map_literal(node)
        if isinstance(node, ast.Comprehension):
            return self.comprehension(node)
        raise self.error(f"unsupported expression {type(node).__name__}", node)

    # -- names -------------------------------------------------------------------------
    def ident(self, node: ast.Ident) -> Code:
        kind, name = self.checked.refs[node]
        if kind == LOCAL:
            return Code(operator.itemgetter(name), path=(name, ()))
        if kind == TYPE_NAME:
            return constant(CELType(name))
        if kind == UNDECLARED:
            return self.variable(name)
        self.references.add(name)
        self.opaque.add(name)
        if name.startswith(PLACEHOLDER_PREFIX):
            return self.placeholder(name)
        return self.variable(name)

    def resolved(self, node: ast.Node) -> Code | None:
        """A dotted name the checker resolved: a variable declared as `a.b`, or a type."""
        ref = self.checked.refs.get(node)
        if ref is None or not isinstance(node, ast.Select):
            return None
        kind, name = ref
        if kind == TYPE_NAME:
            return constant(CELType(name))
        self.references.add(name)
        return self.variable(name)

    def chain_root(self, node: ast.Node) -> Code:
        """The base of an access chain: a variable read through constant fields only."""
        if isinstance(node, ast.Ident) and self.is_global(node.name):
            name = node.name
            if name.startswith(PLACEHOLDER_PREFIX):
                return self.compile(node)  # read through `placeholder`, errors and all
            self.references.add(name)
            return self.variable(name)
        return self.compile(node)

    def placeholder(self, name: str) -> Code:
        """A pod-side part's value in a residual (partial.py). The part may have failed for
        this pod: its error is then the value, raised where the residual reads it, so the
        residual fails exactly where the whole expression would have (and not where `&&`
        or `||` never looks)."""

        def read(a: Activation) -> object:
            try:
                value = a[name]
            except KeyError:
                raise CELEvalError(f"no such attribute: '{name}' is not bound") from None
            if isinstance(value, CELError):
                raise value.with_traceback(None)
            return value

        return Code(read)

    def variable(self, name: str) -> Code:
        def read(a: Activation) -> object:
            try:
                return a[name]
            except KeyError:
                raise CELEvalError(f"no such attribute: '{name}' is not bound") from None

        return Code(read, path=(name, ()))

    # -- selection ---------------------------------------------------------------------
    def select(self, node: ast.Select) -> Code:
        resolved = self.resolved(node)
        if resolved is not None:
            return resolved
        field = node.field
        if node.test_only:
            operand = self.compile(node.operand)
            self.note_selection(node.operand, field)
            fn = operand.fn

            def has(a: Activation) -> bool:
                v = fn(a)
                if type(v) is dict:
                    return field in v
                return ops.has_field(v, field)

            return Code(has, cost=operand.cost + 1)
        return self.access_chain(node)

    def is_global(self, name: str) -> bool:
        """A declared variable not shadowed by a macro's variable."""
        return name in self.variables and name not in self.locals

    def note_selection(self, operand: ast.Node, field: str) -> None:
        if isinstance(operand, ast.Ident) and self.is_global(operand.name):
            self.selections.add((operand.name, field))

    def access_chain(self, node: ast.Node) -> Code:
        code = self.chain(node)
        if _reads_timestamp_field(node, self.checked):
            return _as_timestamp(code)
        return code

    def chain(self, node: ast.Node) -> Code:
        steps: list[Step] = []  # from the innermost step outwards
        while ast.is_chain_step(node) and node not in self.checked.refs:
            if isinstance(node, ast.Select):
                steps.append((True, node.field, node.optional))
                node = node.operand
            else:
                assert isinstance(node, ast.Call)
                key = node.args[1]
                assert isinstance(key, ast.Literal)
                steps.append((False, str(key.value), node.function == "_[?_]"))
                node = node.args[0]
        steps.reverse()
        base = self.chain_root(node)
        if isinstance(node, ast.Ident) and self.is_global(node.name):
            self.selections.add((node.name, steps[0][1]))
            self.paths.add((node.name, *(key for _, key, _ in steps)))
        return compile_chain(base, steps)

    # -- calls -------------------------------------------------------------------------
    def call(self, node: ast.Call) -> Code:
        name = node.function
        if node.target is None:
            special = _SPECIAL_OPERATORS.get(name)
            if special is not None:
                return special(self, node)
            return self.global_call(name, node.args, node)
        ref = self.checked.refs.get(node)
        if ref is not None and ref[0] == FUNCTION:
            # positions point at the start of the qualified name, as for any global call
            return self.global_call(ref[1], node.args, _root(node.target))
        return self.member_call(node)

    def args(self, nodes: list[ast.Node]) -> list[Code]:
        return [self.compile(n) for n in nodes]

    def global_call(self, name: str, arg_nodes: list[ast.Node], node: ast.Node) -> Code:
        overload = self.functions.find_global(name, len(arg_nodes))
        if overload is None:
            known = name in self.functions.global_names()
            return self.unknown_function(name, known, self.args(arg_nodes), node)
        args = self.args(arg_nodes)
        special = self.specialize(_specialize_global, name, args, node)
        if special is not None:
            return special
        return self.apply(overload, args, node)

    def member_call(self, node: ast.Call) -> Code:
        assert node.target is not None
        name = node.function
        table = self.functions.find_member(name, len(node.args))
        if table is None:
            known = name in self.functions.member_names()
            args = [self.compile(node.target), *self.args(node.args)]
            return self.unknown_function(name, known, args, node)
        target = self.compile(node.target)
        args = self.args(node.args)
        special = self.specialize(_specialize_member, name, [target, *args], node)
        if special is not None:
            return special
        return self.apply_member(name, table, target, args)

    def unknown_function(self, name: str, known: bool, args: list[Code], node: ast.Node) -> Code:
        """Unchecked (cel-spec's disable_check; the checker refuses it otherwise): an
        evaluation error."""
        if known:
            message = f"found no matching overload for '{name}' applied to {len(args)} argument(s)"
        else:
            message = f"undeclared reference to function '{name}'"
        fns = [a.fn for a in args]

        def fail(a: Activation) -> object:
            for f in fns:  # an argument's own error comes first
                f(a)
            raise CELEvalError(f"no such overload: {message}")

        return Code(fail)

    def specialize(
        self,
        specializer: Callable[[str, list[Code]], Code | None],
        name: str,
        args: list[Code],
        node: ast.Node,
    ) -> Code | None:
        """A closure written for this call (constant regex, orValue), if there is one."""
        try:
            code = specializer(name, args)
        except CELEvalError as e:  # e.g. an invalid constant regex: a load-time error
            if not _pattern_is_literal(node):
                # as in Kubernetes, only a pattern written as a literal is checked when
                # the rule is compiled; one an expression builds fails when evaluated
                return None
            raise self.error(e.message, node) from None
        if code is not None and name == "matches":
            self.uses_frame = True  # it charges the cost of the match
        return code

    def apply(self, overload: Overload, args: list[Code], node: ast.Node) -> Code:
        impl = overload.impl
        fns = [a.fn for a in args]
        cost_fn = overload.cost
        size_fn = overload.size
        fn: Fn
        if size_fn is not None:
            self.uses_frame = True

            def fn(a: Activation) -> object:
                values = [f(a) for f in fns]
                if cost_fn is not None:
                    charge(a, cost_fn(*values))
                return build(a, size_fn, impl, values)  # what it builds, before it does

        elif cost_fn is not None:
            self.uses_frame = True

            def fn(a: Activation) -> object:
                values = [f(a) for f in fns]
                charge(a, cost_fn(*values))
                result = impl(*values)
                if type(result) in SIZED:  # what it built, as cel-go charges results
                    charge(a, sized_cost(result))
                return result

        elif len(fns) == 0:
            fn = lambda _a: impl()  # noqa: E731
        elif len(fns) == 1:
            (f0,) = fns
            fn = lambda a: impl(f0(a))  # noqa: E731
        elif len(fns) == 2:
            f0, f1 = fns
            fn = lambda a: impl(f0(a), f1(a))  # noqa: E731
        else:
            fn = lambda a: impl(*[f(a) for f in fns])  # noqa: E731
        return self.fold(Code(fn, cost=1 + sum(a.cost for a in args)), args)

    def apply_member(self, name: str, table: MemberTable, target: Code, args: list[Code]) -> Code:
        by_type = table.by_type
        fallback = table.fallback
        target_fn = target.fn
        fns = [a.fn for a in args]
        overloads = [*by_type.values(), *([fallback] if fallback is not None else [])]
        metered = any(o.cost is not None or o.size is not None for o in overloads)
        if metered:
            self.uses_frame = True

        def resolve(t: object) -> Overload:
            overload = by_type.get(type(t), fallback)
            if overload is None:
                raise no_such_overload(name, t)
            return overload

        fn: Fn
        if metered:

            def fn(a: Activation) -> object:
                t = target_fn(a)
                overload = resolve(t)
                values = [f(a) for f in fns]
                if overload.cost is not None:
                    charge(a, overload.cost(t, *values))
                size = overload.size
                if size is not None:  # what it builds, before it does: code.build, inline
                    meter = a[COST]
                    bound = size(meter[1] - meter[0], t, *values)
                    meter[0] += bound
                    if meter[0] > meter[1]:
                        raise CostLimitExceeded(
                            f"evaluation cost budget of {meter[1]} units exceeded"
                        )
                    try:
                        result = overload.impl(t, *values)
                    except BaseException:
                        meter[0] -= bound
                        raise
                    kind = type(result)  # sized_cost, inline: this is per call
                    used = (
                        len(result)  # type: ignore[arg-type]
                        if kind is list
                        else len(result) // CHARS_PER_UNIT  # type: ignore[arg-type]
                        if kind is str or kind is bytes
                        else 0
                    )
                    if used > bound:
                        charge(a, used - bound)
                    else:
                        meter[0] -= bound - used
                    return result
                result = overload.impl(t, *values)
                if type(result) in SIZED:
                    charge(a, sized_cost(result))
                return result

        elif len(fns) == 0:

            def fn(a: Activation) -> object:
                t = target_fn(a)
                return resolve(t).impl(t)

        elif len(fns) == 1:
            (f0,) = fns

            def fn(a: Activation) -> object:
                t = target_fn(a)
                return resolve(t).impl(t, f0(a))

        else:

            def fn(a: Activation) -> object:
                t = target_fn(a)
                return resolve(t).impl(t, *[f(a) for f in fns])

        code = Code(fn, cost=1 + target.cost + sum(a.cost for a in args))
        return self.fold(code, [target, *args])

    def fold(self, code: Code, args: list[Code]) -> Code:
        """Evaluate a call of constants once, at compile time (errors stay runtime errors)."""
        if not all(a.const for a in args):
            return code
        try:
            value = code.fn({COST: [0, self.limits.cost_budget]})
        except Exception:  # an error value: raised when (and if) the call is evaluated
            return code
        return constant(value)

    # -- operators ---------------------------------------------------------------------
    def logical(self, node: ast.Call) -> Code:
        """`&&` / `||` over all operands of a chain: the result is decided by any operand
        that decides it (false for &&, true for ||), whatever errors the others raise."""
        is_and = node.function == "_&&_"
        operands: list[ast.Node] = []
        _flatten(node, node.function, operands)
        codes = [self.compile(o) for o in operands]
        decisive = not is_and  # && is decided by false, || by true
        consts = [c for c in codes if c.const]
        if any(c.value is decisive for c in consts):
            return constant(decisive)
        codes = [c for c in codes if not (c.const and c.value is (not decisive))]
        if not codes:
            return constant(not decisive)
        fns = [c.fn for c in codes]
        cost = sum(c.cost for c in codes) + 1

        def run(a: Activation) -> bool:
            error: BaseException | None = None
            for f in fns:
                try:
                    v = f(a)
                except CostLimitExceeded:
                    raise  # the budget is spent: no operand may absorb that
                except Exception as e:
                    if error is None:
                        # without its traceback, which refers to this frame: kept in a
                        # local, it would make a cycle holding the activation (the pod,
                        # the node) until the cycle collector runs
                        error = e.with_traceback(None)
                    continue
                if v is decisive:
                    return decisive  # type: ignore[no-any-return]
                if v is not (not decisive) and error is None:
                    error = no_such_overload(node.function, v)
            if error is not None:
                try:
                    raise error
                finally:
                    error = None  # the same: the raised error's traceback has this frame
            return not decisive

        if len(fns) == 2:
            f0, f1 = fns

            def run2(a: Activation) -> bool:
                try:
                    v = f0(a)
                except CostLimitExceeded:
                    raise
                except Exception:
                    v = _MISSING
                if v is decisive:
                    return decisive  # type: ignore[no-any-return]
                if type(v) is bool:
                    w = f1(a)
                    if type(w) is bool:
                        return w
                return run(a)  # the rare paths: an error or a non-bool somewhere

            return Code(run2, cost=cost)
        return Code(run, cost=cost)

    def conditional(self, node: ast.Call) -> Code:
        cond, then, otherwise = self.args(node.args)
        if cond.const:
            if cond.value is True:
                return then
            if cond.value is False:
                return otherwise
        c, t, o = cond.fn, then.fn, otherwise.fn

        def choose(a: Activation) -> object:
            v = c(a)
            if v is True:
                return t(a)
            if v is False:
                return o(a)
            raise no_such_overload("_?_:_", v)

        return Code(choose, cost=cond.cost + max(then.cost, otherwise.cost))

    def negation(self, node: ast.Call) -> Code:
        (arg,) = self.args(node.args)
        f = arg.fn

        def negate(a: Activation) -> bool:
            v = f(a)
            if v is True:
                return False
            if v is False:
                return True
            raise no_such_overload("!_", v)

        return self.fold(Code(negate, cost=arg.cost + 1), [arg])

    def minus(self, node: ast.Call) -> Code:
        (arg,) = self.args(node.args)
        f = arg.fn
        return self.fold(Code(lambda a: ops.negate(f(a)), cost=arg.cost + 1), [arg])

    def equality(self, node: ast.Call) -> Code:
        left, right = self.args(node.args)
        negated = node.function == "_!=_"
        if right.const and not left.const:
            fn = _equals_constant(left, right.value)
        elif left.const and not right.const:
            fn = _equals_constant(right, left.value)
        else:
            lf, rf = left.fn, right.fn
            fn = lambda a: cel_equals(lf(a), rf(a))  # noqa: E731
        if negated:
            positive = fn
            fn = lambda a: not positive(a)  # noqa: E731
        return self.fold(Code(fn, cost=left.cost + right.cost + 1), [left, right])

    def ordering(self, node: ast.Call) -> Code:
        left, right = self.args(node.args)
        generic, native = _ORDERING[node.function]
        lf, rf = left.fn, right.fn

        def compare(a: Activation) -> bool:
            x = lf(a)
            y = rf(a)
            tx = type(x)
            if tx is type(y):
                if tx is int or tx is str:
                    return native(x, y)  # type: ignore[no-any-return]
                if tx is float:
                    found: bool = native(x, y)
                    if found or (x == x and y == y):  # noqa: PLR0124 (false for NaN only)
                        return found
                    raise CELEvalError(ops.NAN_UNORDERED)
            return generic(x, y)

        return self.fold(Code(compare, cost=left.cost + right.cost + 1), [left, right])

    def arithmetic(self, node: ast.Call) -> Code:
        left, right = self.args(node.args)
        apply = _ARITHMETIC[node.function]
        lf, rf = left.fn, right.fn
        numbers = self.kind(node.args[0]) in _NUMERIC and self.kind(node.args[1]) in _NUMERIC
        if node.function == "_+_" and not numbers:
            # concatenation: charged by the size it builds before it builds it (known from
            # the operands' sizes), so doubling cannot run away
            self.uses_frame = True

            def concatenate(a: Activation) -> object:
                x = lf(a)
                y = rf(a)
                t = type(x)
                if t is str or t is bytes:
                    if type(y) is t:
                        charge(a, (len(x) + len(y)) // CHARS_PER_UNIT)
                elif (t is list or t is tuple) and (type(y) is list or type(y) is tuple):
                    charge(a, len(x) + len(y))
                return apply(x, y)

            code = Code(concatenate, cost=left.cost + right.cost + 1)
        else:
            code = Code(lambda a: apply(lf(a), rf(a)), cost=left.cost + right.cost + 1)
        return self.fold(code, [left, right])

    def membership(self, node: ast.Call) -> Code:
        item, container = self.args(node.args)
        itf = item.fn
        if container.const and type(container.value) in (list, tuple):
            values = container.value
            if all(type(v) is str for v in values):  # type: ignore[attr-defined]
                strings = frozenset(values)  # type: ignore[call-overload]

                def in_strings(a: Activation) -> bool:
                    v = itf(a)
                    if type(v) is str:
                        return v in strings
                    return ops.contains(values, v)

                return Code(in_strings, cost=item.cost + 1)
        cf = container.fn
        self.uses_frame = True

        def member(a: Activation) -> bool:
            values = cf(a)
            if type(values) is list:
                charge(a, len(values))  # a linear scan
            return ops.contains(values, itf(a))

        code = Code(member, cost=item.cost + container.cost)
        return self.fold(code, [item, container])

    def index(self, node: ast.Call) -> Code:
        if ast.is_chain_step(node):
            return self.access_chain(node)
        container, key = self.args(node.args)
        cf, kf = container.fn, key.fn
        code = Code(lambda a: ops.index(cf(a), kf(a)), cost=container.cost + key.cost + 1)
        return self.fold(code, [container, key])

    def optional_index(self, node: ast.Call) -> Code:
        if ast.is_chain_step(node):
            return self.access_chain(node)
        container, key = self.args(node.args)
        cf, kf = container.fn, key.fn
        code = Code(
            lambda a: ops.optional_index(cf(a), kf(a)),
            cost=container.cost + key.cost + 1,
        )
        return self.fold(code, [container, key])

    # -- literals ----------------------------------------------------------------------
    def list_literal(self, node: ast.ListLit) -> Code:
        elements = self.args(node.elements)
        fns = [e.fn for e in elements]
        cost = sum(e.cost for e in elements) + 1
        if node.optional_indices:
            optional = [i in node.optional_indices for i in range(len(fns))]

            def build_optional(a: Activation) -> list[object]:
                out = []
                for f, is_optional in zip(fns, optional, strict=True):
                    v = f(a)
                    if not is_optional:
                        out.append(v)
                    elif type(v) is not Optional:
                        raise no_such_overload("optional list element", v)
                    elif v.has_value():
                        out.append(v.value)
                return out

            return self.fold(Code(build_optional, cost=cost), elements)
        if all(e.const for e in elements):
            return constant([e.value for e in elements])
        return Code(lambda a: [f(a) for f in fns], cost=cost)

    def map_literal(self, node: ast.MapLit) -> Code:
        keys = [self.compile(e.key) for e in node.entries]
        values = [self.compile(e.value) for e in node.entries]
        entries = [
            (k.fn, v.fn, e.optional) for k, v, e in zip(keys, values, node.entries, strict=True)
        ]

        def build(a: Activation) -> dict[object, object]:
            out: dict[object, object] = {}
            for kf, vf, optional in entries:
                key = kf(a)
                if type(key) not in _KEY_TYPES:
                    raise CELEvalError(f"unsupported map key type: {type_name(key)}")
                if key in out:
                    # as in Kubernetes, a key written twice keeps its last value
                    _same_key_type(out, key)
                elif type(key) is float and math.isnan(key):
                    key = float("nan")  # each NaN a key of its own, as in Go's maps
                value = vf(a)
                if optional:
                    if type(value) is not Optional:
                        raise no_such_overload("optional map entry", value)
                    if not value.has_value():
                        out.pop(key, None)  # cel-go removes the key an absent entry names
                        continue
                    value = value.value
                out[key] = value
            return out

        cost = sum(k.cost + v.cost for k, v in zip(keys, values, strict=True)) + 1
        return self.fold(Code(build, cost=cost), keys + values)

    # -- comprehensions ----------------------------------------------------------------
    def comprehension(self, node: ast.Comprehension) -> Code:
        self.uses_frame = True
        target = self.compile(node.target)
        names = [node.var] + ([node.var2] if node.var2 else [])
        bodies = [self.with_locals(names, arg) for arg in node.args]
        return compile_comprehension(node, target, bodies)

    def with_locals(self, names: list[str], body: ast.Node) -> Code:
        """Compile a macro's body with its variables in scope."""
        for name in names:
            self.locals[name] = self.locals.get(name, 0) + 1
        try:
            return self.compile(body)
        finally:
            for name in names:
                self.locals[name] -= 1
                if not self.locals[name]:
                    del self.locals[name]


_KEY_TYPES: Final = frozenset((str, int, UInt, bool, float, type(None)))


def _same_key_type(out: dict[object, object], key: object) -> None:
    """A key already in the map under the same value must be of the same type: Python's
    dict equates 1, 1u, 1.0 and true, which are four keys to CEL (and to Kubernetes)."""
    stored = next(k for k in out if k == key)
    if type(stored) is not type(key):
        raise CELEvalError(
            f"a map cannot hold both the keys {_key_text(stored)} and {_key_text(key)}"
        )


def _key_text(key: object) -> str:
    if type(key) is bool:
        return "true" if key else "false"
    return repr(key) if type(key) is not str else f"'{key}'"


def _root(node: ast.Node) -> ast.Node:
    while isinstance(node, ast.Select):
        node = node.operand
    return node


def _reads_timestamp_field(node: ast.Node, checked: Checked) -> bool:
    """A chain that ends at a `date-time` field of a Kubernetes object (`creationTimestamp`):
    the JSON holds a string, CEL sees a timestamp, as in Kubernetes."""
    if not isinstance(node, ast.Select):
        return False
    result = checked.type_of(node)
    if result.kind == "optional_type":
        result = result.element
    operand = checked.type_of(node.operand)
    if operand.kind == "optional_type":
        operand = operand.element
    return result == TIMESTAMP and operand.kind == "object"


def _as_timestamp(code: Code) -> Code:
    """The chain's string read as a timestamp (a value already one passes through)."""
    fn = code.fn

    def read(a: Activation) -> object:
        v = fn(a)
        if type(v) is str:
            return parse_timestamp(v)
        if type(v) is Optional and v.has_value() and type(v.value) is str:
            return Optional(parse_timestamp(v.value))
        return v

    return Code(read, cost=code.cost)


def _flatten(node: ast.Node, function: str, out: list[ast.Node]) -> None:
    if isinstance(node, ast.Call) and node.function == function and node.target is None:
        for arg in node.args:
            _flatten(arg, function, out)
    else:
        out.append(node)


def _equals_constant(code: Code, value: object) -> Fn:
    """`x == c` for a constant c, without the general equality where Python's own `==`
    already means what CEL means."""
    fn = code.fn
    tv = type(value)
    if tv is str or tv is bytes:
        if code.path is not None and len(code.path[1]) in (1, 2):
            return _path_equals(code.path, fn, value)
        return lambda a: fn(a) == value  # no other runtime value equals a str or bytes
    if value is None:
        return lambda a: fn(a) is None
    if tv is bool:
        return lambda a: fn(a) is value
    if tv is int or tv is float or tv is UInt:

        def number_equals(a: Activation) -> bool:
            v = fn(a)
            if type(v) is tv:
                return v == value
            return type(v) in _NUMBER_TYPES and cel_equals(v, value)

        return number_equals
    return lambda a: cel_equals(fn(a), value)


_NUMBER_TYPES: Final = frozenset((int, UInt, float))
_FAST_ERRORS: Final = (KeyError, TypeError, IndexError)


def _path_equals(path: tuple[str, tuple[str, ...]], fn: Fn, value: object) -> Fn:
    """`x.a == 'c'` indexing the activation inline (the most common rule of all)."""
    root, keys = path
    if len(keys) == 1:
        (k0,) = keys

        def equals1(a: Activation) -> bool:
            try:
                return a[root][k0] == value  # type: ignore[no-any-return]
            except _FAST_ERRORS:
                return fn(a) == value  # type: ignore[no-any-return]

        return equals1
    k0, k1 = keys

    def equals2(a: Activation) -> bool:
        try:
            return a[root][k0][k1] == value  # type: ignore[no-any-return]
        except _FAST_ERRORS:
            return fn(a) == value  # type: ignore[no-any-return]

    return equals2


_SPECIAL_OPERATORS: Final[dict[str, Callable[[Planner, ast.Call], Code]]] = {
    "_&&_": Planner.logical,
    "_||_": Planner.logical,
    "_?_:_": Planner.conditional,
    "!_": Planner.negation,
    "-_": Planner.minus,
    "_==_": Planner.equality,
    "_!=_": Planner.equality,
    "_<_": Planner.ordering,
    "_<=_": Planner.ordering,
    "_>_": Planner.ordering,
    "_>=_": Planner.ordering,
    "_+_": Planner.arithmetic,
    "_-_": Planner.arithmetic,
    "_*_": Planner.arithmetic,
    "_/_": Planner.arithmetic,
    "_%_": Planner.arithmetic,
    "@in": Planner.membership,
    "_[_]": Planner.index,
    "_[?_]": Planner.optional_index,
}


def _pattern_is_literal(node: ast.Node) -> bool:
    """Whether the pattern of `s.matches(p)`, `matches(s, p)` or `s.find(p, ...)` is a
    literal string (or `dyn()` of one)."""
    if not isinstance(node, ast.Call):
        return True
    position = 0 if node.target is not None else 1
    if len(node.args) <= position:
        return True
    pattern = node.args[position]
    while (  # cel-go plans `dyn(x)` as `x`: its regex is compiled with the program
        isinstance(pattern, ast.Call)
        and pattern.function == "dyn"
        and pattern.target is None
        and len(pattern.args) == 1
    ):
        pattern = pattern.args[0]
    return isinstance(pattern, ast.Literal)


def _specialize_global(name: str, args: list[Code]) -> Code | None:
    if name == "matches" and len(args) == 2:
        return _constant_regex(args[0], args[1])
    return None


def _specialize_member(name: str, args: list[Code]) -> Code | None:
    """`args` holds the target first."""
    if name == "matches" and len(args) == 2:
        return _constant_regex(args[0], args[1])
    if name in ("find", "findAll") and len(args) >= 2:
        pattern = args[1]
        if pattern.const and type(pattern.value) is str:
            compile_regex(pattern.value)  # an invalid constant pattern fails at load time
        return None
    if name == "orValue" and len(args) == 2:
        return _or_value(args[0], args[1])
    if name == "hasValue" and len(args) == 1 and args[0].walk is not None:
        walk = args[0].walk
        return Code(lambda a: walk(a) is not ABSENT, cost=args[0].cost + 1)
    return None


def _or_value(target: Code, default: Code) -> Code:
    """`x.orValue(d)`; on an optional chain, without building the optional."""
    df = default.fn
    cost = target.cost + default.cost + 1
    if target.walk is not None:
        walk = target.walk

        def chain_or_value(a: Activation) -> object:
            v = walk(a)
            return df(a) if v is ABSENT else v

        return Code(chain_or_value, cost=cost)
    tf = target.fn

    def or_value(a: Activation) -> object:
        t = tf(a)
        if type(t) is not Optional:
            raise no_such_overload("orValue", t)
        return t.value if t.has_value() else df(a)

    return Code(or_value, cost=cost)


def _constant_regex(text: Code, pattern: Code) -> Code | None:
    """`s.matches('re')` with a constant pattern compiles the pattern once, at load time."""
    if not pattern.const or type(pattern.value) is not str:
        return None
    regex = compile_regex(pattern.value)  # an invalid pattern fails when the policy loads
    test = regex.matches
    tf = text.fn
    source = pattern.value

    def matches(a: Activation) -> bool:
        s = tf(a)
        if type(s) is not str:
            raise no_such_overload("matches", s, source)
        charge(a, regex_cost(s, source))
        return test(s)

    return Code(matches, cost=text.cost + 1)
