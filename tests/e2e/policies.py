"""Policies the end-to-end tests and the benchmarks on the real control plane share, so
that a figure in docs/operations.md and the test that checks the same feature read one
policy."""

from __future__ import annotations

from typing import Final

# An Audit filter on the `lifecycle` label (guarded: a node without it passes): every pod
# it applies to gets a finding on its spot nodes and is scheduled as if it were not there.
# tests/e2e/test_audit_events.py, bench/audit_events.py and bench/reports_burst.py.
AUDIT_SPOT_NODES: Final = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: rollout
spec:
  filters:
    - name: no-spot-nodes
      expression: "node.metadata.?labels[?'lifecycle'].orValue('') != 'spot'"
      mode: Audit
"""
