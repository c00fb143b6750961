"""Where the nodes a request names are in a node source, and which version of each.

A NodeNames request names hundreds or thousands of nodes, and kube-scheduler sends one for
every pod. What the rules read of a node is kept per node version (columns/kept.py, plan.py),
so a request must learn, for each name, where its values are kept and whether they are
still those of the node's current version. Done name by name in Python (node object, then
`name@resourceVersion`, then its position), that bookkeeping cost more than evaluating the
rules. Here a node source keeps a table: each node name has a slot (a position in arrays
the engine keeps its values in), and each slot the version numbers of what it holds now.
A request then costs one dictionary lookup per name, in C, and array indexing.

Two version numbers per slot: `versions` changes when the Node object changes (what a
subexpression reading only `node` depends on), `info_versions` when the node or its node
information does (pods bound or gone). A source hands out each number once, for any slot,
so a value kept for a number is that version's whatever slot it was kept in: slots can be
reused and a reader racing a writer can at worst miss a kept value, never use a stale one.
The table also counts the changes of either kind (`changes`, `node_changes`): a value kept
for every slot while its count has not moved needs no check at all (columns/kept.py).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from policyext.policy.masks import every, some
from policyext.policy.resources import NodeInfo

Json = Mapping[str, Any]
Versions = npt.NDArray[np.int64]
Slots = npt.NDArray[np.intp]
# a slot that holds nothing (a name the source does not know)
NOWHERE: Final = -1
# dead slots (of removed nodes) a table keeps before it starts over
DEAD_SLOTS: Final = 1024
# name lists whose slots a table remembers (filter's and prioritize's, a few callers')
REMEMBERED_LISTS: Final = 8
# names given a slot since the table last laid its names out anew, past which (and past a
# quarter of the names) it does so again (see `NodeTable.settle`)
UNSETTLED: Final = 64


@dataclass(frozen=True, slots=True, eq=False)
class NodeRecord:
    """One version of a node as its source holds it. `info`: its node information when
    the source keeps it with the node (None: the source computes it on demand)."""

    node: Json
    info: NodeInfo | None
    version: int
    info_version: int


class NodeRows:
    """The nodes of one request as rows of a source's table: their slots, the versions
    the source held when the request looked, and each node's record on demand."""

    __slots__ = (
        "_held",
        "_read",
        "changes",
        "complete",
        "info_versions",
        "names",
        "node_changes",
        "size",
        "slots",
        "table",
        "table_info_versions",
        "table_versions",
        "versions",
    )

    def __init__(
        self,
        table: object,
        size: int,
        names: list[str],
        slots: Slots,
        versions: Versions,
        info_versions: Versions,
        held: npt.NDArray[np.object_],
        changes: int = -1,
        node_changes: int = -1,
        table_versions: Versions | None = None,
        table_info_versions: Versions | None = None,
        complete: bool = False,
    ) -> None:
        self.table = table  # whose slots these are
        # known to hold every name (no slot NOWHERE) without looking: False when not known
        self.complete = complete
        # the table's counts of version changes when the request looked (-1: not known):
        # of any version, and of the Node objects' alone
        self.changes = changes
        self.node_changes = node_changes
        # every slot's versions, and its node information's, as the request read them (None:
        # not known)
        self.table_versions = table_versions
        self.table_info_versions = table_info_versions
        self.size = size  # slots in the table: arrays indexed by slot need this many rows
        self.names = names
        self.slots = slots
        self.versions = versions
        self.info_versions = info_versions
        # the records by slot, as the table wrote them: read only for the rows the engine
        # looks at (most requests look at none; gathering a reference to each of hundreds
        # of records, in memory a pause has made cold, costs more than the rules), once each
        self._held = held
        self._read: dict[int, NodeRecord] = {}

    def __len__(self) -> int:
        return len(self.names)

    @property
    def nodes(self) -> Sequence[Json]:
        """The rows' Node objects (a view: made on each call, so that no cycle holds the
        rows, and with them the request's nodes, past the call)."""
        return _Nodes(self)

    def record(self, i: int) -> NodeRecord:
        """The record of the request's node i: the one its slot holds when first asked, the
        same ever after for this request. Its versions are its own: it may be a writer's
        step ahead of `versions[i]` (read when the request looked), never behind, so a
        value worked out from it is kept under the record's numbers, not the request's."""
        found = self._read.get(i)
        if found is None:
            slot = int(self.slots[i])
            assert slot != NOWHERE, "a row the source does not hold"
            found = self._read[i] = self._held[slot]
        return found

    def records(self) -> list[NodeRecord]:
        """Every row's record (`record(i)` for each i, in one gather: for the callers that
        look at every node, a NodeList's versions checked against the source's)."""
        read = self._read
        if not read:
            slots = self.slots
            assert every(slots != NOWHERE), "a row the source does not hold"
            found: list[NodeRecord] = self._held[slots].tolist()
            self._read = dict(enumerate(found))
            return found
        return [self.record(i) for i in range(len(self))]

    def unchanged(self) -> bool:
        """Whether the source still holds every row in the version it held then (node and
        node information): a source hands out each version number once, so the same
        numbers are the same nodes. False for a table no longer written to."""
        epoch = self.table
        if type(epoch) is not _Epoch or epoch.retired:
            return False
        slots = self.slots
        return every(epoch.versions[slots] == self.versions) and every(
            epoch.info_versions[slots] == self.info_versions
        )

    def known(self) -> npt.NDArray[np.bool_]:
        known: npt.NDArray[np.bool_] = self.slots != NOWHERE
        return known

    def every_known(self) -> bool:
        """Whether the source holds every row (none has slot NOWHERE)."""
        return self.complete or every(self.slots != NOWHERE)

    def only(self, keep: npt.NDArray[np.bool_]) -> NodeRows:
        """These rows without the others (the names the source does not hold)."""
        at = keep.nonzero()[0]
        names = self.names
        return NodeRows(
            self.table,
            self.size,
            [names[i] for i in at.tolist()],
            self.slots[at],
            self.versions[at],
            self.info_versions[at],
            self._held,
            self.changes,
            self.node_changes,
            self.table_versions,
            self.table_info_versions,
            self.complete,
        )


class _Nodes(Sequence[Json]):
    """The rows' Node objects, for the few the engine reads (most requests evaluate no
    node at all: their values are kept)."""

    __slots__ = ("_rows",)

    def __init__(self, rows: NodeRows) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: int) -> Json:  # type: ignore[override]
        return self._rows.record(i).node


class _Epoch:
    """A table's slots and arrays. Writers change the arrays in place or replace them
    (growing); readers take the epoch once, so that its names, slots and arrays agree."""

    __slots__ = (
        "__weakref__",
        "changes",
        "info_versions",
        "layout",
        "node_changes",
        "records",
        "retired",
        "slot_of",
        "unsettled",
        "used",
        "versions",
    )

    def __init__(self, capacity: int) -> None:
        self.slot_of: dict[str, int] = {}
        self.unsettled = 0  # names given a slot since the last `settle`
        self.layout = 0  # changes whenever a name gets or loses its slot
        # count every change of a slot's versions, and of its Node object's, after the
        # change (see rows)
        self.changes = 0
        self.node_changes = 0
        self.used = 0  # slots handed out
        self.retired = False  # a new epoch took over: writers no longer change this one
        self.records: npt.NDArray[np.object_] = np.full(capacity, None, object)
        self.versions: Versions = np.full(capacity, NOWHERE, np.int64)
        self.info_versions: Versions = np.full(capacity, NOWHERE, np.int64)

    def place(self, slot: int, record: NodeRecord) -> None:
        # the record first: a reader that sees the new numbers finds its record
        new_node = self.versions[slot] != record.version
        self.records[slot] = record
        self.versions[slot] = record.version
        self.info_versions[slot] = record.info_version
        self.changes += 1
        if new_node:
            self.node_changes += 1

    def grow(self, size: int) -> None:
        # new arrays, the old ones left as they are for the readers that hold them
        used = self.used
        records = np.full(size, None, object)
        versions = np.full(size, NOWHERE, np.int64)
        info_versions = np.full(size, NOWHERE, np.int64)
        records[:used] = self.records[:used]
        versions[:used] = self.versions[:used]
        info_versions[:used] = self.info_versions[:used]
        self.records, self.versions, self.info_versions = records, versions, info_versions


class NodeTable:
    """A node source's table: a slot per node name, the record each slot holds, and the
    version numbers of those records in arrays. Writers (the source's, one at a time)
    call `put` and `remove`; readers call `rows` without a lock.

    A slot is never given to another name while readers may hold it: a removed name's slot
    stays dead until there are many dead slots, and then the table starts a new epoch (new
    slots and arrays; what was kept per slot of the old one is dropped by its keepers)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoch = _Epoch(16)
        # the slots found for the last few name lists, by the list's identity: a list
        # given again (server/names.py) is not looked up again while no name has got or
        # lost its slot. Each entry holds its list, so an identity is never another's.
        self._found: dict[int, tuple[Sequence[str], _Epoch, int, Slots, bool]] = {}

    def _slots(self, names: list[str], epoch: _Epoch, layout: int) -> tuple[Slots, bool]:
        """Each name's slot in the epoch (NOWHERE for a name it does not hold), and whether
        it holds every name. `layout`: the epoch's, read before anything else of it."""
        found = self._found.get(id(names))
        if found is not None and found[0] is names and found[1] is epoch and found[2] == layout:
            return found[3], found[4]
        try:  # every name known (the usual case): one C call looks them all up
            held = itemgetter(*names)(epoch.slot_of) if len(names) > 1 else None
        except KeyError:
            held = None
        whole = held is not None
        if held is None:
            held = list(map(epoch.slot_of.get, names, repeat(NOWHERE)))
            whole = NOWHERE not in held
        slots = np.fromiter(held, np.intp, len(names))
        slots.flags.writeable = False  # shared by the requests that give the list again
        if epoch.layout == layout:  # (else the slots may be of either layout: not kept)
            remembered = self._found
            if len(remembered) >= REMEMBERED_LISTS:
                remembered = {}  # replaced whole: readers do not lock
            self._found = {**remembered, id(names): (names, epoch, layout, slots, whole)}
        return slots, whole

    def put(self, name: str, record: NodeRecord) -> None:
        """`name` is now this record (a new node, or a new version of one)."""
        with self._lock:
            epoch = self._epoch
            slot = epoch.slot_of.get(name)
            if slot is None:
                live = len(epoch.slot_of)
                if epoch.used - live > max(DEAD_SLOTS, live):
                    epoch = self._compact(epoch)
                slot = epoch.used
                if slot >= len(epoch.versions):
                    epoch.grow(2 * slot)
                epoch.used += 1
                epoch.place(slot, record)
                # counted before the name shows: a reader that finds it sees the count moved
                epoch.layout += 1
                epoch.slot_of[name] = slot  # last: a reader finding the slot finds it placed
                epoch.unsettled += 1
                if epoch.unsettled > max(UNSETTLED, len(epoch.slot_of) // 4):
                    _settle(epoch)
            else:
                epoch.place(slot, record)

    def remove(self, name: str) -> None:
        with self._lock:
            epoch = self._epoch
            slot = epoch.slot_of.pop(name, None)
            if slot is not None:
                # counted before the slot is emptied: a reader that sees it empty sees the
                # count moved (or found no slot for the name)
                epoch.layout += 1
                epoch.versions[slot] = NOWHERE  # the record stays for readers holding it
                epoch.info_versions[slot] = NOWHERE
                epoch.changes += 1
                epoch.node_changes += 1

    def _compact(self, old: _Epoch) -> _Epoch:
        live = [(name, old.records[slot]) for name, slot in old.slot_of.items()]
        epoch = _Epoch(max(16, 2 * len(live)))
        for slot, (name, record) in enumerate(live):
            epoch.place(slot, record)
            epoch.slot_of[name] = slot
        epoch.used = len(live)
        _settle(epoch)
        self._epoch = epoch
        old.retired = True
        return epoch

    def settle(self) -> None:
        """Lay the names out anew (after a bulk load: a snapshot, a relist). A request
        looks each of its names up in the table's dictionary, which reads the name kept
        there (to compare it) and its slot number; names given slots one node at a time lie
        wherever the heap had room then, a cache line or a page apart, and a call that comes
        after a pause pays for each. Made anew in one run, in slot order, they lie side by
        side (230 lookups after a pause, at 500 nodes: 52 to 70 against 82 to 92 µs)."""
        with self._lock:
            _settle(self._epoch)

    def rows(self, names: Sequence[str]) -> NodeRows:
        """The rows of these names; a name the source does not hold has slot NOWHERE."""
        names = names if isinstance(names, list) else list(names)
        epoch = self._epoch
        # read first: writers count a name's getting or losing its slot before it shows
        # (see `put` and `remove`), so the same count after the reads below means that
        # none did meanwhile
        layout = epoch.layout
        # read before the versions: a change after this is seen by the next request's count
        changes, node_changes = epoch.changes, epoch.node_changes
        versions, info_versions, records = epoch.versions, epoch.info_versions, epoch.records
        slots, whole = self._slots(names, epoch, layout)
        size = len(versions)
        complete = False
        if whole:
            try:
                held_versions, held_info = versions[slots], info_versions[slots]
            except IndexError:  # a slot added past the arrays this reader holds
                whole = False
            # every name held and none got or lost its slot since `layout`: each slot lies
            # within the arrays read, and none was emptied before the versions were
            complete = whole and epoch.layout == layout
        if not complete:
            slots, held_versions, held_info = _held(slots, versions, info_versions)
        return NodeRows(
            epoch,
            size,
            names,
            slots,
            held_versions,
            held_info,
            records,
            changes,
            node_changes,
            versions,
            info_versions,
            complete,
        )


def _held(
    slots: Slots, versions: Versions, info_versions: Versions
) -> tuple[Slots, Versions, Versions]:
    """The slots and their versions, each checked: NOWHERE for a slot past the arrays
    read (added meanwhile: not held yet) or emptied (never held, or removed meanwhile)."""
    size = len(versions)
    inside = (slots >= 0) & (slots < size)
    if every(inside):
        held_versions, held_info = versions[slots], info_versions[slots]
    else:
        at = np.where(inside, slots, 0)
        held_versions = np.where(inside, versions[at], NOWHERE)
        held_info = np.where(inside, info_versions[at], NOWHERE)
    gone = held_versions == NOWHERE
    if some(gone):
        slots = np.where(gone, NOWHERE, slots)
    return slots, held_versions, held_info


def _settle(epoch: _Epoch) -> None:
    """The epoch's names and slot numbers as new objects made one after the other, in slot
    order; the dictionary replaced whole (readers take it without a lock)."""
    numbers = list(range(epoch.used))  # (the small ones are the interpreter's own)
    held = sorted(epoch.slot_of.items(), key=itemgetter(1))
    epoch.slot_of = {_afresh(name): numbers[slot] for name, slot in held}
    epoch.unsettled = 0


def _afresh(name: str) -> str:
    """An equal string of its own (surrogates kept: a name read from JSON may hold one)."""
    return name.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
