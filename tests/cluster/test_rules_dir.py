"""Policy folders are watched: every kind of change is seen, a kubelet-projected ConfigMap
is read as one whole version, and half-written files are not reported as broken."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from policyext.cluster.rules_dir import DirectoryWatcher, fingerprint
from policyext.policy.compile import load_policy_set
from policyext.policy.loader import discover_files
from tests.cluster.policies import rejecting
from tests.projection import project

A = rejecting("a", "spot")
B = rejecting("b", "gpu")


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _replace_by_rename(path: Path, text: str) -> None:
    staging = path.with_name("." + path.name + ".swp")
    staging.write_text(text, encoding="utf-8")
    staging.rename(path)


def _append_comment(path: Path, _text: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write("# edited\n")


CHANGES: list[tuple[str, Callable[[Path], None]]] = [
    ("a file is rewritten in place", lambda d: _write(d / "a.yaml", B)),
    (
        "a file is replaced by a rename, as editors save",
        lambda d: _replace_by_rename(d / "a.yaml", B),
    ),
    ("a file grows", lambda d: _append_comment(d / "a.yaml", "")),
    ("a file is added", lambda d: _write(d / "b.yaml", B)),
    ("a file is removed", lambda d: (d / "a.yaml").unlink()),
    (
        "a file in a subfolder is added",
        lambda d: (d / "sub").mkdir() or _write(d / "sub" / "b.yml", B),
    ),
]


@pytest.mark.parametrize(("change", "make"), CHANGES, ids=[c for c, _ in CHANGES])
def test_a_change_to_a_policy_folder_is_noticed(
    tmp_path: Path, change: str, make: Callable[[Path], None]
) -> None:
    _write(tmp_path / "a.yaml", A)
    calls: list[int] = []
    watcher = DirectoryWatcher([str(tmp_path)], lambda: calls.append(1), settle=0.0)
    assert not watcher.check(), "nothing changed yet"
    time.sleep(0.01)  # a different change time even on coarse clocks
    make(tmp_path)
    assert watcher.check(), change
    assert calls == [1]
    assert not watcher.check(), "the same state is not reported twice"


def test_files_that_are_not_policies_are_not_watched(tmp_path: Path) -> None:
    _write(tmp_path / "a.yaml", A)
    watcher = DirectoryWatcher([str(tmp_path)], lambda: None, settle=0.0)
    _write(tmp_path / "README.md", "notes")
    _write(tmp_path / ".hidden.yaml", B)
    assert not watcher.check()


def test_a_kubelet_update_of_a_mounted_configmap_is_noticed(tmp_path: Path) -> None:
    folder = project(tmp_path / "rules", {"a.yaml": A})
    calls: list[int] = []
    watcher = DirectoryWatcher([str(folder)], lambda: calls.append(1), settle=0.0)
    project(folder, {"a.yaml": B})
    assert watcher.check()
    assert calls == [1]


def test_a_projected_folder_is_read_through_one_version_and_named_by_its_visible_path(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path / "rules", {"a.yaml": A, "b.yaml": B})
    files, issues = discover_files([folder])
    assert not issues
    shown = sorted(name for _read, name in files)
    assert shown == [str(folder / "a.yaml"), str(folder / "b.yaml")]
    real = Path(os.path.realpath(folder / "..data"))
    assert all(read.parent == real for read, _name in files)
    policy_set = load_policy_set([folder])
    assert [p.name for p in policy_set.policies] == ["a", "b"]
    assert policy_set.sources == tuple(shown)


def test_a_file_still_being_written_is_loaded_only_once_it_holds_still(tmp_path: Path) -> None:
    policy = tmp_path / "a.yaml"
    _write(policy, A)
    calls: list[int] = []
    watcher = DirectoryWatcher([str(tmp_path)], lambda: calls.append(1), settle=0.2)
    stop = threading.Event()

    def keep_writing() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            _write(policy, A + "#" * n + "\n")
            time.sleep(0.02)

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        assert not watcher.check(), "a file changing during the settle time is not loaded"
    finally:
        stop.set()
        writer.join()
    assert watcher.check()
    assert calls == [1]


def test_the_fingerprint_names_a_missing_path(tmp_path: Path) -> None:
    assert fingerprint([str(tmp_path / "gone")]) == ((str(tmp_path / "gone"), "missing", 0, 0, 0),)


def test_the_watcher_thread_reloads_when_a_file_changes(tmp_path: Path) -> None:
    _write(tmp_path / "a.yaml", A)
    seen = threading.Event()
    watcher = DirectoryWatcher([str(tmp_path)], seen.set, interval=0.2)
    watcher.start()
    try:
        _write(tmp_path / "a.yaml", B)
        assert seen.wait(60), "no reload: the watcher did not see the change"
    finally:
        watcher.stop()


def test_a_failing_reload_does_not_end_the_watching(tmp_path: Path) -> None:
    _write(tmp_path / "a.yaml", A)
    calls: list[int] = []

    def reload() -> None:
        calls.append(1)
        raise RuntimeError("bug")

    watcher = DirectoryWatcher([str(tmp_path)], reload, settle=0.0)
    _write(tmp_path / "a.yaml", B)
    assert watcher.check()
    time.sleep(0.01)
    _write(tmp_path / "a.yaml", A)
    assert watcher.check()
    assert calls == [1, 1]


def test_a_projected_folder_swapped_while_it_is_listed_is_an_issue_not_an_empty_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from policyext.policy import loader
    from policyext.policy.loader import SWAPPED_WHILE_READ

    folder = project(tmp_path / "rules", {"a.yaml": A})
    walk = loader._walk

    def walk_during_an_update(root: Path) -> Iterator[Path]:
        project(folder, {"b.yaml": B})  # kubelet swaps and removes the version being listed
        return walk(root)

    monkeypatch.setattr(loader, "_walk", walk_during_an_update)
    files, issues = discover_files([folder])
    assert files == []
    assert [i.message for i in issues] == [SWAPPED_WHILE_READ]
