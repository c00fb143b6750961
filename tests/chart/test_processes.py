"""What each container of the policyext image runs: its `command`, or without one the
image's ENTRYPOINT (`policyext serve`, the Dockerfile's), followed by its `args`."""

from __future__ import annotations

import pytest

from tests.chart.chart import CHART, Chart, process

CRD = CHART / "ci" / "crd-values.yaml"


@pytest.mark.parametrize(
    ("container", "runs"),
    [
        ("extender", ["policyext", "serve", "--in-cluster"]),
        # not the entrypoint's `serve`: `policyext serve webhook ...` would read a policy
        # folder named `webhook` and exit, and with failurePolicy Fail nothing could be
        # written
        ("webhook", ["policyext", "webhook", "--bind=0.0.0.0:8443"]),
    ],
)
def test_each_container_of_the_image_runs_its_own_policyext_command(
    chart: Chart, container: str, runs: list[str]
) -> None:
    rendered = chart.render([CRD])
    assert process(rendered.container(container))[: len(runs)] == runs
