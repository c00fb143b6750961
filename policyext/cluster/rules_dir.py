"""Noticing that policy files or folders changed, so that they are loaded again.

Polling, on purpose: a fingerprint of every policy file (its resolved path, size, change
time and inode) taken once a second sees every way a file can change — an editor writing
a new file and renaming it, kubelet swapping the `..data` link of a mounted ConfigMap to a
new timestamped folder, a volume that inotify does not watch — at the cost of a few stat
calls. A change is loaded only once the fingerprint holds still for a moment, so a file
caught half-written is not reported as broken.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Final

from policyext.policy import discover_files

log = logging.getLogger("policyext.reload")

POLL_INTERVAL: Final = 1.0  # a change is served within about 1 s, well inside 2 s
SETTLE: Final = 0.1

Fingerprint = tuple[tuple[str, str, int, int, int], ...]


def fingerprint(paths: Sequence[str]) -> Fingerprint:
    """What identifies the current content of the policy files under `paths`."""
    files, issues = discover_files(paths)
    entries = [(issue.location.file, "missing", 0, 0, 0) for issue in issues]
    for path, shown in files:
        try:
            stat = os.stat(path)
        except OSError:
            entries.append((shown, "unreadable", 0, 0, 0))
            continue
        entries.append((shown, str(path), stat.st_mtime_ns, stat.st_size, stat.st_ino))
    return tuple(entries)


class DirectoryWatcher:
    """A daemon thread calling `on_change` after the files under `paths` changed."""

    def __init__(
        self,
        paths: Sequence[str],
        on_change: Callable[[], object],
        *,
        interval: float = POLL_INTERVAL,
        settle: float = SETTLE,
    ) -> None:
        self.paths = list(paths)
        self.on_change = on_change
        self.interval = interval
        self.settle = settle
        self._last = fingerprint(self.paths)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="policyext-rules-watch", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None

    def check(self) -> bool:
        """Look once; call `on_change` and return True when the files changed."""
        current = fingerprint(self.paths)
        if current == self._last:
            return False
        if self._stop.wait(self.settle) or fingerprint(self.paths) != current:
            return False  # still being written: look again at the next tick
        self._last = current
        try:
            self.on_change()
        except Exception:  # a bug in a reload must not end the watching
            log.exception("reloading the policies failed")
        return True

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception:
                log.exception("watching %s failed", ", ".join(self.paths))
