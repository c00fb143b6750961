"""`policyext serve` against the harness's cluster, as an operator runs it, and ways to look
at it from outside: its HTTP endpoints, and a probe policy whose scores report what the
extender's caches hold (so a test sees the extender's view without any debug endpoint).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from tests.e2e.controlplane import Component, ControlPlane, KubeClient, fake_node, free_port, pod
from tests.waiting import PATIENCE

Json = dict[str, Any]

REPO: Final = Path(__file__).resolve().parents[2]
# the example policy the scenarios schedule with: critical pods never go to spot nodes
CRITICAL_OFF_SPOT: Final = (REPO / "rules" / "critical-off-spot.yaml").read_text(encoding="utf-8")

PROBE_LABEL: Final = "e2e-probe"
MARK_LABEL: Final = "e2e-mark"
# Matches only probe pods (never created, only sent to /explain): its score values are the
# extender's node information and a node label, as its caches hold them right now.
PROBE_POLICY: Final = f"""\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: e2e-probe
spec:
  match:
    podSelector:
      matchLabels:
        {PROBE_LABEL}: "true"
  scores:
    - name: pods-seen
      expression: "nodeInfo.podCount"
    - name: mark-seen
      expression: "int(node.metadata.?labels[?'{MARK_LABEL}'].orValue('0'))"
"""


def policyext_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "policyext.cli", *args]


def scheduler_config(url: str, scheduler_name: str, *extra: str, bind: bool = True) -> str:
    """The KubeSchedulerConfiguration `policyext config` prints for a user to paste (with
    `--bind`: the extender binds, unless `bind` is False)."""
    flags = ["--bind"] if bind else []
    return subprocess.run(
        policyext_argv("config", "--url", url, *flags, "--scheduler-name", scheduler_name, *extra),
        check=True,
        capture_output=True,
        text=True,
    ).stdout


# the series of the binds that succeeded, in policyext_requests_total
BIND_OK: Final = {"code": "200", "verb": "bind"}


class Extender:
    """One `policyext serve --kubeconfig` process; stopped and started at will."""

    def __init__(
        self,
        control_plane: ControlPlane,
        kubeconfig: Path,
        rules: Sequence[Path],
        *,
        name: str = "policyext",
        args: Sequence[str] = (),
        binds_for: str | None = None,
        ops: bool = False,
    ) -> None:
        """`binds_for`: the schedulerName of the pods it binds (`--bind-verb
        --scheduler-name`, what `scheduler_config` with `bind` needs); None: it binds none.
        `ops`: the operations endpoints on a listener of their own (`--ops-bind`, at
        `ops_url`), as the chart runs it."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ops_port = free_port() if ops else self.port
        self.ops_url = f"http://127.0.0.1:{self.ops_port}"
        argv = ["serve", "--kubeconfig", str(kubeconfig), "--bind", f"127.0.0.1:{self.port}"]
        if ops:
            argv += ["--ops-bind", f"127.0.0.1:{self.ops_port}"]
        for path in rules:
            argv += ["--rules", str(path)]
        if binds_for is not None:
            argv += ["--bind-verb", "--scheduler-name", binds_for]
        # stopped at once (a test of the drain window gives --shutdown-delay in `args`)
        argv += ["--shutdown-delay", "0"]
        self.component = Component(
            name, policyext_argv(*argv, *args), control_plane.logdir / f"{name}.log"
        )

    def start(self, *, wait: bool = True, timeout: float = PATIENCE) -> None:
        self.component.start()
        if wait:
            self.wait_ready(timeout)

    def wait_ready(self, timeout: float = PATIENCE) -> None:
        # ready once the policies are loaded and both watches have listed
        self.component.wait_ready(lambda: self.get("/readyz")[0] == 200, timeout)

    def stop(self) -> None:
        self.component.stop()

    def kill(self) -> None:
        """SIGKILL, no grace: a crash, not a shutdown."""
        self.component.stop(grace=0)

    def get(self, path: str) -> tuple[int, Json | str]:
        """A GET: every one is of an operations endpoint."""
        return self._call(urllib.request.Request(self.ops_url + path))

    def post(self, path: str, body: Json) -> tuple[int, Json | str]:
        base = self.ops_url if path == "/explain" else self.url
        request = urllib.request.Request(
            base + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        return self._call(request)

    def _call(self, request: urllib.request.Request) -> tuple[int, Json | str]:
        try:
            with urllib.request.urlopen(request, timeout=PATIENCE) as response:
                return response.status, _decode(response.read())
        except urllib.error.HTTPError as e:
            return e.code, _decode(e.read())
        except OSError:
            return 0, ""

    def metric(self, name: str, labels: Mapping[str, str] | None = None) -> float | None:
        """One sample of /metrics, or None when the series is not there."""
        _, text = self.get("/metrics")
        wanted = ",".join(f'{k}="{v}"' for k, v in (labels or {}).items())
        prefix = f"{name}{{{wanted}}} " if wanted else f"{name} "
        for line in str(text).splitlines():
            if line.startswith(prefix):
                return float(line[len(prefix) :])
        return None

    def probe_value(self, node: str, rule: str) -> float | None:
        """One probe value of one node ("pods-seen", "mark-seen"); None while the node is
        not in the extender's cache yet (what a wait polls for)."""
        return self.probe([node]).get(node, {}).get(rule)

    def probe(self, nodes: Sequence[str]) -> dict[str, dict[str, float]]:
        """The probe policy's score values per node: {"pods-seen": n, "mark-seen": m}."""
        manifest = pod("probe", labels={PROBE_LABEL: "true"})
        manifest["metadata"].update(namespace="default", uid="00000000-e2e-probe")
        status, reply = self.post("/explain", {"Pod": manifest, "NodeNames": list(nodes)})
        if status != 200 or not isinstance(reply, dict):
            raise AssertionError(f"/explain answered {status}: {reply}")
        return {
            v["name"]: {s["rule"]: s["value"] for s in v["scores"] if s["policy"] == "e2e-probe"}
            for v in reply["nodes"]
        }


def _decode(raw: bytes) -> Json | str:
    try:
        decoded = json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")
    return decoded if isinstance(decoded, dict) else raw.decode(errors="replace")


def http_get(url: str) -> tuple[int, str]:
    """Status and body of a GET; 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=PATIENCE) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError:
        return 0, ""


def bind_count(url: str) -> float:
    """The binds the extender at `url` answered with success, from its /metrics: its
    answers to /bind (all 200) but those with an Error (counted by reason)."""
    _, metrics = http_get(f"{url}/metrics")
    found = re.search(r'^policyext_requests_total\{code="200",verb="bind"\} (\S+)$', metrics, re.M)
    refused = re.findall(
        r'^policyext_bind_refusals_total\{reason="[a-z_]+"\} (\S+)$', metrics, re.M
    )
    return (float(found.group(1)) if found else 0.0) - sum(map(float, refused))


def spot_and_on_demand(admin: KubeClient) -> str:
    """A roomy spot node and a small on-demand one, `spot-SUFFIX` and `on-demand-SUFFIX`:
    without a policy, every pod would prefer the spot node. Returns the suffix."""
    suffix = uuid.uuid4().hex[:6]
    admin.create_fake_node(
        fake_node(f"spot-{suffix}", cpu="32", memory="64Gi", labels={"lifecycle": "spot"})
    )
    admin.create_fake_node(fake_node(f"on-demand-{suffix}", cpu="2", memory="4Gi"))
    return suffix
