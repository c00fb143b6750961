"""kube-scheduler's own decision, emulated: the default filter and score plugins of
kube-scheduler 1.37, as pure functions of a pod and the cluster's nodes and pods.

`simulate`, `test` and `explain` combine it with the policies (decision.py) the way
kube-scheduler combines its plugins with an extender, so that "best node" is the node the
scheduler would pick. One module per plugin; framework.py runs them in the scheduler's
order. What is not emulated (volumes, DRA, ...) is listed in docs/policies.md.
"""

from __future__ import annotations

from typing import Final

KUBE_SCHEDULER_VERSION: Final = "1.37"
