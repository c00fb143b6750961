"""A residual as a tree of column operations (`make_column_plan`), and its evaluation for
one request (`ColumnPlan`): in one step for a filter of a usual shape, by `decide` when the
kept values decide every row, else by `run`, whose unknown rows the engine evaluates
exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from policyext import cel
from policyext.cel import LOCAL, CELError, CostLimitExceeded, Quantity, placeholder, reads
from policyext.policy.columns.kept import NodeValue
from policyext.policy.columns.operators import (
    Arithmetic,
    Compare,
    Conditional,
    In,
    Literal,
    Logical,
    Not,
    Opaque,
    Param,
)
from policyext.policy.columns.quantities import Admits, QuantityCompare, admitted, clear_sides
from policyext.policy.columns.request import COST_SHARE, Costs, Operation, Rows
from policyext.policy.columns.values import (
    UNDECIDED,
    Column,
    Known,
    Scalar,
    all_unknown,
    broadcast,
)
from policyext.policy.masks import Mask, some
from policyext.policy.node_reads import reads_pods


class Unsupported(Exception):
    """The residual has a form that is not evaluated over columns."""


_LOGICAL: Final = {"_&&_": True, "_||_": False}
_QUANTITY_METHODS: Final = frozenset(("compareTo", "isGreaterThan", "isLessThan"))


class ColumnPlan:
    """A residual as column operations. `run` gives a Column (or a Scalar) whose unknown
    rows the caller evaluates exactly. A `partial` plan has operands of `&&` / `||` the
    columns do not evaluate (`Opaque`): it answers only where the operands before them
    decide every row (`false_rows`, `decided`), and `run` would leave the rest to the
    exact evaluator row by row, which the caller does better with its results kept per
    node version (engine.py)."""

    def __init__(
        self, root: Operation, node_values: list[NodeValue], parts: int, partial: bool
    ) -> None:
        self.root = root
        self.node_values = node_values
        self.partial = partial
        # a filter's usual shapes, answered in one step (`false_rows`); `parts`: the
        # pod-side parts the residual has
        self._step = _one_step(root, parts)

    def false_rows(self, rows: Rows, policy: str, params: tuple[object, ...]) -> object:
        """The rows for which the residual is `false` (a mask; None when none), when the
        values kept decide every row by themselves (`decided`); else UNDECIDED. A filter
        of the usual shapes (a node value; a pod-side part `&&` or `||` a node value; a
        quantity test of a node value against a pod-side part) is answered in one step,
        without the walk of the operators `decided` makes."""
        step = self._step
        if step is not None:
            answer = step(rows, params)
            if answer is not UNDECIDED:
                return answer
        value = self.decided(rows, policy, params)
        if type(value) is Scalar:
            if value.value is True:
                return None
            return np.ones(rows.count, np.bool_) if value.value is False else UNDECIDED
        if type(value) is not Known or value.kind is not bool:
            return UNDECIDED
        if value.false is not None:  # (known already: a quantity test's other side)
            return value.false if value.any_false else None
        false: Mask = ~value.values
        return false if some(false) else None

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Column | Scalar:
        """The residual's value per row; rows whose value is not known are `unknown`
        (a Scalar's value is the same on every row)."""
        for p in params:
            if isinstance(p, CostLimitExceeded):
                return all_unknown(rows.count)  # a spent budget is never absorbed by && or ||
        costs = rows.cost = Costs()
        result = self.root.run(rows, policy, params)
        rows.cost = None
        heavy = costs.heavy(rows.budget * COST_SHARE)
        if heavy is not None:
            if isinstance(result, Scalar):
                result = broadcast(result, rows.count)
            unknown = result.unknown | heavy
            result = Column(result.kind, result.values, unknown, result.objects, None, result.where)
        return result

    def decided(self, rows: Rows, policy: str, params: tuple[object, ...]) -> object:
        """What `run` gives (a Scalar, or a Known column: every row known), when the values
        kept for the request's rows decide every one by themselves: each current, none
        unknown, none near the cost budget, and every operator on the way one whose rows
        all come out known (`&&`, `||`, `!`, `? :`, a comparison the columns make, a
        quantity clearly on one side of a constant). That is a new pod's filter or score
        over nodes seen before, answered without the unknown masks, the costs per row and
        the columns `run` carries for the other cases. UNDECIDED otherwise: `run` then
        says."""
        for p in params:
            if isinstance(p, CostLimitExceeded):
                return UNDECIDED
        spent = [0.0]
        value = self.root.decide(rows, policy, params, spent)
        if value is UNDECIDED or spent[0] > rows.budget * COST_SHARE:
            return UNDECIDED  # (some row may be near the budget: `run` looks at each)
        return value


# a filter answered in one step: (rows, params) -> its false rows (None: none), or
# UNDECIDED when `decided` is to say
Step = Callable[[Rows, tuple[object, ...]], object]


def _one_step(root: Operation, parts: int) -> Step | None:
    """The one step of a residual of a usual shape that reads every one of its `parts`
    pod-side parts, or None. Each step answers only what `decided` would answer the same
    way without evaluating anything (its node value current and known for every row, none
    near the budget) and leaves every other case to it."""
    if isinstance(root, NodeValue) and parts == 0:
        return _value_step(root)
    if isinstance(root, Logical) and len(root.operands) == 2 and parts == 1:
        param, value = root.operands
        if isinstance(param, NodeValue):
            param, value = value, param
        if isinstance(param, Param) and isinstance(value, NodeValue):
            return _logical_step(root.is_and, param.index, value)
    if isinstance(root, QuantityCompare) and root.admits is not None and parts == 1:
        target, arg, admits = root.target, root.arg, root.admits
        if isinstance(target, Param):
            target, arg, admits = arg, target, admits[::-1]  # the orders swap
        if isinstance(target, NodeValue) and isinstance(arg, Param):
            return _test_step(target, arg.index, admits)
    return None


def _current_values(value: NodeValue, rows: Rows, kind: type) -> npt.NDArray[Any] | None:
    """The request's rows of a node value of this kind, as `decided` reads them without
    evaluating (every row current and known, the most a row charged within the budget's
    share); None otherwise."""
    placed = rows.placement(value.reads_info)
    current = value.current(placed) if placed is not None else None
    if current is None:
        return None
    found, values, most = current
    return values if found is kind and most <= rows.budget * COST_SHARE else None


def _value_step(value: NodeValue) -> Step:
    def step(rows: Rows, params: tuple[object, ...]) -> object:
        values = _current_values(value, rows, bool)
        if values is None:
            return UNDECIDED
        false: Mask = ~values
        return false if some(false) else None

    return step


def _logical_step(is_and: bool, index: int, value: NodeValue) -> Step:
    decisive = not is_and  # `true` decides ||, `false` decides &&

    def step(rows: Rows, params: tuple[object, ...]) -> object:
        p = params[index]
        if type(p) is not bool:
            return UNDECIDED  # (an error: `decided` says)
        values = _current_values(value, rows, bool)
        if values is None:
            return UNDECIDED
        if p is decisive:
            return None if decisive else np.ones(rows.count, np.bool_)
        false: Mask = ~values  # the node value alone decides
        return false if some(false) else None

    return step


def _test_step(target: NodeValue, index: int, admits: Admits) -> Step:
    refused = (not admits[0], not admits[1], not admits[2])

    def step(rows: Rows, params: tuple[object, ...]) -> object:
        constant = params[index]
        if type(constant) is not Quantity:
            return UNDECIDED
        values = _current_values(target, rows, Quantity)
        if values is None:
            return UNDECIDED
        clear = clear_sides(values, constant.approximate_float())
        if clear is None:
            return UNDECIDED
        # every row clearly on one side: the false rows are those of the sides refused
        less, greater, fewer, more = clear
        if (fewer and refused[0]) or (more and refused[2]):
            return admitted(less, greater, refused)
        return None

    return step


def make_column_plan(
    residual: cel.CheckedExpression,
    parts: int,
    node_only: Callable[[str], bool],
    pods_variables: frozenset[str] | None = None,
) -> ColumnPlan | None:
    """The column plan of a checked residual whose placeholders `@p0`.. `@p<parts-1>` are
    the pod-side parts (each node-only subexpression planned from the residual's checked
    tree); None when some operator is not one this package evaluates, but in an operand of
    `&&` / `||` (then a partial plan: see ColumnPlan). `pods_variables`: the node-only
    variables whose value may change with the node's pods (None: any variable may)."""
    placeholders = {placeholder(i): i for i in range(parts)}
    node_values: list[NodeValue] = []
    partial = False

    def operand(node: cel.ast.Node) -> Operation:
        """An operand of `&&` / `||`; `Opaque` for one of an operator not evaluated here."""
        nonlocal partial
        values = len(node_values)
        try:
            return build(node)
        except Unsupported:
            del node_values[values:]  # (of its own subexpressions: never read)
            partial = True
            return Opaque()

    def build(node: cel.ast.Node) -> Operation:
        node_reads = reads(node)
        if isinstance(node, cel.ast.Literal):
            return Literal(node.value)
        if isinstance(node, cel.ast.Ident) and node.name in placeholders:
            return Param(placeholders[node.name])
        if node_reads and LOCAL not in node_reads and all(node_only(r) for r in node_reads):
            try:
                program = cel.plan(residual, node)
            except CELError as e:
                raise Unsupported(str(e)) from None
            value = NodeValue(program, reads_pods(node, pods_variables))
            node_values.append(value)
            return value
        if not isinstance(node, cel.ast.Call):
            raise Unsupported(type(node).__name__)
        f, args = node.function, node.args
        if f in _LOGICAL:
            operands: list[cel.ast.Node] = []
            _flatten(node, f, operands)
            return Logical(_LOGICAL[f], [operand(o) for o in operands])
        if f == "!_" and len(args) == 1:
            return Not(build(args[0]))
        if f == "_?_:_" and len(args) == 3:
            return Conditional(build(args[0]), build(args[1]), build(args[2]))
        if f in Compare.FUNCTIONS and len(args) == 2 and node.target is None:
            left, right = build(args[0]), build(args[1])
            return _order_test_of(f, left, right) or Compare(f, left, right)
        if f in Arithmetic.FUNCTIONS and len(args) == 2 and node.target is None:
            return Arithmetic(f, build(args[0]), build(args[1]))
        if f == "@in" and len(args) == 2:
            return In(build(args[0]), build(args[1]))
        if f in _QUANTITY_METHODS and node.target is not None and len(args) == 1:
            return QuantityCompare(f, build(node.target), build(args[0]))
        raise Unsupported(f)

    try:
        root = build(residual.tree)
    except Unsupported:
        return None
    if not node_values:
        return None
    return ColumnPlan(root, node_values, parts, partial)


def _order_test_of(function: str, left: Operation, right: Operation) -> QuantityCompare | None:
    """`q.compareTo(c) <op> k` or `k <op> q.compareTo(c)`, k an int literal, as a test of
    the order (which of -1, 0, 1 the comparison admits); None for any other compare."""
    op = Compare.FUNCTIONS[function]
    for order, literal, flipped in ((left, right, False), (right, left, True)):
        if (
            isinstance(order, QuantityCompare)
            and order.function == "compareTo"
            and order.admits is None
            and isinstance(literal, Literal)
            and type(literal.value) is int
        ):
            k = literal.value
            less, equal, greater = (bool(op(k, o) if flipped else op(o, k)) for o in (-1, 0, 1))
            return order.tested((less, equal, greater))
    return None


def _flatten(node: cel.ast.Node, function: str, out: list[cel.ast.Node]) -> None:
    if isinstance(node, cel.ast.Call) and node.function == function and node.target is None:
        for arg in node.args:
            _flatten(arg, function, out)
    else:
        out.append(node)
