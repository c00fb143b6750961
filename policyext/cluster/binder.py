"""Binding pods to nodes for the scheduler (the extender's bind verb).

What may be bound is decided by the server (server/binding.py) on the pod `find_pod`
returns: the node cache's, or the API server's when the cache does not hold it (the pod
watch leaves pending pods out until the first bind: cluster/cache.py). The scheduler
retries a bind whose reply it never got, so binding is idempotent: a pod already bound to
the asked node is a success. The pod's UID is a precondition of the Binding: a pod deleted
and recreated under the same name is never bound by mistake.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol, TypeVar

import orjson
import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from policyext.cluster.client import ApiClients

log = logging.getLogger("policyext.cluster")

RETRY_BUDGET: Final = 3.0  # seconds; the scheduler's httpTimeout is 5 s by default
REQUEST_TIMEOUT: Final = 2.0
TRANSIENT_STATUSES: Final = frozenset((429, 500, 502, 503, 504))
T = TypeVar("T")


class BindingRequest(Protocol):
    """What the scheduler asks to bind (the server's wire.BindingArgs has this shape)."""

    @property
    def pod_name(self) -> str: ...

    @property
    def pod_namespace(self) -> str: ...

    @property
    def pod_uid(self) -> str: ...

    @property
    def node(self) -> str: ...


class Assumer(Protocol):
    """The node cache, told of each binding at once (cluster.cache.ClusterSource)."""

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def assume(
        self, pod_namespace: str, pod_name: str, node_name: str, pod: dict[str, Any] | None = None
    ) -> bool: ...


class _Transient(Exception):
    """A failure that may pass: tried again within the retry budget."""


class _Failed(Exception):
    """A failure that is the answer (its message says what failed)."""


class ClusterBinder:
    """Creates Bindings through the pods/binding subresource, then tells the node source."""

    def __init__(
        self,
        api: ApiClients,
        source: Assumer | None = None,
        *,
        retry_budget: float = RETRY_BUDGET,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.core = api.core
        self.source = source
        self.retry_budget = retry_budget
        self.clock = clock
        self.sleep = sleep

    def find_pod(self, namespace: str, name: str, uid: str) -> tuple[dict[str, Any] | None, str]:
        """The pod to bind: the node cache's when it holds this name with this UID, else
        the API server's (whatever its UID). (None, "") when the pod does not exist; (None,
        why) when it cannot be read."""
        known = self.source.pod(namespace, name) if self.source is not None else None
        if known is not None and _uid(known) == uid:
            return known, ""
        pod = f"{namespace}/{name}"

        def read() -> dict[str, Any] | None:
            try:
                return self._read(namespace, name)
            except ApiException as e:
                if e.status == 404:
                    return None
                if e.status in TRANSIENT_STATUSES or e.status is None:
                    raise _Transient(f"HTTP {e.status} {_message(e)}") from e
                raise _Failed(f"reading pod {pod}: HTTP {e.status} {_message(e)}") from e
            except (urllib3.exceptions.HTTPError, OSError) as e:
                raise _Transient(f"{type(e).__name__}: {e}") from e
            except ValueError as e:  # not JSON
                raise _Failed(f"reading pod {pod}: {e}") from e

        try:
            return self._retrying(f"reading pod {pod}", read), ""
        except _Failed as e:
            return None, str(e)

    def bind(self, args: BindingRequest, pod: Mapping[str, Any] | None = None) -> str:
        """ "" once the pod is bound to the node (now or before), else what went wrong.
        `pod`: the pod as `find_pod` found it (the node cache then counts it at once,
        without reading it back)."""
        name = f"{args.pod_namespace}/{args.pod_name}"
        found = dict(pod) if pod is not None else None
        what = f"binding pod {name} to node {args.node}"
        try:
            return self._retrying(what, lambda: self._bind_once(args, name, found))
        except _Failed as e:
            return str(e)

    def _retrying(self, what: str, action: Callable[[], T]) -> T:
        """`action`, again while it fails for a reason that may pass (_Transient), within
        the retry budget; _Failed saying what failed once the budget is spent."""
        deadline = self.clock() + self.retry_budget
        delay = 0.1
        while True:
            try:
                return action()
            except _Transient as e:
                left = deadline - self.clock()
                if left <= 0:
                    raise _Failed(f"{what} failed: {e}") from e
                wait = min(left, random.uniform(delay / 2, delay))
                log.warning("%s: %s; retrying in %.2f s", what, e, wait)
                self.sleep(wait)
                delay = min(delay * 2, 1.0)

    def _bind_once(self, args: BindingRequest, pod: str, found: dict[str, Any] | None) -> str:
        body = k8s.V1Binding(
            metadata=k8s.V1ObjectMeta(
                name=args.pod_name, namespace=args.pod_namespace, uid=args.pod_uid or None
            ),
            target=k8s.V1ObjectReference(kind="Node", api_version="v1", name=args.node),
        )
        try:
            # raw: the client cannot deserialize the Status the API server answers with
            response: Any = self.core.create_namespaced_pod_binding(
                args.pod_name,
                args.pod_namespace,
                body,
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            )
            response.release_conn()
        except ApiException as e:
            if e.status == 409:
                return self._already_bound(args, pod, _message(e))
            if e.status == 404:
                return f"pod {pod} does not exist (any more)"
            if e.status in TRANSIENT_STATUSES or e.status is None:
                raise _Transient(f"HTTP {e.status} {_message(e)}") from e
            return f"binding pod {pod} to node {args.node}: HTTP {e.status} {_message(e)}"
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise _Transient(f"{type(e).__name__}: {e}") from e
        self._assume(args, found)
        return ""

    def _already_bound(self, args: BindingRequest, pod: str, conflict: str) -> str:
        """A conflict: bound before (a retried bind), bound elsewhere, or another pod of
        the same name."""
        try:
            current = self._read_pod(args)
        except ApiException as e:
            if e.status == 404:
                return f"pod {pod} does not exist (any more)"
            if e.status in TRANSIENT_STATUSES:
                raise _Transient(f"HTTP {e.status} {_message(e)}") from e
            return f"binding pod {pod} to node {args.node}: conflict: {conflict}"
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise _Transient(f"{type(e).__name__}: {e}") from e
        uid = str((current.get("metadata") or {}).get("uid", ""))
        if args.pod_uid and uid != args.pod_uid:
            return f"pod {pod} was replaced: its UID is {uid}, not {args.pod_uid}"
        bound = str((current.get("spec") or {}).get("nodeName") or "")
        if bound == args.node:
            self._assume(args, current)
            return ""
        if bound:
            return f"pod {pod} is already bound to node {bound}, not {args.node}"
        return f"binding pod {pod} to node {args.node}: conflict: {conflict}"

    def _assume(self, args: BindingRequest, pod: dict[str, Any] | None) -> None:
        if self.source is None:
            return
        if pod is None and self.source.assume(args.pod_namespace, args.pod_name, args.node):
            return
        if pod is None:  # the watch has not delivered the pod yet: fetch it
            try:
                pod = self._read_pod(args)
            except (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as e:
                # bound all the same; the watch event will count it in a moment
                log.warning(
                    "bound %s/%s but cannot read it back: %s", args.pod_namespace, args.pod_name, e
                )
                return
        self.source.assume(args.pod_namespace, args.pod_name, args.node, pod)

    def _read_pod(self, args: BindingRequest) -> dict[str, Any]:
        return self._read(args.pod_namespace, args.pod_name)

    def _read(self, namespace: str, name: str) -> dict[str, Any]:
        response: Any = self.core.read_namespaced_pod(
            name,
            namespace,
            _preload_content=False,  # raw JSON: the model classes are not needed here
            _request_timeout=REQUEST_TIMEOUT,
        )
        try:
            pod: dict[str, Any] = orjson.loads(response.data)
        finally:
            response.release_conn()
        return pod


def _uid(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata")
    return str(meta.get("uid") or "") if isinstance(meta, dict) else ""


def _message(error: ApiException) -> str:
    """The API server's own message from its Status body, or the HTTP reason."""
    body = error.body
    if isinstance(body, bytes | str) and body:
        try:
            status = orjson.loads(body)
        except orjson.JSONDecodeError:
            return str(body)[:200]
        if isinstance(status, dict) and status.get("message"):
            return str(status["message"])
    return str(error.reason or "")
