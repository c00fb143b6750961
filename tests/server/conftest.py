"""Fixtures that run `policyext serve` for real and always stop it.

Servers are expensive on a two-core machine: `demo_server` (the example policies and the
demo cluster) is shared by the whole run, and a module that needs other flags starts its
own through `serve`, which stops them when the module is done.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from tests.server.harness import CLUSTER, RULES, ExtenderServer, start_server


class ServerFactory:
    """Starts servers in one work folder and remembers them, to stop them all at the end."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.started: list[ExtenderServer] = []

    def __call__(
        self,
        *flags: str,
        rules: Sequence[Path] = (RULES,),
        snapshot: Path | None = CLUSTER,
        env: Mapping[str, str] | None = None,
        tls: ssl.SSLContext | None = None,
        ops: bool = False,
    ) -> ExtenderServer:
        server = start_server(
            self.workdir, *flags, rules=rules, snapshot=snapshot, env=env, tls=tls, ops=ops
        )
        self.started.append(server)
        return server

    def stop_all(self) -> None:
        for server in self.started:
            server.stop()


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerFactory]:
    """Start a server with the given flags, rules and snapshot; stopped after the module."""
    factory = ServerFactory(tmp_path_factory.mktemp("serve"))
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture(scope="session")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExtenderServer]:
    """rules/ and examples/cluster.yaml with the default flags, shared by every module."""
    server = start_server(tmp_path_factory.mktemp("demo"))
    try:
        yield server
    finally:
        server.stop()
