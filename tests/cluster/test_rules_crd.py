"""The cluster's SchedulingPolicy objects as a policy source (`--rules-crd`): nothing is
served before they are listed, each object is one policy named schedulingpolicy/NAME, a
status update or a new resourceVersion reloads nothing, and with files or a ConfigMap they
are one set. (tests/e2e/test_crd.py serves them from a real API server.)"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import yaml

from policyext.cluster.policy_sources import PolicySources
from policyext.cluster.rules_crd import PolicyObjects, PolicyObjectsWatch, _Handler, policy_text
from policyext.policy.compile import NOT_LOADED
from policyext.store import PolicyStore
from tests.cluster.policies import BROKEN, rejecting


def policy_object(text: str, version: str = "1", status: Any = None) -> dict[str, Any]:
    """The object as the API server returns it: the written policy and what it adds."""
    obj: dict[str, Any] = yaml.safe_load(text)
    obj["metadata"] |= {
        "uid": "u-" + obj["metadata"]["name"],
        "resourceVersion": version,
        "generation": 1,
        "creationTimestamp": "2026-12-06T08:00:00Z",
        "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
    }
    if status is not None:
        obj["status"] = status
    return obj


A = policy_object(rejecting("a", "spot"))
B = policy_object(rejecting("b", "gpu"))


class _Watch:
    """PolicyObjectsWatch's bookkeeping without a client."""

    def __init__(self) -> None:
        self.changes: list[PolicyObjects] = []
        self.watch = PolicyObjectsWatch.__new__(PolicyObjectsWatch)
        self.watch.state = None
        self.watch.on_change = self.changes.append
        self.watch._objects = {}
        self.watch._lock = threading.Lock()
        self.handler = _Handler(self.watch)


def test_each_object_is_a_policy_named_by_its_object_without_what_the_server_added() -> None:
    watched = _Watch()
    watched.handler.replace([A, B], 0.0)
    [listed] = watched.changes
    assert sorted(listed.texts) == ["schedulingpolicy/a", "schedulingpolicy/b"]
    written = yaml.safe_load(listed.texts["schedulingpolicy/a"])
    assert written == yaml.safe_load(rejecting("a", "spot"))


def test_a_status_or_metadata_update_reloads_nothing_a_spec_change_or_a_delete_does() -> None:
    watched = _Watch()
    watched.handler.replace([A], 0.0)
    watched.handler.apply("MODIFIED", policy_object(rejecting("a", "spot"), "2", {"filters": 1}))
    assert len(watched.changes) == 1
    watched.handler.apply("MODIFIED", policy_object(rejecting("a", "zone"), "3"))
    watched.handler.apply("ADDED", B)
    watched.handler.apply("DELETED", A)
    assert [sorted(c.texts) for c in watched.changes[1:]] == [
        ["schedulingpolicy/a"],
        ["schedulingpolicy/a", "schedulingpolicy/b"],
        ["schedulingpolicy/b"],
    ]
    assert "zone" in watched.changes[1].texts["schedulingpolicy/a"]


def test_an_empty_list_is_reported_an_empty_set_of_objects() -> None:
    watched = _Watch()
    watched.handler.replace([], 0.0)
    assert watched.changes == [PolicyObjects({})]


def _sources(paths: list[str] | None = None) -> tuple[PolicySources, PolicyStore]:
    store = PolicyStore()
    return PolicySources(store, paths or [], objects=True), store


def _listed(*objects: dict[str, Any]) -> PolicyObjects:
    return PolicyObjects(
        {f"schedulingpolicy/{o['metadata']['name']}": policy_text(o) for o in objects}
    )


def test_nothing_is_served_before_the_objects_are_listed() -> None:
    src, store = _sources()
    assert src.reload() is None
    assert store.current is NOT_LOADED and not store.loaded
    src.objects_unreadable("cannot read schedulingpolicies.policyext.io: HTTP 404")
    assert store.status is not None and "HTTP 404" in (store.status.error or "")
    src.objects_changed(_listed(A))
    assert [p.name for p in store.current.policies] == ["a"]
    assert store.status is not None and store.status.ok
    assert "schedulingpolicies.policyext.io (1)" in store.status.source


def test_a_broken_object_keeps_the_last_good_set_and_names_the_object() -> None:
    src, store = _sources()
    src.objects_changed(_listed(A))
    good = store.current
    src.objects_changed(_listed(A, policy_object(BROKEN)))
    assert store.current is good
    assert store.status is not None and not store.status.ok
    [issue] = store.status.issues
    assert str(issue).startswith("schedulingpolicy/broken:")


def test_files_and_objects_are_one_set_and_a_name_in_both_is_refused(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(rejecting("b", "gpu"), encoding="utf-8")
    src, store = _sources([str(tmp_path)])
    src.objects_changed(_listed(A))
    assert [p.name for p in store.current.policies] == ["a", "b"]
    src.objects_changed(_listed(A, B))
    assert store.status is not None and not store.status.ok
    assert any("duplicate policy name" in str(i) for i in store.status.issues)
    assert [p.name for p in store.current.policies] == ["a", "b"]


def test_a_value_the_object_holds_twice_is_written_out_twice_not_as_an_alias() -> None:
    shared = {"key": "tier", "operator": "In", "values": ["a"]}
    obj = policy_object(rejecting("a", "spot"))
    obj["spec"]["match"] = {"podSelector": {"matchExpressions": [shared, shared]}}
    src, store = _sources()
    src.objects_changed(_listed(obj))
    assert store.status is not None and store.status.ok, store.status.issues
