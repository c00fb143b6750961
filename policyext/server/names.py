"""NodeNames decoded once per distinct list, per verb.

Decoding a NodeNames list makes a string per node, whose hash the node table's lookup then
computes afresh: for 500 nodes about a fifth of a new pod's filter. Here the list is found
at the end of the body, where kube-scheduler writes it (Go's encoding/json writes
ExtenderArgs as `{"Pod":...,"Nodes":null,"NodeNames":[...]}`), and the list decoded last
for the verb is given again when its bytes are the same: the same list object, whose
strings keep their hashes and whose slots the node table keeps (policy/rows.py).

prioritize is where this pays: kube-scheduler sends it the nodes that passed filter, in the
order the filter reply wrote them, so that reply's list is what prioritize expects next.
filter itself is rarely sent the same bytes twice by kube-scheduler: it sends a share of
the nodes from where the last pod's walk stopped (230 of 500 nodes), and in the order its
parallel filter goroutines finished them, which differs from pod to pod even when it sends
every node. Any other body, or one this cannot take apart with certainty, is decoded whole.
"""

from __future__ import annotations

import threading
from typing import Any, Final

import orjson

from policyext.server.wire import all_strings

# where kube-scheduler's list starts: a top-level key after the Pod (and Nodes)
_MARK: Final = b',"NodeNames":['
# the last list decoded for a verb: replaced whole, read without a lock
_Last = tuple[bytes, list[str]]


class NamesApart:
    """Takes a body's NodeNames apart from the rest, reusing the last list of each verb."""

    def __init__(self) -> None:
        self._last: dict[str, _Last] = {}
        # the last body taken apart for a verb, and where its NodeNames key starts: its
        # structure is known then (`asking_about` need not decode it again)
        self._split: dict[str, tuple[bytes, int]] = {}
        self._lock = threading.Lock()

    def split(self, verb: str, body: bytes) -> tuple[dict[str, Any], list[str]] | None:
        """The body's other top-level fields and its NodeNames, or None when the body is
        not plainly `{..., "NodeNames": [strings]}` with NodeNames last (the general
        decoder then says what it is, or what is wrong with it)."""
        found = _names_at(body)
        if found is None:
            return None
        at, end = found
        names = self._names(verb, body[at + len(_MARK) - 1 : end - 1])
        if names is None:
            return None
        rest = _rest(body, at)
        if rest is None:
            return None
        self._split[verb] = (body, at)  # (one entry replaced whole: read without a lock)
        return rest, names

    def asking_about(self, verb: str, body: bytes, encoded: bytes) -> bytes | None:
        """`asking_about(body, encoded)` for a body of `verb`: without decoding it again
        when it is the one last taken apart for the verb."""
        split = self._split.get(verb)
        if split is None or split[0] is not body:
            return asking_about(body, encoded)
        return body[: split[1] + len(_MARK) - 1] + encoded + b"}"

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
        try:
            names = orjson.loads(segment)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(names, list) or not all_strings(names):
            return None
        with self._lock:
            self._last[verb] = (segment, names)
        return names


def asking_about(body: bytes, encoded: bytes) -> bytes | None:
    """`body` with its NodeNames replaced by `encoded` (a JSON list of names), as
    kube-scheduler writes it: the prioritize call that follows a filter call of `body`,
    about the nodes of its reply. None when the body is not plainly `{..., "NodeNames":
    [...]}` with NodeNames last (a list, its items aside)."""
    found = _names_at(body)
    if found is None or _rest(body, found[0]) is None:
        return None
    at, end = found
    start = at + len(_MARK) - 1
    try:
        listed = orjson.loads(body[start : end - 1])
    except orjson.JSONDecodeError:
        return None
    return body[:start] + encoded + b"}" if isinstance(listed, list) else None


def _names_at(body: bytes) -> tuple[int, int] | None:
    """Where the body's NodeNames key starts, and where the body ends (trailing spaces
    aside), when its last top-level value looks like a list under that key (`_rest` says
    whether it is). The key is looked for from the start: it follows the Pod, a tenth of
    the body, and a list of names cannot hold it (a name is a JSON string, and the key's
    quotes would end it); a Pod that holds it nested is left to the general decoder."""
    end = len(body.rstrip())
    if body[end - 2 : end] != b"]}":
        return None
    at = body.find(_MARK, 0, end)
    return (at, end) if at >= 0 else None


def _rest(body: bytes, at: int) -> dict[str, Any] | None:
    """The top-level fields before NodeNames, when the key found at `at` is a top-level
    key (one inside the Pod would leave the Pod's braces open) and the only spelling of it
    (Go's rules for several are the general decoder's)."""
    try:
        rest = orjson.loads(body[:at] + b"}")
    except orjson.JSONDecodeError:
        return None
    if not isinstance(rest, dict):
        return None
    for key in rest:  # (a loop: a generator resumes once per key)
        if key.lower() == "nodenames":
            return None
    return rest
