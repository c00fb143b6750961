"""The committed reply files (fixtures/*.reply.json) and how a deliberate change of
behaviour rewrites them: only with POLICYEXT_UPDATE_FIXTURES=1 exactly, and never in a run
that passes. A test whose reply differs from its file then rewrites the file and skips, so
that the diff is reviewed and the run repeated without the variable; under
POLICYEXT_REQUIRE_ALL=1 (CI) it fails instead, as every skip there does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from tests.unavailable import skip_or_fail

UPDATE_ENV: Final = "POLICYEXT_UPDATE_FIXTURES"


def updating() -> bool:
    """Whether this run is asked to rewrite the reply files (`1`; any other value is not)."""
    return os.environ.get(UPDATE_ENV) == "1"


def assert_matches_fixture(actual: bytes, path: Path) -> None:
    """`actual` is the file's bytes; else, when updating, the file is rewritten and the
    test skips (fails under POLICYEXT_REQUIRE_ALL=1)."""
    expected = path.read_bytes() if path.exists() else None
    if actual == expected:
        return
    if updating():
        path.write_bytes(actual)
        skip_or_fail(f"rewrote {path.name}: review the diff, then run again without {UPDATE_ENV}")
    assert actual == expected, f"{path.name} differs (a deliberate change: {UPDATE_ENV}=1)"
