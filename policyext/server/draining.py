"""Leaving without refusing a call: the drain window between SIGTERM and gunicorn's stop.

gunicorn stops accepting the moment it is told to stop. Behind a Service that refuses
the calls a load balancer still sends while the endpoint's removal propagates (kube-proxy
on every node, or a load balancer waiting for its next health check): kube-scheduler sees
a refused connection and the pod fails its scheduling cycle. So a SIGTERM starts a drain
instead (`--shutdown-delay` seconds, `DrainingArbiter`):

- /readyz answers 503 at once (`active()`, in every worker), so that health checks take
  the replica out of the rotation;
- the listeners stay open and every call is answered, as before, but with
  `Connection: close`: a client that keeps its connection alive (kube-scheduler does)
  opens a new one, which the load balancer gives to a ready replica;
- when the window ends, gunicorn's graceful stop finishes the calls in flight (up to its
  `graceful_timeout`) and the server exits.

The arbiter tells its workers with `DRAIN_SIGNAL` (a signal, not a flag looked at per
request: the scheduling call's path is unchanged until then), and keeps the news in a flag
shared with the workers it forks later (one that replaces a crashed worker during the
window drains from its start). A worker sent SIGTERM by someone else while the flag does
not say "stopping" (systemd or a test signalling the whole process group, gunicorn
replacing its workers on SIGHUP) drains too, for the same window on its own clock, then
stops. SIGINT and SIGQUIT still stop at once, and a delay of 0 restores gunicorn's own
SIGTERM.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import time
from typing import Any, Final

from gunicorn.arbiter import Arbiter

log = logging.getLogger("policyext.server")

# the arbiter's word to its workers; gunicorn's workers leave SIGUSR2 unused (the arbiter
# itself reads it as "re-execute", but is never sent it by this module)
DRAIN_SIGNAL: Final = signal.SIGUSR2

# this process drains (a worker, once told)
_draining = False


def active() -> bool:
    """Whether this process is draining: /readyz then answers 503."""
    return _draining


def start() -> None:
    """This process drains from now on (called by the worker when told)."""
    global _draining  # noqa: PLW0603 - one flag per process, set once, read by /readyz
    _draining = True


class DrainFlag:
    """Where the server is in its shutdown, shared by the arbiter with the workers it
    forks: serving, draining, or stopping (the window is over: a SIGTERM now means stop)."""

    SERVING: Final = 0
    DRAINING: Final = 1
    STOPPING: Final = 2

    def __init__(self) -> None:
        self._value = multiprocessing.RawValue(ctypes.c_int, self.SERVING)

    def drain(self) -> None:
        self._value.value = self.DRAINING

    def stop(self) -> None:
        self._value.value = self.STOPPING

    @property
    def draining(self) -> bool:
        return bool(self._value.value == self.DRAINING)

    @property
    def stopping(self) -> bool:
        return bool(self._value.value == self.STOPPING)


class DrainingArbiter(Arbiter):  # type: ignore[misc]
    """gunicorn's arbiter, whose SIGTERM starts a drain of `shutdown_delay` seconds
    (see the module's doc) before the graceful stop."""

    def __init__(self, app: Any, shutdown_delay: float, flag: DrainFlag) -> None:
        super().__init__(app)
        self.shutdown_delay = shutdown_delay
        self.drain_flag = flag
        self._drain_ends: float | None = None

    def handle_term(self) -> None:
        if self.shutdown_delay <= 0:
            self.drain_flag.stop()
            raise StopIteration  # gunicorn's own: stop now
        if self._drain_ends is not None:
            return  # draining already; the window keeps its end
        self._drain_ends = time.monotonic() + self.shutdown_delay
        self.drain_flag.drain()
        self.log.info(
            "SIGTERM: draining for %g s (not ready; every call still answered, each "
            "connection closed after its answer), then stopping",
            self.shutdown_delay,
        )
        for pid in list(self.WORKERS):
            try:
                os.kill(pid, DRAIN_SIGNAL)
            except ProcessLookupError:
                continue  # (reaped on the next turn)

    def wait_for_signals(self, timeout: float = 1.0) -> list[int]:
        if self._drain_ends is not None:  # wake when the window ends, not up to 1 s later
            timeout = max(0.0, min(timeout, self._drain_ends - time.monotonic()))
        signals: list[int] = super().wait_for_signals(timeout=timeout)
        return signals

    def murder_workers(self) -> None:
        super().murder_workers()
        if self._drain_ends is not None and time.monotonic() >= self._drain_ends:
            self.log.info("the drain window is over: stopping")
            self.drain_flag.stop()
            raise StopIteration  # the arbiter's loop stops gracefully (halt)
