"""NodeNames decoded once per distinct list, per verb.

kube-scheduler sends filter the names of the nodes its own plugins let through. Where they
all pass and it considers every node (a small cluster, or `percentageOfNodesToScore: 100`),
the list is the same bytes pod after pod. Decoding it makes a string per node, whose hash
the node table's lookup then computes afresh: for 500 nodes about a fifth of a new pod's
filter. Here the list is found at the end of the body, where kube-scheduler writes it (Go's
encoding/json writes ExtenderArgs as `{"Pod":...,"Nodes":null,"NodeNames":[...]}`), and
the list decoded last for the verb is given again when its bytes are the same: the same
list object, whose strings keep their hashes and whose slots the node table keeps
(policy/rows.py). A list that is a run of the cycle of nodes the scheduler walks (on a
larger cluster, each pod a new window of it) is a slice of that cycle's decoded names
(server/name_ring.py). prioritize is sent the nodes that passed filter, as the filter
reply wrote them: that reply's list is what prioritize expects next. Any other body, or
one this cannot take apart with certainty, is decoded whole as before.
"""

from __future__ import annotations

import threading
from typing import Any, Final

import orjson

from policyext.server.name_ring import NameRing
from policyext.server.wire import all_strings

# where kube-scheduler's list starts: a top-level key after the Pod (and Nodes)
_MARK: Final = b',"NodeNames":['
# the last list decoded for a verb: replaced whole, read without a lock
_Last = tuple[bytes, list[str]]


class NamesApart:
    """Takes a body's NodeNames apart from the rest, reusing the last list of each verb."""

    def __init__(self) -> None:
        self._last: dict[str, _Last] = {}
        self._rings: dict[str, NameRing] = {}  # per verb: the cycle its lists are runs of
        self._lock = threading.Lock()

    def split(self, verb: str, body: bytes) -> tuple[dict[str, Any], list[str]] | None:
        """The body's other top-level fields and its NodeNames, or None when the body is
        not plainly `{..., "NodeNames": [strings]}` with NodeNames last (the general
        decoder then says what it is, or what is wrong with it)."""
        end = len(body.rstrip())
        at = body.rfind(_MARK, 0, end)
        if at < 0 or body[end - 2 : end] != b"]}":
            return None
        names = self._names(verb, body[at + len(_MARK) - 1 : end - 1])
        if names is None:
            return None
        try:
            # everything before the list, closed: an object only if the list's key is a
            # top-level key (one inside the Pod would leave the Pod's braces open)
            rest = orjson.loads(body[:at] + b"}")
        except orjson.JSONDecodeError:
            return None
        if not isinstance(rest, dict) or any(str(k).lower() == "nodenames" for k in rest):
            return None  # another spelling of the key too: Go's rules for that are the decoder's
        return rest, names

    def expect(self, verb: str, encoded: bytes, names: list[str]) -> None:
        """The list a call of `verb` will likely send next, as encoded and as a list: a
        filter reply's NodeNames, which kube-scheduler sends back to prioritize for the
        nodes to score (its strings are the filter request's, already hashed)."""
        with self._lock:
            self._last[verb] = (encoded, names)

    def _names(self, verb: str, segment: bytes) -> list[str] | None:
        last = self._last.get(verb)
        if last is not None and last[0] == segment:
            return last[1]
        ring = self._rings.get(verb)
        if ring is not None:
            run = ring.find(segment)
            if run is not None:
                return run
        try:
            names = orjson.loads(segment)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(names, list) or not all_strings(names):
            return None
        with self._lock:
            self._last[verb] = (segment, names)
            ring = self._rings.get(verb)
            if ring is None:
                ring = self._rings[verb] = NameRing()
            ring.learn(segment, names)
        return names
