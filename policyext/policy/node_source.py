"""The node-source protocol: what the engine reads of nodes beyond a request
(`NodeSource`), and what the server reads too (`LiveNodeSource`). The snapshot and the
cluster's caches implement both; preemption's view without the victims is a NodeSource
the engine alone sees. The engine and the server only ever see the protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from policyext.policy.resources import NodeInfo
from policyext.policy.rows import NodeRows


class NodeSource(Protocol):
    """What the engine learns about nodes beyond the request: a snapshot file, the live
    cluster's caches, or preemption's view of them without the victims. Whether the pods
    on a node are known is its node information's to say (`node_info`: without them,
    reading `requested`, `free` or `pods` is an evaluation error)."""

    def get_node(self, name: str) -> Mapping[str, Any] | None: ...

    def node_rows(self, names: Sequence[str]) -> NodeRows | None:
        """Where these nodes are in the source's table and which version of each it
        holds (rows.py), a name it does not hold at slot NOWHERE; None when what is read
        of its nodes must not be kept (it is not theirs alone, as for preemption's view)."""
        ...

    def node_info(self, node: Mapping[str, Any]) -> NodeInfo: ...


@runtime_checkable
class LiveNodeSource(NodeSource, Protocol):
    """A node source the server answers from: the engine's contract, and what the server
    needs to reuse answers, report readiness and find preemption victims. Every source
    the server is given has all of it (checked once, when the application is made)."""

    @property
    def generation(self) -> int:
        """Changes whenever any node or any node's information changes: a reply can be
        reused while it stays the same."""
        ...

    def node_count(self) -> int:
        """How many nodes the source holds."""
        ...

    def ready(self) -> bool:
        """Whether the source holds the nodes yet (a cache: once its first lists are in)."""
        ...

    def sync_problem(self) -> str:
        """Why the source is not ready ("" when it is, or when it cannot tell)."""
        ...

    def pod_by_uid(self, uid: str) -> Mapping[str, Any] | None:
        """A pod the source knows, by UID (preemption victims arrive as UIDs)."""
        ...

    def node_rows(self, names: Sequence[str]) -> NodeRows:
        """As NodeSource's, never None: a source the server answers from keeps a table of
        its nodes, whose values NodeNames requests are answered from."""
        ...
