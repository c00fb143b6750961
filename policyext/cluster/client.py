"""The connection to the Kubernetes API: in-cluster (the pod's service account) or a
kubeconfig file. Nothing here talks to the API; it only builds the clients.

This is the one place that builds them: every module of `policyext.cluster` receives an
`ApiClients` and calls its typed groups, so a test substitutes fakes here (an `ApiClients`
whose `core` or `custom` answers as the API server would) instead of patching each module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

# two long-lived watches plus bind calls from every request thread of a worker
POOL_SIZE: Final = 16


class ClientConfigError(Exception):
    """The connection settings cannot be loaded (missing file, bad kubeconfig, not in a pod)."""


@dataclass(frozen=True)
class ClusterSettings:
    kubeconfig: str | None = None
    in_cluster: bool = False
    context: str | None = None

    @property
    def enabled(self) -> bool:
        return self.in_cluster or bool(self.kubeconfig)


def default_kubeconfig() -> str:
    """The kubeconfig kubectl would use: $KUBECONFIG (several files separated by the path
    separator are merged) or ~/.kube/config."""
    return os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")


def load_configuration(settings: ClusterSettings) -> k8s.Configuration | None:
    """The client configuration, or None when neither in-cluster nor a kubeconfig is asked
    for. In-cluster wins when both are given (a pod has no business reading a file)."""
    if not settings.enabled:
        return None
    configuration = k8s.Configuration()
    try:
        if settings.in_cluster:
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=settings.kubeconfig,
                context=settings.context,
                client_configuration=configuration,
                persist_config=False,
            )
    except (ConfigException, OSError, ValueError) as e:
        where = "in-cluster service account" if settings.in_cluster else settings.kubeconfig
        raise ClientConfigError(f"cannot load the Kubernetes connection ({where}): {e}") from e
    configuration.connection_pool_maxsize = POOL_SIZE
    return configuration


@dataclass(frozen=True, slots=True)
class ApiClients:
    """The API groups policyext calls, over one connection: `core` (Nodes, Pods, Bindings,
    ConfigMaps, Events) and `custom` (SchedulingPolicy objects and their status); `host`
    names the API server in messages."""

    core: k8s.CoreV1Api
    custom: k8s.CustomObjectsApi
    host: str

    @classmethod
    def over(cls, api: k8s.ApiClient) -> ApiClients:
        """The groups sharing `api`'s connection pool."""
        return cls(k8s.CoreV1Api(api), k8s.CustomObjectsApi(api), str(api.configuration.host))


def api_clients(settings: ClusterSettings) -> ApiClients | None:
    """The clients for the settings, or None when no cluster connection is configured. One
    connection is shared by the watches, the binder and the status writer of a worker
    (urllib3 pools are thread-safe); each gunicorn worker makes its own after the fork."""
    configuration = load_configuration(settings)
    if configuration is None:
        return None
    return ApiClients.over(k8s.ApiClient(configuration))
