"""`policyext serve` started for a measurement: on loopback, in a session of its own (so
that gunicorn's master and workers stop together), stopped with SIGTERM and, when a busy
worker outlives the grace period, SIGKILL."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.targets import REPO_ROOT, free_port


@dataclass(frozen=True)
class Running:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def worker_pids(self) -> list[int]:
        pid = self.process.pid
        try:
            return sorted(
                int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            )
        except OSError:
            return []

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()


def peak_mb(pid: int) -> float:
    """The peak resident memory of one process so far in MiB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def rss_mb(pid: int) -> float:
    """Resident memory of one process in MiB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


@contextlib.contextmanager
def serve(
    rules: Sequence[Path], snapshot: Path, log: Path, *flags: str, ready_timeout: float = 60.0
) -> Iterator[Running]:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "policyext.cli",
        "serve",
        "--bind",
        f"127.0.0.1:{port}",
        "--rules",
        ",".join(str(r) for r in rules),
        "--snapshot",
        str(snapshot),
        # stopped at once, no load balancer to drain from (a flag in `flags` wins)
        "--shutdown-delay",
        "0",
        *flags,
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICYEXT_")}
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    running = Running(process, port, log)
    try:
        _wait_ready(running, ready_timeout)
        yield running
    finally:
        stop(process)


def _wait_ready(running: Running, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if running.process.poll() is not None:
            tail = running.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"policyext serve exited ({running.process.returncode}):\n{tail}")
        with contextlib.suppress(OSError, http.client.HTTPException):
            if running.get("/readyz", timeout=2)[0] == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"policyext serve was not ready within {timeout:.0f} s")


def stop(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(grace)
