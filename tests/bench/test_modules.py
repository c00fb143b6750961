"""Every benchmark imports: most of them run only by hand (`python -m bench.NAME`) against
a real control plane, so a name they import that moved would otherwise be noticed by the
next person who measures (bench.reports_burst imported `eventually` from a module that no
longer had it)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
MODULES = sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__main__")


def test_the_benchmarks_are_found() -> None:
    assert {"audit_events", "reports_burst", "replay"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_a_benchmark_module_imports(name: str) -> None:
    module = importlib.import_module(f"bench.{name}")
    assert module.__file__ is not None and Path(module.__file__).parent == BENCH
