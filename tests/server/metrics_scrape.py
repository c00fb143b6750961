"""Reading Prometheus metrics: a scrape of /metrics, or one worker's multiprocess files."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest, multiprocess
from prometheus_client.parser import text_string_to_metric_families

Key = tuple[str, frozenset[tuple[str, str]]]


class Scrape:
    """The samples of one exposition, by sample name and label set."""

    def __init__(self, text: str) -> None:
        self.types: dict[str, str] = {}
        self.labels: dict[str, set[str]] = {}
        self.samples: dict[Key, float] = {}
        for family in text_string_to_metric_families(text):
            self.types[family.name] = family.type
            names = self.labels.setdefault(family.name, set())
            for sample in family.samples:
                names.update(sample.labels)
                self.samples[(sample.name, frozenset(sample.labels.items()))] = sample.value

    def value(self, name: str, labels: Mapping[str, str] | None = None) -> float:
        """One sample's value; 0 when the series does not exist (yet)."""
        return self.samples.get((name, frozenset((labels or {}).items())), 0.0)

    def total(self, name: str, labels: Mapping[str, str] | None = None) -> float:
        """The sum over every series of `name` whose labels include `labels`."""
        wanted = set((labels or {}).items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and wanted <= ls)


def worker_scrape(metrics_dir: Path, pid: int) -> Scrape:
    """What one worker has counted, from its own files in the multiprocess directory."""
    with tempfile.TemporaryDirectory() as only:
        for db in metrics_dir.glob(f"*_{pid}.db"):
            # a file the worker is creating this instant is empty (prometheus_client opens
            # it, then sizes it): it holds no value yet, and the reader would fail on it
            if db.stat().st_size > 0:
                shutil.copy(db, only)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=only)  # type: ignore[no-untyped-call]
        return Scrape(generate_latest(registry).decode())


def worker_pids(metrics_dir: Path) -> set[int]:
    return {int(db.stem.rsplit("_", 1)[1]) for db in metrics_dir.glob("*_*.db")}
