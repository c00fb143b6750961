"""Evaluating a rule over all the nodes of a request at once.

A rule's residual (policy/plan.py: what is left once its pod-side parts are constants) is
mostly made of subexpressions that read only the node, combined with the pod's constants
by a few operators: `free.cpu.compareTo(@p0) >= 0`, `@p0 || lifecycle != 'spot'`, `zone ==
@p1 ? 10 : 0`. The node-only subexpressions are evaluated per node by the exact evaluator
and remembered per node version (kept.py): they do not depend on the pod. What combines
them is evaluated once per request over whole columns (numpy arrays; operators.py,
quantities.py): a compare of a column with a constant is one vector operation, whatever
the number of nodes.

Exactness first. A column holds, for each row, a value of the column's kind or *unknown*
(values.py: an evaluation error, a value of another type, a NaN, an int too large for a
double, a quantity too close to the constant to compare in floating point, a node value
that used much of the cost budget). Every operator keeps CEL's semantics on the known rows
(`false && <error>` is false: a decided row stays decided) and leaves the others unknown;
the unknown rows of the result are evaluated again by the exact per-node evaluator. A
residual with an operator this package does not know has no column plan at all (plan.py).

The engine sees the package through what this module exports.
"""

from policyext.policy.columns.plan import ColumnPlan, make_column_plan
from policyext.policy.columns.request import Costs, Placement, Rows
from policyext.policy.columns.values import UNDECIDED, Known, Scalar

__all__ = [
    "UNDECIDED",
    "ColumnPlan",
    "Costs",
    "Known",
    "Placement",
    "Rows",
    "Scalar",
    "make_column_plan",
]
