"""What a test does when a tool it needs is missing: skip with the reason, except where
POLICYEXT_REQUIRE_ALL=1 (as in CI), where a skip would hide a gap and fails instead."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def skip_or_fail(reason: str) -> NoReturn:
    if os.environ.get("POLICYEXT_REQUIRE_ALL") == "1":
        pytest.fail(f"{reason} (POLICYEXT_REQUIRE_ALL=1 forbids skipping)")
    pytest.skip(reason)
