"""The verbs' one entrance (server/entrance.py) as the tests call it in process: as Flask's
view calls it (`answer`: the reply, accounted at once) and through the worker's direct lane
(`direct`: what the event loop calls, the reply then what runs once it is sent)."""

from __future__ import annotations

from collections.abc import Callable

from policyext.policy import LiveNodeSource
from policyext.server.entrance import Verbs
from policyext.server.lanes import direct_lane, hot_paths
from policyext.server.metrics import Metrics
from policyext.store import PolicyStore


class InProcessVerbs:
    """filter and prioritize over one store, node source and metrics."""

    def __init__(
        self,
        store: PolicyStore,
        source: LiveNodeSource | None,
        metrics: Metrics,
        clock: Callable[[], int],
        max_body: int,
        prefix: str,
    ) -> None:
        self.verbs = Verbs(store, source, metrics, clock, prefix)
        self.direct = direct_lane(self.verbs, hot_paths(prefix), max_body)
        self.metrics = metrics
        self.names = self.verbs.names

    def answer(self, verb: str, body: bytes) -> bytes:
        _, reply, account = self.verbs.answer(verb, body)
        account()
        return reply
