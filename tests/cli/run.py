"""`policyext` run as a user runs it: a process, its output and its exit status."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[2]
RULES: Final = REPO / "rules"
FIXTURES: Final = RULES / "tests" / ".fixtures"


def policyext(
    *args: str | Path, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`policyext ARGS...` in a process of its own (the console script's module)."""
    environment = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "policyext.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=environment,
        cwd=cwd,
        timeout=120,  # a hang is a failure, never a slow machine's: each call takes ~1 s
        check=False,
    )
