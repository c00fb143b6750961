"""The cluster's SchedulingPolicy objects as a policy source (`--rules-crd`): nothing is
served before they are listed, each object is one policy named schedulingpolicy/NAME, a
status update or a new resourceVersion reloads nothing, with files or a ConfigMap they
are one set, and an object that does not load is refused alone: its last good text serves
and the others' updates do. (tests/e2e/test_crd.py serves them from a real API server.)"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyext.cluster.policy_sources import PolicySources
from policyext.cluster.rules_crd import PolicyObjects, PolicyObjectsWatch, _Handler, policy_text
from policyext.policy.compile import NOT_LOADED
from policyext.server.metrics import Metrics
from policyext.store import PolicyStore
from policyext.wsgi import _reloaded
from tests.cluster.fake_core import fake_api
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
    """PolicyObjectsWatch's bookkeeping, fed by hand (never started: no API server)."""

    def __init__(self) -> None:
        self.changes: list[PolicyObjects] = []
        self.watch = PolicyObjectsWatch(fake_api(), self.changes.append)
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


def _broken(name: str) -> dict[str, Any]:
    """An object whose filter does not compile: a CEL error, which only policyext catches."""
    return policy_object(BROKEN.replace("name: broken", f"name: {name}"))


def _serving(store: PolicyStore) -> dict[str, str]:
    """Each served policy's name and the label its filter refuses."""
    return {p.name: p.filters[0].rule.message.split()[2] for p in store.current.policies}


@pytest.mark.parametrize(
    ("first", "then", "serving", "refused"),
    [
        pytest.param(
            [A, B],
            [_broken("a"), policy_object(rejecting("b", "zone"))],
            {"a": "spot", "b": "zone"},
            ["schedulingpolicy/a"],
            id="a bad generation of a keeps a's last good one, b's update serves",
        ),
        pytest.param(
            [A],
            [A, _broken("c")],
            {"a": "spot"},
            ["schedulingpolicy/c"],
            id="an object bad from the start is left out",
        ),
        pytest.param(
            [],
            [_broken("c"), B],
            {"b": "gpu"},
            ["schedulingpolicy/c"],
            id="a bad object in the first list is left out of the first set",
        ),
        pytest.param(
            [A, _broken("c")],
            [A, policy_object(rejecting("c", "zone"))],
            {"a": "spot", "c": "zone"},
            [],
            id="a refused object's good generation serves",
        ),
    ],
)
def test_a_refused_object_keeps_its_last_good_text_and_never_blocks_the_others(
    first: list[dict[str, Any]],
    then: list[dict[str, Any]],
    serving: dict[str, str],
    refused: list[str],
) -> None:
    src, store = _sources()
    src.objects_changed(_listed(*first))
    src.objects_changed(_listed(*then))
    assert _serving(store) == serving
    assert store.status is not None and store.status.version == store.current.version
    assert store.status.ok is not refused
    assert sorted({str(i).split(":")[0] for i in store.status.issues}) == refused


def test_a_refused_object_is_a_failed_reload_for_the_metrics_and_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = Metrics()
    src, store = _sources()
    store.subscribe(lambda status: _reloaded(metrics, status, store.current))
    src.objects_changed(_listed(A))
    with caplog.at_level(logging.ERROR, "policyext"):
        src.objects_changed(_listed(_broken("a"), B))
    assert _serving(store) == {"a": "spot", "b": "gpu"}
    assert metrics.reloads.labels("failed")._value.get() == 1
    assert metrics.last_reload_ok._value.get() == 0
    assert store.reloads_failed == 1 and store.status is not None and store.status.partial
    assert "refused in part" in caplog.text
    assert "schedulingpolicy/a:7:22: a/oops:" in caplog.text


def test_a_deleted_object_created_again_broken_is_left_out_not_brought_back() -> None:
    src, store = _sources()
    src.objects_changed(_listed(A, B))
    src.objects_changed(_listed(B))
    src.objects_changed(_listed(_broken("a"), B))
    assert _serving(store) == {"b": "gpu"}


def test_files_and_objects_are_one_set_and_a_new_object_taking_a_files_name_is_refused(
    tmp_path: Path,
) -> None:
    (tmp_path / "b.yaml").write_text(rejecting("b", "gpu"), encoding="utf-8")
    src, store = _sources([str(tmp_path)])
    src.objects_changed(_listed(A))
    assert _serving(store) == {"a": "spot", "b": "gpu"}
    c = policy_object(rejecting("c", "zone"))
    src.objects_changed(_listed(policy_object(rejecting("a", "arm")), c, B))
    assert _serving(store) == {"a": "arm", "b": "gpu", "c": "zone"}  # b from the file
    assert store.status is not None and not store.status.ok
    [issue] = store.status.issues
    assert str(issue).startswith("schedulingpolicy/b:") and "duplicate policy name" in str(issue)


def test_a_file_taking_the_name_of_a_served_object_rejects_the_whole_reload(
    tmp_path: Path,
) -> None:
    src, store = _sources([str(tmp_path)])
    src.objects_changed(_listed(A, B))
    good = store.current
    (tmp_path / "b.yaml").write_text(rejecting("b", "zone"), encoding="utf-8")
    src.objects_changed(_listed(policy_object(rejecting("a", "arm")), B))
    assert store.current is good
    assert store.status is not None and not store.status.ok and not store.status.partial
    assert any("duplicate policy name" in str(i) for i in store.status.issues)


def test_a_broken_file_rejects_the_whole_reload_and_names_the_refused_objects_too(
    tmp_path: Path,
) -> None:
    src, store = _sources([str(tmp_path)])
    src.objects_changed(_listed(A))
    good = store.current
    (tmp_path / "broken.yaml").write_text(BROKEN, encoding="utf-8")
    src.objects_changed(_listed(_broken("a"), B))
    assert store.current is good
    assert store.status is not None and not store.status.ok and not store.status.partial
    assert sorted(str(i).split(":")[0] for i in store.status.issues) == [
        str(tmp_path / "broken.yaml"),
        "schedulingpolicy/a",
    ]


def test_a_value_the_object_holds_twice_is_written_out_twice_not_as_an_alias() -> None:
    shared = {"key": "tier", "operator": "In", "values": ["a"]}
    obj = policy_object(rejecting("a", "spot"))
    obj["spec"]["match"] = {"podSelector": {"matchExpressions": [shared, shared]}}
    src, store = _sources()
    src.objects_changed(_listed(obj))
    assert store.status is not None and store.status.ok, store.status.issues


def test_a_whole_reload_rejected_by_a_file_still_names_the_new_object_that_gave_way(
    tmp_path: Path,
) -> None:
    """A new object taking a file's name gives way, and the set without it still does not
    load (a file took a served object's name): the rejection names both."""
    (tmp_path / "c.yaml").write_text(rejecting("c", "gpu"), encoding="utf-8")
    src, store = _sources([str(tmp_path)])
    src.objects_changed(_listed(A, B))
    good = store.current
    (tmp_path / "b.yaml").write_text(rejecting("b", "zone"), encoding="utf-8")
    src.objects_changed(_listed(A, B, policy_object(rejecting("c", "arm"))))
    assert store.current is good
    assert store.status is not None and not store.status.ok and not store.status.partial
    named = sorted(str(i).split(":")[0] for i in store.status.issues)
    assert "schedulingpolicy/c" in named, named
    assert any(name.endswith("b.yaml") or name == "schedulingpolicy/b" for name in named), named
