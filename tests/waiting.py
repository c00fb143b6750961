"""The suite's one limit on a wait, and the one way to wait for an event.

A test never sleeps for a fixed time and holds nothing to a wall-clock deadline: how long
a step takes depends on how busy the machine is (speed is measured in bench/, never in a
test). It waits for the event itself (a log line, a metric, a pod's binding, a process's
exit) and stops as soon as it comes. The limit on the wait only bounds a bug, so that a
hang fails the test instead of stalling the suite; it is no promise of speed, and a busy
machine never reaches it on a correct build.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, TypeVar

# How long a test waits for anything (an event, an answer, a process to end, a handshake
# to be refused): the suite's one generous limit. Everything that waits uses it, or a
# multiple of it for a step known to take longer (the API server's first start).
PATIENCE: Final = 60.0

# how often a probe is asked again: often enough that a wait ends close to its event
INTERVAL: Final = 0.05

T = TypeVar("T")


def eventually(
    probe: Callable[[], T | None],
    timeout: float = PATIENCE,
    interval: float = INTERVAL,
    what: str = "condition",
) -> T:
    """The first truthy value of `probe()`, asked again every `interval` until it is
    truthy; past `timeout` (a limit on a bug) a TimeoutError naming `what` was awaited. A
    probe returns "not yet" (None, False, an empty value) rather than raising on a slow
    answer."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not so after {timeout:.0f} s")
        time.sleep(interval)
