"""Fixtures for the end-to-end tests: one real control plane per test session.

The binaries are built on first use (slow once, cached after). Without a Go toolchain the
tests skip, unless POLICYEXT_REQUIRE_ALL=1 (as in CI), where a skip would hide a gap.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.e2e.binaries import (
    COMPONENTS,
    Binaries,
    cache_root,
    ensure_binaries,
    go_available,
    version_key,
)
from tests.e2e.binaries import log as binaries_log
from tests.e2e.controlplane import POLICYEXT, ControlPlane, KubeClient
from tests.e2e.rbac import grant_extender_rbac, wait_until_granted
from tests.unavailable import skip_or_fail

DEFAULT_SCHEDULER_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
"""
LOG_TAIL_LINES = 60


def _cached() -> bool:
    return all((cache_root() / version_key() / name).is_file() for name in COMPONENTS)


@pytest.fixture(scope="session")
def e2e_binaries(request: pytest.FixtureRequest) -> Binaries:
    if _cached():
        return ensure_binaries()
    if go_available() is None:
        skip_or_fail("the e2e tests build Kubernetes from source and need `go` on PATH")
    # The first build takes many minutes: show its progress instead of a silent terminal.
    handler = _TerminalHandler(request.config)
    binaries_log.addHandler(handler)
    binaries_log.setLevel(logging.INFO)
    try:
        return ensure_binaries()
    finally:
        binaries_log.removeHandler(handler)


class _TerminalHandler(logging.Handler):
    """Writes log records straight to the terminal, past pytest's output capture."""

    def __init__(self, config: pytest.Config) -> None:
        super().__init__(logging.INFO)
        self.capture = config.pluginmanager.getplugin("capturemanager")
        self.reporter = config.pluginmanager.getplugin("terminalreporter")

    def emit(self, record: logging.LogRecord) -> None:
        if self.reporter is None:
            return
        if self.capture is None:
            self.reporter.write_line(self.format(record))
            return
        with self.capture.global_and_fixture_disabled():
            self.reporter.write_line(self.format(record))


@pytest.fixture(scope="session")
def control_plane(
    e2e_binaries: Binaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    # Under pytest's basetemp, which keeps the last runs: the logs outlive a failed session.
    with ControlPlane(e2e_binaries, tmp_path_factory.mktemp("controlplane")) as plane:
        yield plane


@pytest.fixture(scope="session")
def default_scheduler(control_plane: ControlPlane) -> str:
    """Runs the stock kube-scheduler for the session; returns its scheduler name."""
    control_plane.start_scheduler(DEFAULT_SCHEDULER_CONFIG, name="default-scheduler")
    return "default-scheduler"


@pytest.fixture(scope="session")
def policyext_kubeconfig(control_plane: ControlPlane) -> Path:
    """A kubeconfig of the `policyext` identity, granted exactly the extender's RBAC (the
    Helm chart's): what every extender of the e2e tests runs with."""
    grant_extender_rbac(control_plane.client())
    wait_until_granted(control_plane.client(POLICYEXT))
    return control_plane.write_kubeconfig(POLICYEXT, control_plane.workdir / "policyext.kubeconfig")


@pytest.fixture
def admin(control_plane: ControlPlane) -> Iterator[KubeClient]:
    """An admin client; every node a test made is deleted after it, so tests do not see
    each other's nodes."""
    client = control_plane.client()
    yield client
    for node in client.get("/api/v1/nodes")["items"]:
        client.delete(f"/api/v1/nodes/{node['metadata']['name']}")


@pytest.fixture
def namespace(admin: KubeClient) -> Iterator[str]:
    """A fresh namespace. Its pods are force-deleted after the test (no kubelet would ever
    confirm a graceful delete); the namespace itself stays, as no namespace controller
    runs to finish deleting it."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    admin.create_namespace(name)
    yield name
    admin.request("DELETE", f"/api/v1/namespaces/{name}/pods", query={"gracePeriodSeconds": "0"})


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Appends the tail of every component's log to the report of a failed e2e test."""
    report = yield
    plane = getattr(item, "funcargs", {}).get("control_plane")
    if report.failed and isinstance(plane, ControlPlane):
        for name, path in plane.logs():
            report.sections.append((f"{name} log ({path})", _tail(path)))
    return report


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as error:
        return f"(unreadable: {error})"
    return "\n".join(lines[-LOG_TAIL_LINES:])
