"""HAProxy in front of several extenders, as a Service with its readiness puts them.

kube-proxy balances connections, not requests (layer 4): a connection kube-scheduler keeps
alive stays on the replica it reached, and only a new connection goes to another one. So
HAProxy runs in TCP mode. A Service sends new connections to the ready endpoints only:
HAProxy checks each replica's /readyz on its operations listener (`--ops-bind`) and takes
an unready one out. Its interval is short (250 ms), the way the chart's readiness probe and
kube-proxy's propagation are short next to the drain window (`--shutdown-delay`): the
window must outlast the balancer's reaction, here by far. No redispatch: a connection
refused by a replica that is gone (killed) fails, as one sent by kube-proxy to a dead
endpoint does, rather than being retried elsewhere behind the client's back.

HAProxy comes from the distribution (`apt-get install haproxy`; .ci/run installs it); the
tests that need it skip without it (fail under POLICYEXT_REQUIRE_ALL=1).
"""

from __future__ import annotations

import csv
import shutil
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from tests.e2e.controlplane import Component, ControlPlane, free_port
from tests.e2e.extender import Extender, scheduler_config
from tests.unavailable import skip_or_fail
from tests.waiting import PATIENCE, eventually

# how often HAProxy asks each replica's /readyz; one failure takes it out, two successes
# bring it back
CHECK_INTERVAL: Final = "250ms"


def haproxy_binary() -> str | None:
    return shutil.which("haproxy")


class Balancer:
    """One HAProxy process: `url` leads to the replicas named in `replicas`
    (name -> (verbs port, operations port))."""

    def __init__(self, binary: str, folder: Path, replicas: Mapping[str, tuple[int, int]]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.stats_socket = folder / "stats.sock"
        servers = "\n".join(
            f"  server {name} 127.0.0.1:{verbs} check port {ops}"
            for name, (verbs, ops) in replicas.items()
        )
        config = folder / "haproxy.cfg"
        config.write_text(
            f"""\
global
  stats socket {self.stats_socket} level admin
  maxconn 2000

defaults
  mode tcp
  timeout connect 5s
  timeout client 10m
  timeout server 10m
  timeout check 5s

frontend extender
  bind 127.0.0.1:{self.port}
  default_backend replicas

backend replicas
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter {CHECK_INTERVAL} fastinter {CHECK_INTERVAL} downinter {CHECK_INTERVAL} fall 1 rise 2
{servers}
"""
        )
        # -db: in the foreground, its log on stderr
        self.component = Component("haproxy", [binary, "-db", "-f", str(config)], folder / "log")

    def start(self) -> None:
        self.component.start()
        eventually(self.stats_socket.exists, timeout=PATIENCE)

    def stop(self) -> None:
        self.component.stop()

    def status(self) -> dict[str, str]:
        """Each replica's state as HAProxy sees it: "UP", "DOWN" (and transitions)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stats:
            stats.settimeout(PATIENCE)
            stats.connect(str(self.stats_socket))
            stats.sendall(b"show stat\n")
            raw = b""
            while chunk := stats.recv(65536):
                raw += chunk
        rows = csv.DictReader(raw.decode().lstrip("# ").splitlines())
        return {
            row["svname"]: row["status"]
            for row in rows
            if row["pxname"] == "replicas" and row["svname"] not in ("FRONTEND", "BACKEND")
        }

    def wait_up(self, *names: str) -> None:
        """Until HAProxy sends new connections to each of `names`."""
        eventually(lambda: all(self.status().get(n, "").startswith("UP") for n in names))


@contextmanager
def behind_balancer(
    control_plane: ControlPlane,
    folder: Path,
    replicas: Mapping[str, Extender],
    scheduler: str,
    *,
    bind: bool,
    tests: str,
) -> Iterator[Balancer]:
    """Each of `replicas` started and ready, HAProxy in front of them (in `folder`) and
    taking each, and kube-scheduler `scheduler` configured with the balancer's address (the
    extenders bind when `bind`); everything stopped after, the scheduler first. Without
    haproxy, `tests` (which tests need it) are skipped, or fail under
    POLICYEXT_REQUIRE_ALL=1."""
    binary = haproxy_binary()
    if binary is None:
        skip_or_fail(f"{tests}: HAProxy goes in front of the extenders: install haproxy")
    balancer = Balancer(
        binary, folder / "haproxy", {n: (e.port, e.ops_port) for n, e in replicas.items()}
    )
    try:
        for replica in replicas.values():
            replica.start()
        balancer.start()
        balancer.wait_up(*replicas)
        control_plane.start_scheduler(
            scheduler_config(balancer.url, scheduler, bind=bind), name=scheduler
        )
        yield balancer
    finally:
        if scheduler in control_plane.components:
            control_plane.stop_component(scheduler)
        balancer.stop()
        for replica in replicas.values():
            replica.stop()
