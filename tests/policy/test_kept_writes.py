"""How a kept column takes a changed node's value (policy/columns/kept.py): the objects
array a request was handed keeps that request's values, and one no request holds is
written in place rather than copied (a copy per changed row cost a reference per slot of
the table: the filter's cost grew with the cluster's nodes)."""

from __future__ import annotations

import weakref

import numpy as np

from policyext.cel import Quantity
from policyext.policy.columns.kept import _write_rows, gather
from policyext.policy.columns.values import Column


def _quantities(*texts: str) -> Column:
    """A kept column of quantities over len(texts) slots, every row known."""
    found = [Quantity.parse(t) for t in texts]
    return Column(
        Quantity,
        np.array([q.approximate_float() for q in found]),
        np.zeros(len(found), np.bool_),
        np.array(found, object),
        np.zeros(len(found)),
    )


def _write(whole: Column, slot: int, text: str) -> None:
    value = Quantity.parse(text)
    assert _write_rows(whole, np.array([slot]), [(value, value.approximate_float(), 1.0)])


def test_a_request_holding_a_kept_column_reads_its_own_version_after_a_write() -> None:
    whole = _quantities("1", "2", "3")
    held = gather(whole, np.array([0, 1, 2]), True)  # a request, not done with its rows
    _write(whole, 1, "5")  # a pod bound to node 1: its new value kept meanwhile
    assert held.object_at(1) == Quantity.parse("2")
    assert whole.objects is not None and whole.objects[1] == Quantity.parse("5")
    assert gather(whole, np.array([1]), True).object_at(0) == Quantity.parse("5")


def test_a_kept_column_no_request_holds_is_written_in_place() -> None:
    whole = _quantities("1", "2", "3")
    gather(whole, np.array([0, 1]), True)  # a request that is done: its rows are gone
    assert whole.objects is not None
    objects = weakref.ref(whole.objects)  # (a weak reference: no request's hold)
    _write(whole, 2, "7")
    assert whole.objects is objects(), "written in place, not copied"
    assert whole.objects[2] == Quantity.parse("7")
    assert whole.values[2] == 7.0
