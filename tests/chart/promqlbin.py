"""The PromQL checker of the chart tests (tests/chart/promql: the Prometheus parser, from the
published Go module), built once with the machine's Go and cached outside the repository.

`python -m tests.chart.promqlbin` builds it ahead of a test run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "promql"


class CheckerUnavailable(RuntimeError):
    """Why there is no checker (the tests skip with this, or fail in CI)."""


def _cached_path() -> Path:
    # keyed by the sources: a changed go.mod or main.go builds a new checker
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update((SOURCE / name).read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "policyext" / "promql" / digest.hexdigest()[:16] / "promqlcheck"


def ensure_checker() -> Path:
    path = _cached_path()
    if path.is_file():
        return path
    go = shutil.which("go")
    if go is None:
        raise CheckerUnavailable("the PromQL check builds the Prometheus parser with Go: no `go`")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as work:
        built = Path(work) / "promqlcheck"
        done = subprocess.run(
            [go, "build", "-trimpath", "-o", str(built), "."],
            cwd=SOURCE,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        if done.returncode != 0:
            raise CheckerUnavailable(f"building the PromQL checker failed: {done.stderr[-2000:]}")
        built.replace(path)  # renamed into place: a concurrent run never sees half a binary
    return path


def check(expressions: list[str]) -> subprocess.CompletedProcess[str]:
    """Each expression (one line each) through the Prometheus parser."""
    return subprocess.run(
        [str(ensure_checker())],
        input="".join(f"{' '.join(e.split())}\n" for e in expressions),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_parsed(expressions: list[str]) -> None:
    """Every expression accepted by the Prometheus parser (skipped without Go, or failed
    in CI)."""
    from tests.unavailable import skip_or_fail

    try:
        ensure_checker()
    except CheckerUnavailable as reason:
        skip_or_fail(str(reason))
    accepted = check(expressions)
    assert accepted.returncode == 0, accepted.stdout
    assert accepted.stdout.count("ok ") == len(expressions)


if __name__ == "__main__":
    print(ensure_checker())
