"""`policyext webhook` as a real subprocess on a free loopback port, over TLS, for the
unit tests (tests/server/test_webhook.py) and the end-to-end test against the real API
server (tests/e2e/test_webhook.py)."""

from __future__ import annotations

import json
import ssl
import subprocess
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.server.harness import (
    REPO,
    ExtenderServer,
    clean_environment,
    free_port,
    policyext_command,
    start_on_a_free_port,
)

PATH = "/validate-schedulingpolicy"


def start_webhook(
    workdir: Path, cert: Path, key: Path, tls: ssl.SSLContext, *flags: str
) -> ExtenderServer:
    """Start `policyext webhook` with the certificate `cert` and wait until /healthz
    answers over TLS (`tls`: how the tests connect)."""
    return start_on_a_free_port(
        lambda: _launch(workdir, cert, key, tls, flags), "webhook", "/healthz"
    )


def _launch(
    workdir: Path, cert: Path, key: Path, tls: ssl.SSLContext, flags: Sequence[str]
) -> ExtenderServer:
    port = free_port()
    folder = workdir / f"webhook-{port}"
    (folder / "run").mkdir(parents=True, exist_ok=True)
    command = [
        *policyext_command(),
        "webhook",
        "--bind",
        f"127.0.0.1:{port}",
        "--tls-cert",
        str(cert),
        "--tls-key",
        str(key),
        *flags,
    ]
    env = clean_environment({"XDG_RUNTIME_DIR": str(folder / "run")})
    with (folder / "stdout.log").open("wb") as out, (folder / "stderr.log").open("wb") as err:
        process = subprocess.Popen(
            command, stdout=out, stderr=err, cwd=REPO, env=env, start_new_session=True
        )
    return ExtenderServer(process, port, folder, tls)


def review(obj: dict[str, Any] | None, operation: str = "CREATE") -> dict[str, Any]:
    """An AdmissionReview v1 of a SchedulingPolicy, as the API server sends one."""
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "policyext.io", "version": "v1alpha1", "kind": "SchedulingPolicy"},
        "resource": {
            "group": "policyext.io",
            "version": "v1alpha1",
            "resource": "schedulingpolicies",
        },
        "operation": operation,
        "userInfo": {"username": "admin"},
    }
    if obj is not None:
        request["object"] = obj
        request["name"] = obj.get("metadata", {}).get("name", "")
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def ask(server: ExtenderServer, body: bytes | dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST a review (or any body); the status and the JSON answer."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    reply = server.request("POST", PATH, data, {"Content-Type": "application/json"})
    return reply.status, json.loads(reply.body)
