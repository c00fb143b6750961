"""A rolling update with policies the new replica rejects is safe: the new replica never
becomes ready (`serve` exits 1 before it listens, which Kubernetes restarts as a crash loop
and never routes to), while the old replica, whose folder received the same update, keeps
serving its last good policies and stays ready (docs/extender-api.md, "Invalid policies at
start")."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from tests.cli.run import RULES, policyext
from tests.server.harness import CLUSTER, ExtenderServer, start_server
from tests.waiting import PATIENCE

# a filter with a CEL syntax error, as a release that checks more might reject a rule
BROKEN = """apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: broken}
spec:
  filters:
    - name: typo
      expression: "node.metadata.name =="
"""
FILTER = Path(__file__).resolve().parents[1] / "server" / "fixtures" / "filter-names.request.json"


def _policies(server: ExtenderServer, until: str) -> dict[str, Any]:
    """/policies once `until` holds of its lastReload (a reload is noticed within the poll
    interval; the suite's limit only stops a bug)."""
    limit = time.monotonic() + PATIENCE
    while True:
        policies: dict[str, Any] = server.get("/policies").json()
        if json.dumps(policies["lastReload"]).find(until) >= 0 or time.monotonic() > limit:
            return policies
        time.sleep(0.1)


def test_a_new_replica_with_invalid_policies_never_listens_while_the_old_keeps_serving(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "rules"
    shutil.copytree(RULES, folder, ignore=shutil.ignore_patterns("tests"))
    old = start_server(tmp_path, rules=[folder])
    try:
        version = old.get("/readyz").json()["policyVersion"]
        (folder / "broken.yaml").write_text(BROKEN)  # the update reaches every replica

        new = policyext("serve", "--rules", folder, "--snapshot", CLUSTER, "--bind", "127.0.0.1:0")
        assert new.returncode == 1
        assert f"{folder / 'broken.yaml'}:7:" in new.stderr  # file:line:col of the problem
        assert "Listening at" not in new.stderr  # never listened, so never ready

        policies = _policies(old, until="broken.yaml")
        assert policies["lastReload"]["ok"] is False
        assert policies["version"] == version
        ready = old.get("/readyz")
        assert ready.status == 200
        assert ready.json()["policyVersion"] == version
        answer = old.post("/filter", FILTER.read_bytes())
        assert answer.status == 200
        assert answer.json()["Error"] == ""
    finally:
        old.stop()
