"""The arguments of bind and preempt as the wire format gives them (server/wire.py): what
may be left out or empty, and what it then stands for."""

from __future__ import annotations

from typing import Any

import pytest

from policyext.server import wire

BIND = {"PodName": "web-1", "PodNamespace": "shop", "PodUID": "u-1", "Node": "node-a"}


@pytest.mark.parametrize(
    ("change", "parsed"),
    [
        ({}, wire.BindingArgs("web-1", "shop", "u-1", "node-a")),
        ({"PodUID": ""}, wire.BindingArgs("web-1", "shop", "", "node-a")),
        ({"podname": "web-2", "PodName": None}, wire.BindingArgs("web-2", "shop", "u-1", "node-a")),
        ({"PodName": ""}, "PodName: must not be empty"),
        ({"PodNamespace": ""}, "PodNamespace: must not be empty"),
        ({"Node": ""}, "Node: must not be empty"),
        ({"PodUID": None}, "PodUID: expected a string"),
    ],
    ids=[
        "every field",
        "an empty PodUID: a bind without the UID precondition",
        "a key in another case, as Go's decoder matches it",
        "an empty PodName",
        "an empty PodNamespace",
        "an empty Node",
        "no PodUID",
    ],
)
def test_binding_args_may_leave_the_uid_empty_and_nothing_else(
    change: dict[str, Any], parsed: wire.BindingArgs | str
) -> None:
    body = {k: v for k, v in {**BIND, **change}.items() if v is not None}
    try:
        got: wire.BindingArgs | str = wire.parse_binding_args(body)
    except wire.WireError as e:
        got = str(e)
    assert got == parsed


POD = {"metadata": {"name": "web-1", "namespace": "shop", "uid": "p-1"}}
VICTIM = {"metadata": {"name": "old", "uid": "v-1"}}


@pytest.mark.parametrize(
    ("victims", "expected"),
    [
        ({"Pods": [VICTIM], "NumPDBViolations": 2}, (["v-1"], 2)),
        ({"Pods": [VICTIM]}, (["v-1"], 0)),
        ({"Pods": None}, ([], 0)),
        ({}, ([], 0)),
        ({"Pods": [{"metadata": {"name": "no-uid"}}]}, ([""], 0)),
    ],
    ids=[
        "pods and violations",
        "no NumPDBViolations: none",
        "null Pods: none",
        "neither",
        "a victim without a UID",
    ],
)
def test_victims_left_out_are_none(
    victims: dict[str, Any], expected: tuple[list[str], int]
) -> None:
    args = wire.parse_preemption_args({"Pod": POD, "NodeNameToVictims": {"node-a": victims}})
    found = args.victims["node-a"]
    assert (found.uids, found.num_pdb_violations) == expected
    assert args.meta is False


def test_meta_victims_are_read_by_their_uids_alone() -> None:
    """NodeNameToMetaVictims (a nodeCacheCapable scheduler's): each victim a {"UID": ...}."""
    body = {
        "Pod": POD,
        "NodeNameToVictims": None,
        "NodeNameToMetaVictims": {"node-a": {"Pods": [{"UID": "v-1"}], "NumPDBViolations": 1}},
    }
    args = wire.parse_preemption_args(body)
    found = args.victims["node-a"]
    assert (found.uids, found.num_pdb_violations, args.meta) == (["v-1"], 1, True)
