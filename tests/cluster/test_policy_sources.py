"""Policies from files and a ConfigMap are one set, reloaded whole on every change; a
rejected or missing ConfigMap keeps the last good set serving and says why."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from policyext.cluster.events import EVENT_MESSAGE_LIMIT
from policyext.cluster.policy_sources import EVENT_ISSUES, PolicySources, event_message
from policyext.cluster.rules_configmap import (
    ConfigMapNameError,
    ConfigMapRef,
    ConfigMapState,
    ConfigMapWatch,
    _Handler,
    event_body,
    policy_texts,
)
from policyext.policy.compile import NOT_LOADED
from policyext.policy.model import Issue, Location
from policyext.store import PolicyStore, ReloadStatus
from tests.cluster.policies import BROKEN, rejecting

REF = ConfigMapRef("kube-system", "policies")
A = rejecting("a", "spot")
B = rejecting("b", "gpu")


def configmap(
    data: dict[str, str], version: str = "1", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": REF.name,
            "namespace": REF.namespace,
            "uid": "u-1",
            "resourceVersion": version,
            "labels": labels or {},
        },
        "data": data,
    }


def state(data: dict[str, str], version: str = "1") -> ConfigMapState:
    return ConfigMapState(REF, True, policy_texts(REF, configmap(data)), "u-1", version)


@dataclass
class Recorded:
    events: list[tuple[str, bool, str]] = field(default_factory=list)

    def record(self, state: ConfigMapState, ok: bool, message: str) -> None:
        self.events.append((state.resource_version, ok, message))


def sources(paths: list[str] | None = None) -> tuple[PolicySources, PolicyStore, Recorded]:
    store = PolicyStore()
    recorded = Recorded()
    return PolicySources(store, paths or [], REF, recorded), store, recorded  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kube-system/policies", ConfigMapRef("kube-system", "policies")),
        (" ns/name ", ConfigMapRef("ns", "name")),
        ("name-only", None),
        ("/name", None),
        ("ns/", None),
        ("a/b/c", None),
    ],
)
def test_the_configmap_is_named_as_namespace_slash_name(
    text: str, expected: ConfigMapRef | None
) -> None:
    if expected is None:
        with pytest.raises(ConfigMapNameError, match="NAMESPACE/NAME"):
            ConfigMapRef.parse(text)
    else:
        assert ConfigMapRef.parse(text) == expected


def test_only_keys_that_name_policy_files_are_policies() -> None:
    texts = policy_texts(
        REF, configmap({"a.yaml": A, "b.yml": B, "c.json": "{}", "notes.txt": "x", ".x.yaml": A})
    )
    assert sorted(texts) == [
        "configmap/kube-system/policies/a.yaml",
        "configmap/kube-system/policies/b.yml",
        "configmap/kube-system/policies/c.json",
    ]


def test_nothing_is_served_before_the_configmap_is_read() -> None:
    src, store, _ = sources()
    assert src.reload() is None
    assert store.current is NOT_LOADED and not store.loaded


def test_a_valid_configmap_is_served_and_announced() -> None:
    src, store, recorded = sources()
    src.configmap_changed(state({"a.yaml": A}, "7"))
    assert store.loaded and [p.name for p in store.current.policies] == ["a"]
    assert recorded.events == [("7", True, f"policy version {store.current.version} is now served")]
    assert store.status is not None and "resourceVersion 7" in store.status.source


def test_a_rejected_update_keeps_the_last_good_set_and_names_the_key_line_and_column() -> None:
    src, store, recorded = sources()
    src.configmap_changed(state({"a.yaml": A}, "7"))
    good = store.current
    src.configmap_changed(state({"a.yaml": A, "broken.yaml": BROKEN}, "8"))
    assert store.current is good
    assert store.status is not None and not store.status.ok
    [issue] = store.status.issues
    assert str(issue).startswith("configmap/kube-system/policies/broken.yaml:8:")
    version, ok, message = recorded.events[-1]
    assert (version, ok) == ("8", False)
    assert message.startswith(f"policy update rejected, version {good.version} keeps serving: ")
    assert "broken.yaml:8:" in message


@pytest.mark.parametrize(
    ("loaded_before", "deleted", "expected"),
    [
        (
            True,
            True,
            "ConfigMap kube-system/policies was deleted; policy version {v} keeps serving",
        ),
        (False, False, "ConfigMap kube-system/policies does not exist; no policies are loaded"),
    ],
)
def test_a_missing_configmap_is_reported_and_the_last_good_set_kept(
    loaded_before: bool, deleted: bool, expected: str
) -> None:
    src, store, _ = sources()
    if loaded_before:
        src.configmap_changed(state({"a.yaml": A}))
    before = store.current
    src.configmap_changed(ConfigMapState(REF, False, {}, deleted=deleted))
    assert store.current is before
    assert store.status is not None and not store.status.ok
    assert store.status.error == expected.format(v=before.version)


def test_files_and_the_configmap_are_served_as_one_set(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(B, encoding="utf-8")
    src, store, _ = sources([str(tmp_path)])
    src.configmap_changed(state({"a.yaml": A}))
    assert [p.name for p in store.current.policies] == ["a", "b"]
    (tmp_path / "b.yaml").write_text(rejecting("a", "gpu"), encoding="utf-8")
    status = src.reload()
    assert status is not None and not status.ok, "two policies named a across the sources"
    assert [p.name for p in store.current.policies] == ["a", "b"]


def test_the_event_message_lists_the_first_errors_and_how_many_more() -> None:
    src, _store, recorded = sources()
    src.configmap_changed(state({"a.yaml": A}))
    broken = {
        f"broken{i}.yaml": BROKEN.replace("name: broken", f"name: broken{i}") for i in range(7)
    }
    src.configmap_changed(state(broken, "9"))
    message = recorded.events[-1][2]
    assert message.count(".yaml:8:") == 5
    assert message.endswith("(and 2 more)")


class _Watch:
    """ConfigMapWatch's update logic without a client."""

    def __init__(self) -> None:
        self.changes: list[ConfigMapState] = []
        self.watch = ConfigMapWatch.__new__(ConfigMapWatch)
        self.watch.ref = REF
        self.watch.state = None
        self.watch.on_change = self.changes.append
        self.watch._lock = threading.Lock()
        self.handler = _Handler(self.watch)


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([("list", configmap({"a.yaml": A}))], ["exists"]),
        ([("list", None)], ["missing"]),
        ([("list", None), ("list", None)], ["missing"]),
        (
            [("list", configmap({"a.yaml": A})), ("MODIFIED", configmap({"a.yaml": B}, "2"))],
            ["exists", "exists"],
        ),
        (
            [
                ("list", configmap({"a.yaml": A})),
                ("MODIFIED", configmap({"a.yaml": A}, "2", {"x": "y"})),
            ],
            ["exists"],
        ),
        ([("list", configmap({"a.yaml": A})), ("list", configmap({"a.yaml": A}, "3"))], ["exists"]),
        (
            [("list", configmap({"a.yaml": A})), ("DELETED", configmap({"a.yaml": A}, "2"))],
            ["exists", "deleted"],
        ),
        (
            [
                ("list", None),
                ("ADDED", configmap({"a.yaml": A}, "2")),
                ("DELETED", configmap({}, "3")),
                ("ADDED", configmap({"a.yaml": B}, "4")),
            ],
            ["missing", "exists", "deleted", "exists"],
        ),
    ],
    ids=[
        "the first list reports the ConfigMap",
        "the first list reports it missing",
        "missing twice is reported once",
        "a change of content is reported",
        "a change of labels only is not",
        "a relist with the same content is not",
        "a deletion is reported",
        "created, deleted and recreated",
    ],
)
def test_the_watch_reports_changes_of_policy_content_only(
    steps: list[tuple[str, Any]], expected: list[str]
) -> None:
    w = _Watch()
    for kind, obj in steps:
        if kind == "list":
            w.handler.replace([] if obj is None else [obj], 0.0)
        else:
            w.handler.apply(kind, obj)
    assert [
        "deleted" if s.deleted else "exists" if s.exists else "missing" for s in w.changes
    ] == expected


def test_the_event_is_named_by_the_configmap_version_so_workers_record_it_once() -> None:
    body = event_body(state({"a.yaml": A}, "42"), "PolicyRejected", "x" * 5000, "pod-1")
    assert body["metadata"] == {"name": "policies.42.policyrejected", "namespace": "kube-system"}
    assert body["type"] == "Warning"
    assert body["involvedObject"]["kind"] == "ConfigMap" and body["involvedObject"]["uid"] == "u-1"
    assert len(body["message"]) == EVENT_MESSAGE_LIMIT and body["message"].endswith("...")
    assert event_body(state({}, "43"), "PolicyApplied", "ok", "pod-1")["type"] == "Normal"


# what a load may raise besides the PolicyError of invalid policies, and what is said of it
UNEXPECTED = [
    (RecursionError("maximum recursion depth exceeded"), "a value is nested too deeply to load"),
    (MemoryError(), "they take more memory than there is to load them"),
    (KeyError("spec"), "KeyError: 'spec'"),
]


@pytest.mark.parametrize(
    ("error", "says"), UNEXPECTED, ids=[type(e).__name__ for e, _ in UNEXPECTED]
)
def test_a_reload_that_raises_is_a_failed_reload_and_the_last_good_set_keeps_serving(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    error: BaseException,
    says: str,
) -> None:
    src, store, recorded = sources()
    src.configmap_changed(state({"a.yaml": A}, "7"))
    good = store.current

    def exploding(*_args: object) -> None:
        raise error

    monkeypatch.setattr("policyext.cluster.policy_sources.load_policies", exploding)
    with caplog.at_level(logging.ERROR, logger="policyext.reload"):
        src.configmap_changed(state({"a.yaml": B}, "8"))
    # the reply says what failed; the log keeps the traceback, to find the bug by
    [logged] = [r for r in caplog.records if r.name == "policyext.reload"]
    assert logged.exc_info is not None and logged.exc_info[1] is error
    assert store.current is good
    assert (store.reloads_ok, store.reloads_failed) == (1, 1)
    assert store.status is not None and not store.status.ok
    assert store.status.error == f"cannot load policies: {says}"
    assert recorded.events[-1][:2] == ("8", False)
    assert says in recorded.events[-1][2]


BILLION_LAUGHS = "\n".join(
    ["apiVersion: policyext.io/v1alpha1", "kind: SchedulingPolicy", "metadata: {name: lol}"]
    + ["x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 9)}]" for i in range(1, 9)]
)


def test_an_alias_bomb_in_the_configmap_is_a_rejected_update_naming_the_anchor() -> None:
    src, store, _ = sources()
    src.configmap_changed(state({"a.yaml": A}, "7"))
    good = store.current
    src.configmap_changed(state({"a.yaml": A, "lol.yaml": BILLION_LAUGHS}, "8"))
    assert store.current is good and store.reloads_failed == 1
    assert store.status is not None
    [issue] = store.status.issues
    assert str(issue).startswith(
        "configmap/kube-system/policies/lol.yaml:4:5: YAML anchor &x0 is not accepted"
    )


def test_an_unreadable_configmap_is_the_status_until_it_is_read_and_changes_nothing_after() -> None:
    src, store, recorded = sources()
    src.configmap_unreadable("cannot read configmaps: HTTP 403")
    assert store.status is not None and not store.status.ok
    assert store.status.error == "cannot read configmaps: HTTP 403"
    assert store.current is NOT_LOADED and store.reloads_failed == 1
    src.configmap_changed(state({"a.yaml": A}, "7"))
    served = store.status
    # once read, a later failure to read it (the watch's own retries) keeps what it served
    src.configmap_unreadable("cannot read configmaps: HTTP 503")
    assert store.status is served and store.status.ok and store.reloads_failed == 1
    assert [ok for _, ok, _ in recorded.events] == [True]


def test_without_an_event_recorder_a_configmap_change_is_still_served() -> None:
    store = PolicyStore()
    src = PolicySources(store, [], REF)
    src.configmap_changed(state({"a.yaml": A}, "7"))
    assert store.status is not None and store.status.ok
    assert [p.name for p in store.current.policies] == ["a"]


def test_a_configmap_change_before_the_objects_are_listed_serves_nothing_and_records_no_event() -> (
    None
):
    store, recorded = PolicyStore(), Recorded()
    src = PolicySources(store, [], REF, recorded, objects=True)  # type: ignore[arg-type]
    src.configmap_changed(state({"a.yaml": A}, "7"))
    assert store.current is NOT_LOADED and store.status is None
    assert recorded.events == []


@pytest.mark.parametrize(
    ("issues", "tail"),
    [(1, ""), (5, ""), (6, " (and 1 more)"), (8, " (and 3 more)")],
    ids=["one", "five", "six", "eight"],
)
def test_a_rejection_event_lists_the_first_five_issues_and_counts_the_others(
    issues: int, tail: str
) -> None:
    found = tuple(Issue(Location(f"k{i}.yaml", 1, 2), "bad") for i in range(issues))
    message = event_message(ReloadStatus(False, 0.0, "v1", "configmap", found))
    listed = "; ".join(f"k{i}.yaml:1:2: bad" for i in range(min(issues, EVENT_ISSUES)))
    assert message == f"policy update rejected, version v1 keeps serving: {listed}{tail}"
