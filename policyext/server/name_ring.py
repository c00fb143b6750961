"""The order kube-scheduler walks its nodes in, learnt from the NodeNames it sends.

kube-scheduler does not send filter every node: it walks its node list from where the last
pod's walk stopped, round the list, until it has found enough feasible nodes (adaptive
`percentageOfNodesToScore`: about 230 of 500 nodes, 500 of 5,000), and sends those. On a
cluster whose nodes all pass its own plugins, one pod's list starts where the last one's
ended, so no two lists are alike, yet each is a run of one fixed cycle of names. Decoding
each list makes a new string per node, and finding each in the node table hashes and
compares it afresh: for a new pod at 500 nodes, a tenth of the extender's work.

A `NameRing` follows the lists as they come; once one of them comes back round to where
the first began, the names seen so far are the cycle. It keeps the cycle encoded twice
over, so that every run of it, however it wraps, is one stretch of those bytes. A list is
then found by its first name and one comparison of bytes: its names are a slice of the
cycle's (strings decoded once, whose slots the node table finds once, policy/rows.py).
What is not a run of the cycle (the scheduler skipped nodes its plugins refused, or the
nodes changed) is decoded as before, and the learning starts again from it.

Only plain names are learnt (ASCII, nothing JSON escapes: every Kubernetes node name),
so that each name's bytes are its quotes and its characters, and a list's names are
counted by the separators between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import Final

from policyext.policy.rows import NameSlice

# names followed at most while no cycle shows: a few times the largest clusters' lists
MAX_FOLLOWED: Final = 50_000
_SEPARATOR: Final = b'","'


@dataclass(frozen=True, slots=True)
class _Cycle:
    encoded: bytes  # the cycle's names as a list's bytes, twice over: '"a","b",...,"a","b",...'
    names: list[str]  # the same, decoded
    starts: dict[bytes, int]  # a quoted name -> where it is in the first round
    offsets: list[int]  # where each name of the first round starts in `encoded`


class NameRing:
    """Lists of node names recognised as runs of the cycle the scheduler walks. Not
    thread-safe: its caller serialises `learn`; `find` reads a cycle that is replaced
    whole, never changed."""

    def __init__(self) -> None:
        self._cycle: _Cycle | None = None
        self._followed: list[str] = []  # the names of consecutive lists, in order

    def find(self, encoded_list: bytes) -> NameSlice | None:
        """The names of a list's bytes (`[...]`, as sent), when it is a run of the cycle;
        None otherwise."""
        cycle = self._cycle
        if cycle is None:
            return None
        segment = encoded_list[1:-1]
        comma = segment.find(_SEPARATOR)
        first = segment if comma < 0 else segment[: comma + 1]
        at = cycle.starts.get(first)
        if at is None:
            return None
        start = cycle.offsets[at]
        end = start + len(segment)
        encoded = cycle.encoded
        if not encoded.startswith(segment, start):
            return None
        if end != len(encoded) and encoded[end - 1 : end + 2] != _SEPARATOR:
            return None  # it stops inside the stretch, not at the end of a name
        # the same bytes from the start of a name to the end of one: the same names (a
        # quote inside a plain name would be escaped, so separators are the only '","')
        return NameSlice(cycle.names, at, segment.count(_SEPARATOR) + 1)

    def learn(self, encoded_list: bytes, names: list[str]) -> None:
        """A list that `find` did not recognise (`[...]`, as sent), with its names."""
        if not names or len(encoded_list) != sum(map(len, names)) + 3 * len(names) + 1:
            self._followed = []  # a name that is not plain: never learnt
            return
        followed = self._followed
        if followed:
            try:
                back = names.index(followed[0])
            except ValueError:
                back = -1
            if back >= 0 and names[back:] == followed[: len(names) - back]:
                self._cycle = _learnt(followed + names[:back])
                self._followed = []
                return
        if len(followed) + len(names) > MAX_FOLLOWED:
            followed.clear()
        followed.extend(names)


def _learnt(cycle: list[str]) -> _Cycle:
    twice = cycle + cycle
    encoded = ('"' + '","'.join(twice) + '"').encode("ascii")
    offsets = [0, *accumulate(len(name) + 3 for name in cycle[:-1])]
    starts: dict[bytes, int] = {}
    for at, name in enumerate(cycle):
        starts.setdefault(f'"{name}"'.encode("ascii"), at)
    return _Cycle(encoded, twice, starts, offsets)
