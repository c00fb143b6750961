"""Which node-only subexpressions may change when a pod is bound to their node or leaves
it, rather than only with a new version of the Node: what the columns keep a value by
(the node's version or its node information's), and what compile.py asks of a variable.
No numpy here: compiling a policy asks this without loading the evaluator.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import Final

from policyext import cel
from policyext.cel import reads

# the fields of nodeInfo that it holds of the Node object alone (resources.node_info_of):
# the same in every version of the node information of one version of the Node
_NODE_OWN_INFO: Final = frozenset({"allocatable"})
_BY_FIELD: Final = frozenset({"variables", "nodeInfo"})


def reads_pods(node: cel.ast.Node, pods_variables: AbstractSet[str] | None) -> bool:
    """Whether a node-only subexpression may change when a pod is bound to its node or
    leaves it, not only with a new version of the Node (see `fields_read_pods`). A value
    that reads only the Node is kept by the Node's version, and stays current while pods
    come and go (a fits test on `nodeInfo.allocatable` is not evaluated again on every
    binding)."""
    fields = (read.partition(".")[::2] for read in reads(node, by_field=_BY_FIELD))
    return fields_read_pods(fields, pods_variables)


def fields_read_pods(
    fields: Iterable[tuple[str, str]], pods_variables: AbstractSet[str] | None
) -> bool:
    """Whether reads, as (input, field) pairs (field "": the input read whole), may change
    with the node's pods: nodeInfo other than what it holds of the Node alone, or a
    variable that may (`pods_variables`; None: any variable)."""
    for root, field in fields:
        if root == "nodeInfo" and field not in _NODE_OWN_INFO:
            return True
        if root == "variables" and (pods_variables is None or field in pods_variables):
            return True
    return False
