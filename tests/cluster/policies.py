"""Small policies for the reload tests: each rejects the nodes carrying one label."""

from __future__ import annotations


def rejecting(policy: str, label: str) -> str:
    return f"""\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: {policy}
spec:
  filters:
    - name: refuse-{policy}
      expression: "!('{label}' in node.metadata.?labels.orValue({{}}))"
      message: "nodes labelled {label} are refused"
"""


# a CEL syntax error on line 8, column 20 of the file
BROKEN = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: broken
spec:
  filters:
    - name: oops
      expression: "node.(("
"""
