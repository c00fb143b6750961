"""A stand-in for the SchedulingPolicy objects' status subresource, answering a server-side
apply as the API server does for the fields the extender writes: top-level fields set,
`conditions` merged by type and `byPod` by pod (the CRD's list-map keys; an entry its
manager leaves out of its next apply removed), the object's
resourceVersion bumped and its generation left alone. It records every apply (object name,
field manager, status sent); `failures` makes the next calls fail as an absent API server
would. `written` is set at each apply that succeeds. It lists the objects too, in pages
(`lists` counts the calls), as `policyext simulate --rules-crd` reads them."""

from __future__ import annotations

import copy
import json
import threading
from dataclasses import dataclass, field
from typing import Any

import urllib3

Json = dict[str, Any]


@dataclass
class _Listed:
    data: bytes

    def release_conn(self) -> None:
        pass


@dataclass
class FakeCustom:
    objects: dict[str, Json] = field(default_factory=dict)
    applies: list[tuple[str, str, Json | None]] = field(default_factory=list)
    failures: int = 0
    written: threading.Event = field(default_factory=threading.Event)
    lists: int = 0  # the list calls (pages) answered
    # object name -> byPod entry (pod) -> the field manager that applied it
    owners: dict[str, dict[str, str]] = field(default_factory=dict)

    def add(self, obj: Json) -> Json:
        self.objects[obj["metadata"]["name"]] = copy.deepcopy(obj)
        return obj

    def list_cluster_custom_object(
        self, group: str, version: str, plural: str, *, limit: int, **kwargs: Any
    ) -> _Listed:
        """A page of `limit` objects, as the API server lists them (with a continue token)."""
        assert (group, version, plural) == ("policyext.io", "v1alpha1", "schedulingpolicies")
        assert kwargs.get("_preload_content") is False
        self.lists += 1
        names = sorted(self.objects)
        start = int(kwargs.get("_continue") or 0)
        page = [copy.deepcopy(self.objects[n]) for n in names[start : start + limit]]
        more = str(start + limit) if start + limit < len(names) else ""
        body = {"kind": "SchedulingPolicyList", "metadata": {"continue": more}, "items": page}
        return _Listed(json.dumps(body).encode())

    def patch_cluster_custom_object_status(
        self,
        group: str,
        version: str,
        plural: str,
        name: str,
        body: Json,
        *,
        field_manager: str,
        force: bool,
        _content_type: str,
        **_: Any,
    ) -> Json:
        assert (group, version, plural) == ("policyext.io", "v1alpha1", "schedulingpolicies")
        assert _content_type == "application/apply-patch+yaml" and force
        if self.failures:
            self.failures -= 1
            raise urllib3.exceptions.MaxRetryError(None, "/", "Connection refused")  # type: ignore[arg-type]
        sent = body.get("status")  # None: an apply of nothing (the manager gives all up)
        self.applies.append((name, field_manager, copy.deepcopy(sent)))
        applied = sent or {}
        obj = self.objects[name]
        status = obj.setdefault("status", {})
        # server-side apply: a byPod entry the manager applied before and leaves out now
        # is removed (each entry is owned by the manager that applied it)
        owners = self.owners.setdefault(name, {})
        kept = {e["pod"] for e in applied.get("byPod", [])}
        dropped = {pod for pod, owner in owners.items() if owner == field_manager} - kept
        status["byPod"] = [e for e in status.get("byPod", []) if e["pod"] not in dropped]
        owners.update(dict.fromkeys(kept, field_manager))
        for pod in dropped:
            del owners[pod]
        for key, value in applied.items():
            if key in ("conditions", "byPod"):
                by = "type" if key == "conditions" else "pod"
                merged = {item[by]: item for item in status.get(key, [])}
                merged |= {item[by]: copy.deepcopy(item) for item in value}
                status[key] = list(merged.values())
            else:
                status[key] = value
        meta = obj["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        self.written.set()
        return copy.deepcopy(obj)
