"""The caches' staleness and relists on /metrics, read from the live source at scrape time."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from prometheus_client import CollectorRegistry

from policyext.server.metrics import Metrics
from tests.server.metrics_scrape import Scrape


@dataclass(frozen=True)
class _State:
    resource: str
    staleness_seconds: float
    relists: int
    synced: bool


class _Source:
    def __init__(self, *states: _State) -> None:
        self.states = list(states)

    def watch_stats(self) -> list[_State]:
        return self.states


@pytest.mark.parametrize(
    ("state", "staleness", "relists", "synced"),
    [
        (_State("nodes", 1.5, 1, True), 1.5, 1.0, 1.0),
        (_State("pods", 0.0, 3, True), 0.0, 3.0, 1.0),
        (_State("pods", math.inf, 0, False), math.inf, 0.0, 0.0),
    ],
)
def test_each_watched_resource_reports_its_staleness_relists_and_sync(
    state: _State, staleness: float, relists: float, synced: float
) -> None:
    metrics = Metrics(CollectorRegistry())
    metrics.watch_caches(_Source(state))

    scrape = Scrape(metrics.render()[0].decode())

    labels = {"resource": state.resource}
    assert scrape.value("policyext_cache_staleness_seconds", labels) == staleness
    assert scrape.value("policyext_cache_relists_total", labels) == relists
    assert scrape.value("policyext_cache_synced", labels) == synced


def test_the_values_are_read_at_every_scrape_not_when_registered() -> None:
    source = _Source(_State("nodes", 10.0, 1, True))
    metrics = Metrics(CollectorRegistry())
    metrics.watch_caches(source)
    Scrape(metrics.render()[0].decode())

    source.states = [_State("nodes", 0.25, 2, True)]
    scrape = Scrape(metrics.render()[0].decode())

    assert scrape.value("policyext_cache_staleness_seconds", {"resource": "nodes"}) == 0.25
    assert scrape.value("policyext_cache_relists_total", {"resource": "nodes"}) == 2.0


def test_a_server_without_a_live_source_has_no_cache_series() -> None:
    text = Metrics(CollectorRegistry()).render()[0].decode()

    assert "policyext_cache_" not in text
