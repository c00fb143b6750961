"""The Kubernetes Events policyext records: on a pod, what its Audit filters would have
done (audit_events.py); on the policy ConfigMap, whether its policies were applied
(rules_configmap.py). Both are core/v1 Events of one reporting component, created once by
name (a worker that creates a name another worker has created gets a 409 and drops its
own), with a message cut to what `kubectl describe` shows well."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

EVENT_COMPONENT: Final = "policyext"
EVENT_MESSAGE_LIMIT: Final = 1024  # characters: a longer message is cut, ending in "..."


def event_body(
    name: str,
    involved: Mapping[str, Any],
    reason: str,
    message: str,
    kind: str,
    instance: str,
) -> dict[str, Any]:
    """The Event `name` about `involved` (its object reference: the Event is in its
    namespace), of `kind` Normal or Warning, reported by the pod `instance`."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if len(message) > EVENT_MESSAGE_LIMIT:
        message = message[: EVENT_MESSAGE_LIMIT - 3] + "..."
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": involved["namespace"]},
        "involvedObject": dict(involved),
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": EVENT_COMPONENT},
        "reportingComponent": EVENT_COMPONENT,
        "reportingInstance": instance,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
