"""What the extender verbs remember from one call for the next: NodeNames replies.

What the rules read of each node is kept by the engine itself, per node version, for the
life of a policy set (policy/columns.py and the plans' result cache): a pod never seen
before costs a few array operations per rule. What is left to remember is the reply: the
replicas of a Deployment arrive one after another with the same labels, requests and
annotations, and the scheduler asks about the same nodes each time. When nothing the
policies read has changed, the answer is the same bytes: the engine's `signature` says
what of the pod the rules read, the node source's `generation` says whether any node or
its information changed, and the memo belongs to one policy set (a reload starts afresh).
A reply the request deadline cut short is never remembered: it is not the nodes' own.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from typing import Final, Generic, TypeVar

from policyext.policy.compile import PolicySet
from policyext.policy.engine import Prepared
from policyext.policy.resources import LiveNodeSource

# replies kept: a few kinds of pods in flight at once, each asked filter and prioritize
MAX_REPLIES: Final = 32
# names hashed in a memo key: enough to tell apart the node lists a scheduler sends
SAMPLED_NAMES: Final = 64

T = TypeVar("T")


def memo_key(
    verb: str, prepared: Prepared, source: LiveNodeSource | None, names: Sequence[str] | None
) -> Hashable | None:
    """What a NodeNames reply depends on, or None when it cannot be reused (Nodes mode, no
    node source, rules that read the pod and the node together)."""
    if source is None or names is None:
        return None
    generation = source.generation  # read first: see Remembered
    signature = prepared.signature(verb == "filter", verb == "prioritize")
    if signature is None:
        return None
    return MemoKey(verb, generation, signature, names)


class MemoKey:
    """A memo key, hashed once and by a sample of the names, compared whole. A key is
    hashed when looked up, when stored and when evicted; hashing the pod's signature and
    5,000 names each time would cost more than the rest of a remembered reply."""

    __slots__ = ("_hash", "names", "parts")

    def __init__(
        self, verb: str, generation: int, signature: Hashable, names: Sequence[str]
    ) -> None:
        self.parts = (verb, generation, signature)
        self.names = tuple(names)
        step = max(1, len(names) // SAMPLED_NAMES)
        self._hash = hash((self.parts, len(names), self.names[::step], self.names[-1:]))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoKey):
            return NotImplemented
        return self._hash == other._hash and self.parts == other.parts and self.names == other.names


class Remembered(Generic[T]):
    """The last replies, by `memo_key`, for one policy set at a time (one per server).

    The source's generation is read before anything else of the request: a reply computed
    while a node changed is stored under the generation before the change, which no later
    request asks for."""

    def __init__(self, size: int = MAX_REPLIES) -> None:
        self.size = size
        self._policies: PolicySet | None = None
        self._replies: dict[Hashable, tuple[PolicySet, T]] = {}
        self._lock = threading.Lock()

    def get(self, policies: PolicySet, key: Hashable) -> T | None:
        found = self._replies.get(key)
        # the policy set is checked on the entry too: a reload may swap the table meanwhile
        return found[1] if found is not None and found[0] is policies else None

    def put(self, policies: PolicySet, key: Hashable, reply: T) -> None:
        with self._lock:
            if policies is not self._policies:
                self._replies = {}  # another policy set is being served
                self._policies = policies
            replies = self._replies
            while len(replies) >= self.size:
                replies.pop(next(iter(replies)))
            replies[key] = (policies, reply)
