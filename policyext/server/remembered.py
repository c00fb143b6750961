"""What the extender verbs remember from one call for the next: NodeNames replies, and the
prioritize reply worked out ahead.

What the rules read of each node is kept by the engine itself, per node version, for the
life of a policy set (policy/columns/ and the plans' result cache): a pod never seen
before costs a few array operations per rule. What is left to remember is the reply, for a
question asked again: the same pod, or a replica that reads alike, about the same nodes,
while nothing the policies read has changed. Then the answer is the same bytes: the
engine's `signature` says what of the pod the rules read, the node source's `generation`
says whether any node or its information changed, and the memo belongs to one policy set
(a reload starts afresh). A reply the request deadline cut short is never remembered: it
is not the nodes' own.

kube-scheduler rarely asks the same question twice: it sends filter a share of the nodes
from where the last pod's walk stopped, in the order its parallel filters finished them,
so its lists differ from pod to pod (and prioritize's with them). A memo key costs a walk
of the pod for its signature; so a reply is looked for, and kept, only for a list of names
the memo was asked about lately (`asked_before`): a list seen for the first time costs a
hash of a sample of its names, whose hashes the node table's lookup reuses.

What kube-scheduler does ask next is known, though: after a filter call it runs its own
score plugins, then calls prioritize with the same pod about the nodes the filter reply
passed (when two or more did: a single feasible node is chosen without scoring). `Ahead`
holds that prioritize reply, worked out once the filter reply is sent, while the scheduler
is busy with its own plugins, so that its serial path does not wait for our scores. The
reply is given for exactly that request (byte for byte) while the policy set is the same
and every node it scores still has the versions it was scored in (node and node
information); never for policies that read `now`. The scores are worked out only while a
prioritize call followed the last ones worked out: a scheduler configured without the
prioritize verb costs nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from policyext.policy import LiveNodeSource, NodeRows, PolicySet, Prepared

# replies kept: a few kinds of pods in flight at once, each asked filter and prioritize
MAX_REPLIES: Final = 32
# names hashed in a memo key: enough to tell apart the node lists a scheduler sends
SAMPLED_NAMES: Final = 64
# the name lists a memo remembers having been asked about (by their sample's hash)
ASKED_LISTS: Final = 64


def _sample(names: Sequence[str]) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
    step = max(1, len(names) // SAMPLED_NAMES)
    return len(names), tuple(names[::step]), tuple(names[-1:])


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
        self._hash = hash((self.parts, _sample(self.names)))

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
        self._asked: dict[int, None] = {}  # oldest first
        self._lock = threading.Lock()

    def asked_before(self, verb: str, names: Sequence[str]) -> bool:
        """Whether `verb` was asked about a list like `names` lately (same length, same
        sample of names). The first time, the list is noted and False returned: no reply
        can be remembered for it, and none is looked for or kept."""
        sample = hash((verb, _sample(names)))
        if sample in self._asked:
            return True
        with self._lock:
            asked = self._asked
            asked[sample] = None
            if len(asked) > ASKED_LISTS:
                del asked[next(iter(asked))]
        return False

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


@dataclass(frozen=True, slots=True)
class _Expected(Generic[T]):
    request: bytes  # the body of the call it answers
    policies: PolicySet
    rows: NodeRows  # the nodes it scored, in the versions it scored
    reply: T


class Ahead(Generic[T]):
    """The prioritize reply worked out ahead of the call (see the module's doc). One at a
    time: the pod of the last filter call."""

    def __init__(self) -> None:
        self._expected: _Expected[T] | None = None
        # whether a prioritize call came since scores were last worked out ahead (at first:
        # not yet, so nothing is worked out for a scheduler that never calls prioritize)
        self._asked = False

    def wanted(self) -> bool:
        """Whether to work out the scores for the filter call just answered: only if a
        prioritize call came since the last were (taken back for this one)."""
        asked, self._asked = self._asked, False
        return asked

    def keep(self, policies: PolicySet, request: bytes, rows: NodeRows, reply: T) -> None:
        """`reply` answers the prioritize call of body `request` under `policies`, while the
        nodes of `rows` keep their versions."""
        self._expected = _Expected(request, policies, rows, reply)

    def answer(self, policies: PolicySet, request: bytes) -> T | None:
        """The reply worked out ahead for this prioritize call, if it is this call's and
        still right; noted either way (`wanted`)."""
        self._asked = True
        expected = self._expected
        if expected is None or expected.policies is not policies or expected.request != request:
            return None
        if not expected.rows.unchanged():
            return None  # a node changed since (a pod bound to it, most likely)
        return expected.reply
