"""What a column plan is given for one request, and the operations it is made of.

`Rows` is the engine's run of a request as the columns see it (how many nodes, where they
are in their source's table, the exact evaluator on one of them, the cost budget);
`Placement` is where the nodes are; `Costs` adds up what the node values of one rule
charged per row; `Operation` is one node of a column plan (operators.py, quantities.py,
kept.py's node values).
"""

from __future__ import annotations

from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from policyext import cel
from policyext.policy.columns.values import UNDECIDED, Value
from policyext.policy.masks import Mask, some

# node values that used more than this share of the cost budget together: their row is
# left to the exact evaluator (the residual's other operators charge a little more)
COST_SHARE: Final = 0.5


class Costs:
    """What the node values of one rule charged, per row: known exactly for values
    evaluated in this request, bounded for kept ones (their arrays are read only when the
    bound says a row might come near the budget)."""

    __slots__ = ("arrays", "bound", "kept")

    def __init__(self) -> None:
        self.arrays: list[npt.NDArray[np.float64]] = []
        self.kept: list[tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]]] = []
        self.bound = 0.0  # no row charged more than this in all

    def add(self, cost: npt.NDArray[np.float64]) -> None:
        self.arrays.append(cost)
        self.bound += float(cost.max()) if len(cost) else 0.0

    def add_kept(
        self, cost: npt.NDArray[np.float64], slots: npt.NDArray[np.intp], most: float
    ) -> None:
        self.kept.append((cost, slots))
        self.bound += most

    def heavy(self, limit: float) -> Mask | None:
        """The rows that charged more than `limit`, or None when none can have."""
        if self.bound <= limit:
            return None
        total = sum((cost[slots] for cost, slots in self.kept), start=sum(self.arrays))
        heavy: Mask = np.asarray(total > limit, np.bool_)
        return heavy if some(heavy) else None


class Rows(Protocol):
    """The nodes of one request as the columns see them (the engine's run of a request).

    `placement(reads_info)`: where the request's nodes are in their source's table (the
    table, its size, each node's slot and the version kept values must have: the node's,
    or with `reads_info` its node information's too), or None when node values must not be
    kept (nodes sent in the request); `evaluate_on(i, policy, program)`: the exact
    evaluator on the request's node i and the cost it charged; `versions_of(positions,
    reads_info)`: the versions of the nodes the exact evaluator read at those positions
    (the placement's, or later ones when a node changed meanwhile); `timed_out()`: the
    request deadline has passed. `cost`: what the node values of the rule being evaluated
    charged (set here): rows where that nears the budget (or spent it) are left to the exact
    evaluator, whatever the operators say."""

    count: int
    budget: int
    cost: Costs | None

    def placement(self, reads_info: bool) -> Placement | None: ...

    def evaluate_on(self, i: int, policy: str, program: cel.Program) -> tuple[object, int]: ...

    def versions_of(self, positions: list[int], reads_info: bool) -> npt.NDArray[np.int64]: ...

    def timed_out(self) -> bool: ...


class Placement:
    """Where a request's nodes are in their source's table (see Rows.placement)."""

    __slots__ = ("changes", "size", "slots", "table", "versions", "whole")

    def __init__(
        self,
        table: object,
        size: int,
        slots: npt.NDArray[np.intp],
        versions: npt.NDArray[np.int64],
        changes: int = -1,
        whole: npt.NDArray[np.int64] | None = None,
    ) -> None:
        self.table = table
        self.size = size
        self.slots = slots
        self.versions = versions
        # the table's count of changes to these versions, read before `versions` (-1: not
        # known), and every slot's version (`size` of them; None: not known)
        self.changes = changes
        self.whole = whole


class Operation:
    """One node of a column plan: `run` gives its value over the request's rows (unknown
    rows left to the exact evaluator); `decide` the same when it comes out plain."""

    def run(self, rows: Rows, policy: str, params: tuple[object, ...]) -> Value:
        raise NotImplementedError

    def decide(
        self, rows: Rows, policy: str, params: tuple[object, ...], spent: list[float]
    ) -> object:
        """`run` where it is plain: a Scalar, a Known column, or UNDECIDED (see
        ColumnPlan.decided). `spent` adds up the most the node values read charged."""
        return UNDECIDED
