"""Policies kept in a ConfigMap and watched through the API (`--rules-configmap NS/NAME`).

The ConfigMap is listed and watched by name (a field selector on metadata.name, which RBAC
authorizes against a Role limited to that one resourceName), with the reflector that keeps
the node and pod caches, so a dropped stream resumes and an apiserver restart is survived.
Each key ending in .yaml, .yml or .json is one policy file; errors name it as
`configmap/NAMESPACE/NAME/KEY`. An update is applied as soon as its watch event arrives.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from policyext.cluster import events
from policyext.cluster.client import ApiClients
from policyext.cluster.watch import Json, ReflectedSource, Reflector
from policyext.policy import POLICY_SUFFIXES

log = logging.getLogger("policyext.reload")

OnChange = Callable[["ConfigMapState"], None]
OnProblem = Callable[[str], None]


class ConfigMapNameError(ValueError):
    """`--rules-configmap` is not NAMESPACE/NAME."""


@dataclass(frozen=True, slots=True)
class ConfigMapRef:
    namespace: str
    name: str

    @classmethod
    def parse(cls, text: str) -> ConfigMapRef:
        namespace, slash, name = text.strip().partition("/")
        if not slash or not namespace or not name or "/" in name:
            raise ConfigMapNameError(
                f"the policy ConfigMap must be given as NAMESPACE/NAME, got {text!r}"
            )
        return cls(namespace, name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ConfigMapState:
    """What the API server last said about the ConfigMap: its policy texts, or that it is
    not there (never created, or deleted)."""

    ref: ConfigMapRef
    exists: bool
    texts: dict[str, str]
    uid: str = ""
    resource_version: str = ""
    deleted: bool = False  # it was there and went away

    @property
    def description(self) -> str:
        if not self.exists:
            return f"configmap/{self.ref}"
        return f"configmap/{self.ref} (resourceVersion {self.resource_version})"


def policy_texts(ref: ConfigMapRef, obj: Json) -> dict[str, str]:
    """The policy files of a ConfigMap, named as errors should show them."""
    data = obj.get("data") or {}
    return {
        f"configmap/{ref}/{key}": value
        for key, value in data.items()
        if isinstance(value, str) and key.endswith(POLICY_SUFFIXES) and not key.startswith(".")
    }


class ConfigMapWatch(ReflectedSource):
    """Keeps the latest state of one ConfigMap and reports every change of its content."""

    def __init__(
        self,
        api: ApiClients,
        ref: ConfigMapRef,
        on_change: OnChange,
        *,
        on_problem: OnProblem | None = None,
        watch_timeout: int = 300,
    ) -> None:
        super().__init__(f"ConfigMap {ref}", on_problem)
        self.ref = ref
        self.on_change = on_change
        self.state: ConfigMapState | None = None  # None until the first list
        self._lock = threading.Lock()
        core = api.core
        list_one = functools.partial(
            core.list_namespaced_config_map,
            ref.namespace,
            field_selector=f"metadata.name={ref.name}",
        )
        self._reflector = Reflector(
            f"configmap {ref}",
            list_one,
            _Handler(self),
            watch_timeout=watch_timeout,
            on_error=self._failed,
        )

    def wait_synced(self, timeout: float) -> bool:
        return self._reflector.synced.wait(timeout)

    def _update(self, obj: Json | None) -> None:
        with self._lock:
            previous = self.state
            if obj is None:
                was_there = previous is not None and previous.exists
                state = ConfigMapState(self.ref, False, {}, deleted=was_there)
                if previous is not None and not previous.exists:
                    return  # still missing: nothing new to say
            else:
                meta = obj.get("metadata") or {}
                state = ConfigMapState(
                    self.ref,
                    True,
                    policy_texts(self.ref, obj),
                    str(meta.get("uid", "")),
                    str(meta.get("resourceVersion", "")),
                )
                # a relist, or an update of labels or of keys that are not policies
                if previous is not None and previous.exists and previous.texts == state.texts:
                    self.state = state
                    return
            self.state = state
        self.on_change(state)


@dataclass
class _Handler:
    watch: ConfigMapWatch

    def replace(self, items: list[Json], started: float) -> None:
        mine = [i for i in items if (i.get("metadata") or {}).get("name") == self.watch.ref.name]
        self.watch._update(mine[0] if mine else None)

    def apply(self, kind: str, obj: Json) -> None:
        if (obj.get("metadata") or {}).get("name") != self.watch.ref.name:
            return
        self.watch._update(None if kind == "DELETED" else obj)

    def touched(self) -> None:
        pass


class PolicyEvents:
    """Kubernetes Events on the policy ConfigMap: PolicyRejected (Warning) with the first
    errors, PolicyApplied (Normal) with the version now served.

    Each gunicorn worker watches and reloads on its own; the Event's name is derived from
    the ConfigMap's resourceVersion, so the workers' identical Events collapse into one (the
    second create is refused as already existing) and RBAC needs only `create`."""

    def __init__(self, api: ApiClients, instance: str) -> None:
        self.core = api.core
        self.instance = instance

    def record(self, state: ConfigMapState, ok: bool, message: str) -> None:
        if not state.exists:
            return  # nothing to attach an Event to
        reason = "PolicyApplied" if ok else "PolicyRejected"
        body = event_body(state, reason, message, self.instance)
        try:
            # a plain dict body is sent as it is (no model objects to build)
            self.core.create_namespaced_event(
                state.ref.namespace,
                body,  # type: ignore[arg-type]
                _request_timeout=5.0,
            )
        except k8s.ApiException as e:
            if e.status != 409:  # 409: another worker recorded the same Event first
                log.warning("cannot record Event %s on %s: HTTP %s", reason, state.ref, e.status)
        except Exception as e:  # the API unreachable: the log and /policies still say it
            log.warning("cannot record Event %s on %s: %s", reason, state.ref, e)


def event_body(state: ConfigMapState, reason: str, message: str, instance: str) -> dict[str, Any]:
    involved = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "namespace": state.ref.namespace,
        "name": state.ref.name,
        "uid": state.uid,
        "resourceVersion": state.resource_version,
    }
    name = f"{state.ref.name}.{state.resource_version}.{reason.lower()}"
    kind = "Normal" if reason == "PolicyApplied" else "Warning"
    return events.event_body(name, involved, reason, message, kind, instance)
