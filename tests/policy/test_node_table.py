"""A node table's rows for a list of names given again (server/names.py gives the same list
object for the same NodeNames): the slots found before, until a name gets or loses one."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial

from policyext.policy.rows import DEAD_SLOTS, NOWHERE, UNSETTLED, NodeRecord, NodeTable

NAMES = ["a", "b", "c"]


def _record(name: str, version: int) -> NodeRecord:
    return NodeRecord({"metadata": {"name": name}}, None, version, version)


def _table() -> NodeTable:
    table = NodeTable()
    for i, name in enumerate(NAMES):
        table.put(name, _record(name, i + 1))
    return table


def _nothing(table: NodeTable) -> None:
    pass


def _update_b(table: NodeTable) -> None:
    table.put("b", _record("b", 10))


def _remove_b(table: NodeTable) -> None:
    table.remove("b")


def _remove_and_add_b(table: NodeTable) -> None:
    table.remove("b")
    table.put("b", _record("b", 11))


def _remove_b_and_settle(table: NodeTable) -> None:
    table.remove("b")
    table.settle()


def _add_d(table: NodeTable) -> None:
    table.put("d", _record("d", 12))


CHANGES: dict[str, tuple[Callable[[NodeTable], None], list[int]]] = {
    # what happens between two requests giving the same list, and the versions then
    "nothing": (_nothing, [1, 2, 3]),
    "a node updated": (_update_b, [1, 10, 3]),
    "a node removed": (_remove_b, [1, NOWHERE, 3]),
    "a node removed and added again": (_remove_and_add_b, [1, 11, 3]),
    "another node added": (_add_d, [1, 2, 3]),
    "the names laid out anew": (NodeTable.settle, [1, 2, 3]),
    "a node removed, the names laid out anew": (_remove_b_and_settle, [1, NOWHERE, 3]),
}


def test_rows_for_a_list_given_again_are_those_of_a_new_lookup_whatever_changed() -> None:
    for change, versions in CHANGES.values():
        table = _table()
        names = [*NAMES]
        table.rows(names)
        change(table)
        again, fresh = table.rows(names), table.rows([*NAMES])
        assert again.versions.tolist() == fresh.versions.tolist() == versions
        assert again.slots.tolist() == fresh.slots.tolist()
        assert [again.record(i).version for i in range(3) if again.slots[i] != NOWHERE] == [
            v for v in versions if v != NOWHERE
        ]


def test_a_list_given_again_is_not_looked_up_again() -> None:
    table = _table()
    names = [*NAMES]
    first = table.rows(names)
    assert table.rows(names).slots is first.slots
    assert table.rows([*NAMES]).slots is not first.slots, "another list is looked up"
    assert not first.slots.flags.writeable, "shared: nobody writes into it"


def test_a_table_lays_its_names_out_anew_as_they_come_and_when_asked() -> None:
    """Names given slots one at a time lie wherever the heap had room: the table keeps
    copies of its own, made in one run, for most of them as they come and for all of them
    when asked (after a bulk load); the rows it finds are the same."""
    names = [f"node-{i}" for i in range(300)]
    table = NodeTable()
    for i, name in enumerate(names):
        table.put(name, _record(name, i + 1))
    kept = list(table._epoch.slot_of)  # (white box: the dictionary's own keys)
    assert kept == names
    assert sum(k is n for k, n in zip(kept, names, strict=True)) <= max(UNSETTLED, 300 // 4)
    before = table.rows([*names])
    table.settle()
    assert not any(k is n for k, n in zip(table._epoch.slot_of, names, strict=True))
    after = table.rows([*names])
    assert after.slots.tolist() == before.slots.tolist() == list(range(300))
    assert after.versions.tolist() == before.versions.tolist()


def _b_information(table: NodeTable) -> None:
    node = table.rows(["b"]).record(0).node
    table.put("b", NodeRecord(node, None, 2, 20))  # the node as it was, a pod bound to it


def _update_c(table: NodeTable) -> None:
    table.put("c", _record("c", 13))


def _new_epoch(table: NodeTable) -> None:
    """Enough nodes come and go for the table to start a new epoch (new slots)."""
    for i in range(DEAD_SLOTS + 1):
        table.put(f"gone-{i}", _record(f"gone-{i}", 100 + i))
        table.remove(f"gone-{i}")
    table.put("d", _record("d", 12))


UNCHANGED: dict[str, tuple[Callable[[NodeTable], None], bool]] = {
    # what happens after rows of a and b were found, and whether they still hold
    "nothing": (_nothing, True),
    "b updated": (_update_b, False),
    "b's node information changed": (_b_information, False),
    "b removed": (_remove_b, False),
    "b removed and added again": (_remove_and_add_b, False),
    "c updated (not among the rows)": (_update_c, True),
    "another node added": (_add_d, True),
    "the names laid out anew": (NodeTable.settle, True),
    "the table started a new epoch": (_new_epoch, False),
}


def test_rows_say_whether_the_table_still_holds_them_in_the_versions_they_found() -> None:
    for case, (change, unchanged) in UNCHANGED.items():
        table = _table()
        rows = table.rows(["a", "b"])
        change(table)
        assert rows.unchanged() is unchanged, case


def test_finding_rows_reads_no_record_until_one_is_asked_for() -> None:
    """A request names hundreds of nodes and most look at none of their records (their
    values are kept): finding the rows takes no reference to any record."""
    table = _table()
    records = [table.rows([name]).record(0) for name in NAMES]
    held = [sys.getrefcount(r) for r in records]
    rows = table.rows([*NAMES])
    assert [sys.getrefcount(r) for r in records] == held
    assert [rows.record(i) for i in range(3)] == records
    assert [node["metadata"]["name"] for node in rows.nodes] == NAMES
    assert table.rows([*NAMES]).records() == records, "every record, in one gather"


RECORD_AFTER: dict[str, tuple[Callable[[NodeTable], None], int]] = {
    # a change after a request found its rows, and the version of b's record it reads then
    "nothing": (_nothing, 2),
    "b updated": (_update_b, 10),
    "b's node information changed": (_b_information, 2),
    "b removed (its record stays for the readers that hold its slot)": (_remove_b, 2),
    "the names laid out anew": (NodeTable.settle, 2),
    "the table started a new epoch (the old arrays stay as they were)": (_new_epoch, 2),
}


def test_a_record_is_the_one_its_slot_holds_when_first_asked_and_the_same_after() -> None:
    """A record read late is never older than the versions the request found (a writer
    puts the record before its numbers), may be newer, and carries its own numbers; asked
    again, it is the same record, so that a value worked out from it is kept under the
    numbers it was worked out from."""
    for case, (change, version) in RECORD_AFTER.items():
        table = _table()
        rows = table.rows(["a", "b"])
        change(table)
        first = rows.record(1)
        assert first.version == version, case
        assert first.version >= rows.versions[1], case
        _update_b(table)
        table.put("b", _record("b", 99))
        assert rows.record(1) is first, case
        assert rows.records()[1] is first, case


class _WriterMidLookup(dict[str, int]):
    """A table's name dictionary whose lookup of one name lets a writer act first: a
    writer thread taking its turn while a request looks its names up."""

    def __init__(self, held: dict[str, int], when: str, act: Callable[[], None]) -> None:
        super().__init__(held)
        self.when, self.act = when, act

    def __getitem__(self, name: str) -> int:
        if name == self.when and self.act is not _nothing_now:
            act, self.act = self.act, _nothing_now
            act()
        return super().__getitem__(name)


def _nothing_now() -> None:
    pass


def _full_table() -> NodeTable:
    """A table whose arrays are full: the next new name makes new ones."""
    table = _table()
    while table._epoch.used < len(table._epoch.versions):
        name = f"n{table._epoch.used}"
        table.put(name, _record(name, 100 + table._epoch.used))
    return table


MID_LOOKUP: dict[str, tuple[str, Callable[[NodeTable], None], list[str], list[int], bool]] = {
    # the names asked for, what a writer does as the request looks up the last of them,
    # the versions the request finds, and whether it knows every name held without looking
    "nothing": ("c", _nothing, NAMES, [1, 2, 3], True),
    "c updated": ("c", _update_c, NAMES, [1, 2, 13], True),
    "b removed after it was looked up": ("c", _remove_b, NAMES, [1, NOWHERE, 3], False),
    "b removed and added again": ("c", _remove_and_add_b, NAMES, [1, NOWHERE, 3], False),
    "another node added": ("c", _add_d, NAMES, [1, 2, 3], False),
    "the names laid out anew": ("c", NodeTable.settle, NAMES, [1, 2, 3], True),
}


def test_a_writer_acting_while_a_request_looks_names_up_is_never_missed() -> None:
    """A request that finds every name and sees no name get or lose its slot meanwhile
    skips the per-row checks; one a writer raced is checked row by row, and then reports a
    name removed meanwhile as not held (the versions it read may be the emptied slot's)."""
    for case, (when, change, names, versions, complete) in MID_LOOKUP.items():
        table = _table()
        epoch = table._epoch
        epoch.slot_of = _WriterMidLookup(epoch.slot_of, when, partial(change, table))
        rows = table.rows([*names])
        assert rows.versions.tolist() == versions, case
        assert rows.complete is complete, case
        assert rows.every_known() is (NOWHERE not in versions), case
        assert (rows.slots == NOWHERE).tolist() == [v == NOWHERE for v in versions], case


def test_a_name_given_a_slot_past_the_arrays_a_request_read_is_not_held_yet() -> None:
    table = _full_table()
    epoch = table._epoch
    size = len(epoch.versions)
    epoch.slot_of = _WriterMidLookup(epoch.slot_of, "new", partial(_put_new, table))
    rows = table.rows(["a", "new"])
    assert len(table._epoch.versions) > size, "the writer made new arrays"
    assert rows.slots.tolist() == [0, NOWHERE]
    assert not rows.complete and not rows.every_known()
    again = table.rows(["a", "new"])
    assert again.complete and again.versions.tolist() == [1, 999]


def _put_new(table: NodeTable) -> None:
    table.put("new", _record("new", 999))
