"""`policyext serve` as a real subprocess (gunicorn), and a small HTTP client for it.

The tests talk to the server over loopback sockets with http.client, so that they see the
bytes kube-scheduler would see: status line, headers and body exactly as gunicorn sends
them.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.waiting import PATIENCE

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "rules"
CLUSTER = REPO / "examples" / "cluster.yaml"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
STOP_TIMEOUT = 10.0


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


def policyext_command() -> list[str]:
    """The installed `policyext` script beside the interpreter, else the module."""
    script = Path(sys.executable).with_name("policyext")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "policyext.cli"]


def clean_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test process's environment without anything that would configure the server
    behind the test's back (POLICYEXT_*, a metrics directory)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("POLICYEXT_") and k != "PROMETHEUS_MULTIPROC_DIR"
    }
    env.update(extra or {})
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class ExtenderServer:
    """One running `policyext serve`. Its stdout (decision log) and stderr go to files."""

    process: subprocess.Popen[bytes]
    port: int
    workdir: Path
    tls: ssl.SSLContext | None = None  # how the tests connect, when it serves HTTPS
    stopped: bool = field(default=False)
    ops_port: int | None = None  # --ops-bind's port, when the server has one

    @property
    def probe_port(self) -> int:
        """Where /healthz and /readyz are answered."""
        return self.ops_port or self.port

    host = "127.0.0.1"

    @property
    def stdout_path(self) -> Path:
        return self.workdir / "stdout.log"

    @property
    def stderr_path(self) -> Path:
        return self.workdir / "stderr.log"

    def stdout_lines(self, until: Callable[[list[str]], bool] | None = None) -> list[str]:
        """The decision lines so far. A call's line is written right after its reply is
        sent, by the worker's event loop; a request answered after it (a health check
        here) is read by that loop only once the line is written. A call a thread answered
        (the loop leaves calls to the threads while one of them works) is logged by that
        thread after its reply, which no later request waits for: `until` says which
        lines are awaited (the lines are read again until they hold, up to a limit on a
        bug, after which they are returned as they are, for the test to say what is
        missing)."""
        if not self.stopped and self.process.poll() is None:
            with contextlib.suppress(OSError, http.client.HTTPException):
                self.request("GET", "/healthz", port=self.probe_port)
        lines = self._stdout()
        started = time.monotonic()
        while until is not None and not until(lines) and time.monotonic() - started < PATIENCE:
            time.sleep(0.02)
            lines = self._stdout()
        return lines

    def _stdout(self) -> list[str]:
        return self.stdout_path.read_text(encoding="utf-8", errors="replace").splitlines()

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def connection(
        self, context: ssl.SSLContext | None = None, timeout: float = PATIENCE, port: int = 0
    ) -> http.client.HTTPConnection:
        context = context or self.tls
        port = port or self.port
        if context is not None:
            return http.client.HTTPSConnection(self.host, port, timeout=timeout, context=context)
        return http.client.HTTPConnection(self.host, port, timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        *,
        context: ssl.SSLContext | None = None,
        port: int = 0,
    ) -> Reply:
        """One request on a connection of its own (to `port`, else the verbs' port)."""
        conn = self.connection(context, port=port)
        try:
            return send(conn, method, path, body, headers)
        finally:
            conn.close()

    def post(self, path: str, body: bytes, content_type: str | None = "application/json") -> Reply:
        headers = {} if content_type is None else {"Content-Type": content_type}
        return self.request("POST", path, body, headers)

    def post_json(self, path: str, document: object) -> Reply:
        return self.post(path, json.dumps(document).encode())

    def get(self, path: str) -> Reply:
        return self.request("GET", path)

    def ops_get(self, path: str) -> Reply:
        """A GET on the operations listener (--ops-bind)."""
        assert self.ops_port is not None, "this server has no --ops-bind"
        return self.request("GET", path, port=self.ops_port)

    def stop(self) -> int:
        """SIGTERM to the server's process group (gunicorn's master and its workers), then
        SIGKILL if it does not stop in time. Returns the exit status."""
        if not self.stopped:
            self.stopped = True
            _signal_group(self.process, signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                _signal_group(self.process, signal.SIGKILL)
                self.process.wait(STOP_TIMEOUT)
        return self.process.returncode


def send(
    conn: http.client.HTTPConnection,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    conn.request(method, path, body=body, headers=dict(headers or {}))
    response = conn.getresponse()
    data = response.read()
    return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    # the server was started in a session of its own: its group id is its pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


class ServerFailedToStart(RuntimeError):
    pass


def start_server(
    workdir: Path,
    *flags: str,
    rules: Sequence[Path] = (RULES,),
    snapshot: Path | None = CLUSTER,
    env: Mapping[str, str] | None = None,
    tls: ssl.SSLContext | None = None,
    ops: bool = False,
) -> ExtenderServer:
    """Start `policyext serve` on a free loopback port and wait until /readyz answers 200.

    `flags` are passed as they are; `ops` adds `--ops-bind` on another free port. Each server gets a private XDG_RUNTIME_DIR and TMPDIR:
    gunicorn puts its control socket under the first (shared by every gunicorn of the user
    otherwise) and the metrics directory of several workers goes under the second."""
    return start_on_a_free_port(
        lambda: _launch(workdir, flags, rules, snapshot, env, tls, ops), "serve", "/readyz"
    )


def start_on_a_free_port(
    launch: Callable[[], ExtenderServer], command: str, probe: str
) -> ExtenderServer:
    """Launch a server (`launch` picks a free port) and wait until GET `probe` answers 200
    on its probe port; launch it again, up to three times, when the port was taken
    between probing and binding. `command` (`serve`, `webhook`) names it in errors."""
    for _attempt in range(3):
        server = launch()
        try:
            _wait_answering(server, command, probe)
        except ServerFailedToStart:
            server.stop()
            if "Address already in use" in server.stderr_text():
                continue
            raise
        return server
    raise ServerFailedToStart("no free port found")


def _launch(
    workdir: Path,
    flags: Sequence[str],
    rules: Sequence[Path],
    snapshot: Path | None,
    env: Mapping[str, str] | None,
    tls: ssl.SSLContext | None,
    ops: bool = False,
) -> ExtenderServer:
    port = free_port()
    ops_port = free_port() if ops else None
    workdir = workdir / f"server-{port}"
    runtime = workdir / "run"
    tmp = workdir / "tmp"
    for d in (runtime, tmp):
        d.mkdir(parents=True, exist_ok=True)
    command = [*policyext_command(), "serve", "--bind", f"127.0.0.1:{port}"]
    if rules:
        command += ["--rules", ",".join(str(r) for r in rules)]
    if snapshot is not None:
        command += ["--snapshot", str(snapshot)]
    if ops_port is not None:
        command += ["--ops-bind", f"127.0.0.1:{ops_port}"]
    # stopped at once at the end of a test (the drain window is tested on its own, with
    # the flag given again in `flags`, which wins)
    command += ["--shutdown-delay", "0", *flags]
    environment = clean_environment({"XDG_RUNTIME_DIR": str(runtime), "TMPDIR": str(tmp)})
    environment.update(env or {})
    with (workdir / "stdout.log").open("wb") as out, (workdir / "stderr.log").open("wb") as err:
        process = subprocess.Popen(
            command, stdout=out, stderr=err, cwd=REPO, env=environment, start_new_session=True
        )
    return ExtenderServer(process, port, workdir, tls, ops_port=ops_port)


def _wait_answering(server: ExtenderServer, command: str, probe: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise ServerFailedToStart(
                f"policyext {command} exited with {server.process.returncode}:\n"
                + server.stderr_text()[-4000:]
            )
        try:
            if server.request("GET", probe, port=server.probe_port).status == 200:
                return
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.1)
    raise ServerFailedToStart(f"no 200 from {probe} in time:\n" + server.stderr_text()[-4000:])
