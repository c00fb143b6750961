"""Each node's part of a NodeNames reply, kept per kind of pod for the next pod of a burst.

Whole replies rarely repeat while a burst is scheduled: kube-scheduler stops filtering once
it has found enough feasible nodes and starts the next pod where the last one stopped, so
each pod asks about another window of the nodes, and every binding changes one node's
information. What repeats is each node's part of the reply. Two pods with the same engine
`signature` get the same part for a node as long as the node and its information are the
same; the node source's `node_stamps` gives, per name, an object that is replaced whenever
either changes. A request then evaluates only the nodes whose stamp is new: after a binding,
one node instead of all of them.

A table is keyed by the stamp's id, which is unique while the table holds the stamp: a
request's lookups are then one C-level map over the names. Parts of replaced stamps stay
until the table outgrows the nodes, and it starts afresh.

Only parts that are a node's own answer are kept: never one the request deadline decided,
nor one that carries an evaluation error (an exhausted cost budget depends on the request,
not on the node).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Final, Generic, TypeVar

from policyext.policy.compile import PolicySet

# kinds of pods (signatures) kept per verb: a few Deployments' bursts at once
MAX_KINDS: Final = 16

T = TypeVar("T")
# id(stamp) -> (the stamp, the part computed for the node in that version)
Table = dict[int, tuple[object, T]]


class NodeAnswers(Generic[T]):
    """Tables of per-node parts by (verb, signature), for one policy set at a time."""

    def __init__(self, kinds: int = MAX_KINDS) -> None:
        self.kinds = kinds
        self._policies: PolicySet | None = None
        self._tables: dict[Hashable, Table[T]] = {}
        self._lock = threading.Lock()

    def table(self, policies: PolicySet, key: Hashable, nodes: int) -> Table[T]:
        """The table of `key` under `policies` (a new one when there is none, or when the
        one there holds more than twice the source's `nodes`, stale parts included). A
        table handed out while a reload swaps the set is simply not found again."""
        with self._lock:
            if policies is not self._policies:
                self._tables = {}  # another policy set is being served
                self._policies = policies
            tables = self._tables
            found = tables.get(key)
            if found is not None and len(found) <= 2 * nodes + 1024:
                return found
            tables.pop(key, None)
            while len(tables) >= self.kinds:
                tables.pop(next(iter(tables)))
            table: Table[T] = {}
            tables[key] = table
            return table
