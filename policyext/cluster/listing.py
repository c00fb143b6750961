"""One look at the live cluster: every Node, Pod and Namespace listed once (no watch),
answered from as a snapshot file would be. What `policyext simulate --cluster` ranks nodes with.

Every failure becomes a `ClusterReadError` with a one-line reason a user can act on: the
API server cannot be reached, refuses the credentials, or lacks a permission (named).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, Final

import orjson
import urllib3
from kubernetes.client.exceptions import ApiException

from policyext.cluster.client import ApiClients
from policyext.cluster.rules_configmap import ConfigMapRef, policy_texts
from policyext.cluster.rules_crd import GROUP, PLURAL, RESOURCE, VERSION, PolicyObjects, policy_text
from policyext.cluster.snapshot import SnapshotError, SnapshotSource
from policyext.cluster.watch import list_pages
from policyext.policy import TEXT_PREFIX

Json = dict[str, Any]
# (connect, read) seconds: a CLI should say "unreachable" soon rather than hang
REQUEST_TIMEOUT: Final = (5.0, 60.0)
# urllib3 prefixes its reasons with the connection object: noise in a one-line error
_CONNECTION_PREFIX = re.compile(r"^\w+\(host=[^)]*\):\s*")


class ClusterReadError(SnapshotError):
    """The live cluster could not be read; the message is one line saying why."""


def cluster_snapshot(api: ApiClients) -> SnapshotSource:
    """The cluster's Nodes, Pods and Namespaces as they are now, with pods bound to a node
    counted on it (the Namespaces' labels are what pod affinity's namespaceSelector matches)."""
    core, host = api.core, api.host
    nodes = _list_all(core.list_node, "Node", host, "nodes", "cluster-wide")
    pods = _list_all(core.list_pod_for_all_namespaces, "Pod", host, "pods", "in all namespaces")
    namespaces = _list_all(core.list_namespace, "Namespace", host, "namespaces", "cluster-wide")
    return SnapshotSource([*nodes, *pods, *namespaces], f"cluster {host}")


def configmap_rule_texts(api: ApiClients, namespace: str, name: str) -> dict[str, str]:
    """The policy files a ConfigMap holds (the data keys the extender reads), by name."""
    host = api.host
    scope = f"in namespace {namespace}"
    try:
        response: Any = api.core.read_namespaced_config_map(
            name, namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
        )
        try:
            body = orjson.loads(response.data)
        finally:
            response.release_conn()
    except ApiException as e:
        if e.status == 404:
            raise ClusterReadError(f"ConfigMap {namespace}/{name} not found at {host}") from None
        raise ClusterReadError(describe_failure(e, host, "get", "configmaps", scope)) from None
    except (urllib3.exceptions.HTTPError, OSError, orjson.JSONDecodeError) as e:
        raise ClusterReadError(describe_failure(e, host, "get", "configmaps", scope)) from None
    # named and chosen as the extender serving the ConfigMap does, so the policy version
    # printed is the one its /policies reports
    texts = policy_texts(ConfigMapRef(namespace, name), body)
    if not texts:
        raise ClusterReadError(f"ConfigMap {namespace}/{name} holds no policy file")
    return texts


def schedulingpolicy_objects(api: ApiClients) -> PolicyObjects:
    """Every SchedulingPolicy of the cluster, listed once, as the texts the extender's watch
    loads (`--rules-crd`): named and written as it names and writes them, so that the
    policy version printed is the one its /policies reports."""
    listing = functools.partial(api.custom.list_cluster_custom_object, GROUP, VERSION, PLURAL)
    objects = _list_all(listing, "SchedulingPolicy", api.host, RESOURCE, "cluster-wide")
    texts: dict[str, str] = {}
    generations: dict[str, int] = {}
    for obj in objects:
        name = f"{TEXT_PREFIX}{(obj.get('metadata') or {}).get('name', '')}"
        texts[name] = policy_text(obj)
        generations[name] = int((obj.get("metadata") or {}).get("generation") or 0)
    return PolicyObjects(texts, generations)


def _list_all(
    call: Callable[..., Any], kind: str, host: str, resource: str, scope: str
) -> list[Json]:
    items: list[Json] = []
    try:
        for body in list_pages(
            lambda kwargs: call(_preload_content=False, _request_timeout=REQUEST_TIMEOUT, **kwargs)
        ):
            for item in body.get("items") or []:
                # the items of a list carry no kind; the snapshot source sorts objects by it
                item.setdefault("kind", kind)
                items.append(item)
    except (ApiException, urllib3.exceptions.HTTPError, OSError, orjson.JSONDecodeError) as e:
        raise ClusterReadError(describe_failure(e, host, "list", resource, scope)) from None
    return items


def describe_failure(error: Exception, host: str, verb: str, resource: str, scope: str) -> str:
    """One line on why a request to the API server failed, naming a missing permission."""
    if isinstance(error, ApiException):
        status = error.status
        said = _server_message(error)
        if status == 401:
            return (
                f"the API server at {host} refused the kubeconfig's credentials "
                f"(HTTP 401 Unauthorized): they are missing, expired or wrong"
            )
        if status == 403:
            return (
                f"the API server at {host} forbids it (HTTP 403): the kubeconfig's identity "
                f"needs the permission `{verb}` on `{resource}` {scope}"
                + (f" (the server said: {said})" if said else "")
            )
        if status is None or status == 0:
            return f"cannot reach the Kubernetes API at {host}: {error.reason}"
        return f"{verb} {resource} {scope} at {host}: HTTP {status} {said or error.reason}"
    if isinstance(error, urllib3.exceptions.MaxRetryError) and error.reason is not None:
        reason = _CONNECTION_PREFIX.sub("", str(error.reason))
        return f"cannot reach the Kubernetes API at {host}: {reason}"
    if isinstance(error, orjson.JSONDecodeError):
        return f"{verb} {resource} at {host}: the answer is not JSON (is that an API server?)"
    reason = _CONNECTION_PREFIX.sub("", str(error)) or type(error).__name__
    return f"cannot reach the Kubernetes API at {host}: {reason}"


def _server_message(error: ApiException) -> str:
    """The API server's own message from its Status body, on one line."""
    body = error.body
    if isinstance(body, bytes | str) and body:
        try:
            status = orjson.loads(body)
        except orjson.JSONDecodeError:
            return ""
        if isinstance(status, dict) and status.get("message"):
            return " ".join(str(status["message"]).split())
    return ""


def failed_scheduling_events(api: ApiClients, namespace: str, name: str) -> list[Json]:
    """The FailedScheduling events of one pod (`policyext explain --cluster`)."""
    core = api.core
    selector = f"involvedObject.name={name},reason=FailedScheduling"

    def call(**kwargs: Any) -> Any:
        return core.list_namespaced_event(namespace, field_selector=selector, **kwargs)

    return _list_all(call, "Event", api.host, "events", f"in namespace {namespace}")
