"""The servers the benchmark measures, and how to start and stop them.

A target is a command line that serves the extender on a given port, with the workload's
snapshot and the benchmark policy as files. To measure another server, add a
`CommandTarget` to `default_targets()`; for example (the lead's Python extender):

    CommandTarget(
        name="policyext (gunicorn)",
        argv=lambda s: [".venv/bin/gunicorn", "-b", f"127.0.0.1:{s.port}", ...],
        ready_path="/readyz",
        nodes_from_snapshot=True,
    )
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

BENCH_DIR: Final = Path(__file__).resolve().parent
REPO_ROOT: Final = BENCH_DIR.parent
GO_DIR: Final = BENCH_DIR / "go-extender"
GO_BINARY: Final = GO_DIR / "go-extender"


@dataclass(frozen=True)
class LaunchSpec:
    """What a server is started with."""

    port: int
    snapshot: Path  # a v1 List of the workload's Nodes and Pods
    policy: Path  # the benchmark SchedulingPolicy, as JSON
    log: Path  # where the server's output goes


@dataclass(frozen=True)
class CommandTarget:
    """A server started as a child process, measured once it answers `ready_path`."""

    name: str
    argv: Callable[[LaunchSpec], list[str]]
    ready_path: str = "/healthz"
    env: Mapping[str, str] = field(default_factory=dict)
    # a build step run once before the first launch
    build: Callable[[], None] | None = None
    # returns why the target cannot run on this machine, or None
    unavailable: Callable[[], str | None] = lambda: None
    ready_timeout: float = 120.0
    # the process id of the server being served (for its memory), while it runs
    last_pid: list[int] = field(default_factory=lambda: [0], compare=False)

    @contextlib.contextmanager
    def serve(self, spec: LaunchSpec) -> Iterator[str]:
        """Start the server, wait until it is ready, yield its base URL, stop it."""
        spec.log.parent.mkdir(parents=True, exist_ok=True)
        with spec.log.open("wb") as log:
            process = subprocess.Popen(
                self.argv(spec),
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
            )
            try:
                base_url = f"http://127.0.0.1:{spec.port}"
                _wait_ready(process, base_url + self.ready_path, self.ready_timeout, spec.log)
                self.last_pid[0] = process.pid
                yield base_url
            finally:
                _stop(process)


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants (gunicorn's master and
    workers), in MiB, read from /proc."""
    total_kb = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        pending.extend(int(c) for c in children)
    return total_kb / 1024


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_ready(process: subprocess.Popen[bytes], url: str, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the server exited with status {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the server did not answer {url} within {timeout:.0f} s (log: {log})")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- the Go baseline -------------------------------------------------------------------

# Offline and reproducible: no module downloads, no toolchain switch.
GO_ENV: Final = {
    "GOFLAGS": "-mod=mod",
    "GOPROXY": "off",
    "GOTOOLCHAIN": "local",
    "CGO_ENABLED": "0",
}


def go_version() -> str | None:
    go = shutil.which("go")
    if go is None:
        return None
    out = subprocess.run([go, "version"], capture_output=True, text=True, check=False)
    return out.stdout.strip().removeprefix("go version ") or None


def build_go_extender() -> None:
    subprocess.run(
        ["go", "build", "-o", str(GO_BINARY), "."],
        cwd=GO_DIR,
        env={**os.environ, **GO_ENV},
        check=True,
    )


def _go_unavailable() -> str | None:
    return None if shutil.which("go") else "no `go` command on PATH"


GO_BASELINE: Final = CommandTarget(
    name="Go baseline",
    argv=lambda s: [str(GO_BINARY), "-listen", f"127.0.0.1:{s.port}", "-snapshot", str(s.snapshot)],
    ready_path="/healthz",
    build=build_go_extender,
    unavailable=_go_unavailable,
)


# --- policyext -----------------------------------------------------------------------------

# policyext runs on the interpreter the benchmark runs on (its virtual environment's: `make
# bench PYTHON=... VENV=...` picks it), so that the page's Python is the server's
POLICYEXT: Final = CommandTarget(
    name="policyext (gunicorn, 1 worker)",
    argv=lambda s: [
        sys.executable,
        "-m",
        "policyext.cli",
        "serve",
        "--rules",
        str(s.policy),
        "--snapshot",
        str(s.snapshot),
        "--bind",
        f"127.0.0.1:{s.port}",
        "--workers",
        "1",
        # stopped at once, no load balancer to drain from
        "--shutdown-delay",
        "0",
    ],
    ready_path="/readyz",
)


def default_targets() -> list[CommandTarget]:
    """The servers `python -m bench` measures; the first one is the baseline of the ratios."""
    return [GO_BASELINE, POLICYEXT]
