"""Fixtures of the chart tests: a helm binary (fetched once, cached) and rendered charts.

Without helm the tests skip with the reason, unless POLICYEXT_REQUIRE_ALL=1 (as in CI),
where a skip would hide a gap.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chart.chart import Chart
from tests.chart.helmbin import HelmUnavailable, ensure_helm
from tests.unavailable import skip_or_fail


@pytest.fixture(scope="session")
def helm() -> Path:
    try:
        return ensure_helm()
    except HelmUnavailable as reason:
        skip_or_fail(str(reason))


@pytest.fixture(scope="session")
def chart(helm: Path) -> Chart:
    return Chart(helm)
