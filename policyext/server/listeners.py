"""Which listener a request came in on, when `--ops-bind` gives the operations endpoints a
listener of their own.

The worker (server/transport/worker.py) knows each connection's listener from its accept; the
application answers by endpoint, after its routing. The worker says which listener a
request came from by setting it for the thread that runs the application (`entered`),
once per request that goes through the application (never on the direct lane: the lane
answers the verbs only, and only on the verbs listener). Without a worker (the application
in process, in tests) every request is from `BOTH`: one listener serving everything.
"""

from __future__ import annotations

import threading
from enum import Enum


class Listener(Enum):
    BOTH = "both"  # no --ops-bind: one listener for everything
    VERBS = "verbs"  # --bind, with --ops-bind set
    OPS = "ops"  # --ops-bind


_current = threading.local()


def entered(listener: Listener, trusted: bool = True) -> None:
    """The listener of the request this thread is about to answer, and whether its client
    is trusted with introspection: False on the operations listener for a TLS client
    without a certificate of `--tls-client-allow`, when that list is given."""
    _current.listener = listener
    _current.trusted = trusted


def current_listener() -> Listener:
    listener: Listener = getattr(_current, "listener", Listener.BOTH)
    return listener


def current_trusted() -> bool:
    return bool(getattr(_current, "trusted", True))
