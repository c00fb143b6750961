"""How the engine evaluates one expression over many nodes for one pod, cheaply.

An expression that reads the pod and the node is split (`cel.split_checked`) into
pod-side parts, evaluated once per request, and a residual evaluated per node with the
parts' values as constants. The parts, the residual and the residual's column plan are all
planned from the tree checked when the whole expression was compiled (compile.py): an
expression is parsed and checked once. When the residual reads nothing but the node, its
node information and those constants, its result for a node is a pure function of (the
parts' values, the node's version): it is cached, so a burst of similar pods costs a
dictionary lookup per node instead of an evaluation.

The cache belongs to the compiled expression, so a policy reload starts with an empty one;
node versions come from the node source's table (rows.py: the node's version, and its
node information's when the residual reads `nodeInfo`), so an updated node is never served
a stale result.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Final

from policyext import cel
from policyext.cel import placeholder, reads
from policyext.policy.columns import ColumnPlan, make_column_plan
from policyext.policy.node_reads import reads_pods

# node results kept per set of part values; a new set beyond these drops the oldest
MAX_PARAMETER_SETS: Final = 256
# results kept per set of part values (nodes x versions); past this it starts over
MAX_NODE_RESULTS: Final = 50_000
NODE_INPUTS: Final = frozenset(("node", "nodeInfo"))


class Results:
    """A residual's results for one set of part values, by node key: all of them, and
    apart the ones that are not `true` (what a filter pass looks at)."""

    __slots__ = ("not_true", "values")

    def __init__(self) -> None:
        self.values: dict[Hashable, object] = {}
        self.not_true: dict[Hashable, object] = {}

    def store(self, key: Hashable, value: object) -> None:
        # never cleared in place: a request reading this table while storing into it must
        # find everything it stored (ResultCache starts a new table when one grows too big)
        self.values[key] = value
        if value is not True:
            self.not_true[key] = value


def typed(values: tuple[object, ...]) -> tuple[tuple[type, object], ...]:
    """Part values as a cache key: with their types, since 1, 1.0 and true are equal (and
    hash alike) in Python but not in CEL; a part's error by its message (each request makes
    its own error object, and pods failing alike must share their results)."""
    return tuple((type(v), v.message if isinstance(v, cel.CELError) else v) for v in values)


@dataclass
class ResultCache:
    """Per-node results of a residual, by the values of the pod-side parts, keyed by node
    version in one node source's table (rows.py) at a time."""

    by_params: dict[tuple[tuple[type, object], ...], Results] = field(default_factory=dict)
    # whose versions key the results (held weakly: results must not keep a source alive)
    table: weakref.ref[object] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def results(self, params: tuple[Hashable, ...], table: object) -> Results:
        """The results for these part values (TypeError when one is a list or a map)."""
        key = typed(params)
        if self.table is None or self.table() is not table:  # another table's versions
            with self.lock:
                if self.table is None or self.table() is not table:
                    self.by_params = {}
                    self.table = weakref.ref(table)
        table_of_results = self.by_params.get(key)
        # nodes come and go, and each version is a new key: a full table starts over
        if table_of_results is None or len(table_of_results.values) >= MAX_NODE_RESULTS:
            with self.lock:
                if key not in self.by_params and len(self.by_params) >= MAX_PARAMETER_SETS:
                    self.by_params.pop(next(iter(self.by_params)))
                table_of_results = self.by_params[key] = Results()
        return table_of_results


@dataclass(frozen=True)
class Plan:
    """`parts` are evaluated once per request; `residual` per node, reading the parts'
    values as `@p0`, `@p1`...; `cacheable`: the residual's per-node results may be cached.
    `key_parts` are the pod-side parts of the variables the residual reads: evaluated once
    per request too, they are not read by the residual but key its cached results, since
    the variables' values depend on them."""

    parts: tuple[cel.Program, ...]
    residual: cel.Program
    cacheable: bool
    # its results are kept by the version of the node's information, not the Node's: it
    # reads nodeInfo beyond what nodeInfo holds of the Node alone
    reads_node_info: bool
    key_parts: tuple[cel.Program, ...] = ()
    # the residual over all nodes at once (columns/); None: evaluated node by node
    columns: ColumnPlan | None = field(default=None, compare=False)
    cache: ResultCache = field(default_factory=ResultCache, compare=False)
    placeholders: tuple[str, ...] = field(init=False, compare=False)
    all_parts: tuple[cel.Program, ...] = field(init=False, compare=False)  # parts, key parts

    def __post_init__(self) -> None:
        names = tuple(placeholder(i) for i in range(len(self.parts)))
        object.__setattr__(self, "placeholders", names)
        object.__setattr__(self, "all_parts", (*self.parts, *self.key_parts))


def make_plan(
    program: cel.Program,
    checked: cel.CheckedExpression,
    known: Callable[[str], bool],
    variable_plans: Mapping[str, Plan] | None = None,
    node_only: Callable[[str], bool] | None = None,
    pods_variables: frozenset[str] | None = None,
) -> Plan | None:
    """The plan of an expression that reads the node; None when it only reads the pod (the
    caller evaluates it once per request) or when nothing would be gained. `program` is the
    expression compiled whole, `checked` the tree it was compiled from: the parts, the
    residual and the residual's columns are planned from that tree, never checked again.

    `variable_plans` are the cacheable plans of the policy's variables that read the node:
    a residual that reads them is cacheable too, keyed also by their pod-side parts (a
    variable such as `ownNode`, which compares the pod's namespace with a node label, is
    then a function of the namespace and the node's version).

    `node_only` says which reads depend on the node alone (`node`, `nodeInfo`, variables
    that read nothing else): subexpressions made of them become the columns of the
    residual's column plan; `pods_variables`, which of those variables may change with the
    node's pods (columns/kept.py keeps the others by the Node's version)."""
    variables = variable_plans or {}
    tree = checked.tree
    pieces = cel.split_checked(checked, known)
    if pieces is None:
        whole = reads(tree)
        columns = _columns(checked, 0, node_only, pods_variables)
        through = _through_variables(whole - NODE_INPUTS, variables)
        if through is None:
            if columns is None:
                return None  # reads other node-dependent inputs: no cache
            return Plan((), program, False, _reads_pods(tree), columns=columns)
        key_parts, info = through
        return Plan((), program, True, _reads_pods(tree) or info, key_parts, columns)
    parts = tuple(cel.plan(checked, part) for part in pieces.parts)
    residual_tree = pieces.residual.tree
    residual = cel.plan(pieces.residual)
    residual_reads = reads(residual_tree)
    through = _through_variables(residual_reads - NODE_INPUTS - set(pieces.placeholders), variables)
    # results keyed by the time of the request would never be asked for again
    timed = any("now" in reads(part) for part in pieces.parts)
    columns = _columns(pieces.residual, len(parts), node_only, pods_variables)
    if through is None or timed:
        return Plan(parts, residual, False, _reads_pods(residual_tree), columns=columns)
    key_parts, info = through
    return Plan(parts, residual, True, _reads_pods(residual_tree) or info, key_parts, columns)


def _reads_pods(tree: cel.ast.Node) -> bool:
    """Whether an expression's cached results are kept by the version of the node's
    information rather than the Node's: it reads nodeInfo beyond what nodeInfo holds of the
    Node alone (node_reads.reads_pods; the variables it reads say so through their own plans:
    _through_variables)."""
    return reads_pods(tree, frozenset())


def _columns(
    residual: cel.CheckedExpression,
    parts: int,
    node_only: Callable[[str], bool] | None,
    pods_variables: frozenset[str] | None,
) -> ColumnPlan | None:
    if node_only is None:
        return None
    return make_column_plan(residual, parts, node_only, pods_variables)


def _through_variables(
    other_reads: set[str], variables: Mapping[str, Plan]
) -> tuple[tuple[cel.Program, ...], bool] | None:
    """When every read but the node's is of a variable with a cacheable plan: the pod-side
    parts those variables depend on (each once) and whether any reads `nodeInfo`; None
    otherwise."""
    key_parts: dict[int, cel.Program] = {}
    info = False
    for read in sorted(other_reads):
        plan = (
            variables.get(read.removeprefix("variables."))
            if read.startswith("variables.")
            else None
        )
        if plan is None or not plan.cacheable:
            return None
        for part in (*plan.parts, *plan.key_parts):
            key_parts.setdefault(id(part), part)
        info = info or plan.reads_node_info
    return tuple(key_parts.values()), info
