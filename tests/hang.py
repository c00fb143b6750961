"""A generous limit on a call that could hang, so that a hang fails the test instead of
stalling the suite. It bounds a bug (an endless loop, exponential backtracking), never a
speed: speed belongs in bench/."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from tests.waiting import PATIENCE


class Hang(BaseException):
    """A call ran past its limit (a BaseException, so no `except Exception` eats it)."""


@contextmanager
def hang_guard(seconds: float = PATIENCE) -> Iterator[None]:
    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
