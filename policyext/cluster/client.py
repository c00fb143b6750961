"""The connection to the Kubernetes API: in-cluster (the pod's service account) or a
kubeconfig file. Nothing here talks to the API; it only builds the client.
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


def api_client(settings: ClusterSettings) -> k8s.ApiClient | None:
    """A client for the settings, or None when no cluster connection is configured. One
    client is shared by the watches and the binder of a worker (urllib3 pools are
    thread-safe); each gunicorn worker makes its own after the fork."""
    configuration = load_configuration(settings)
    if configuration is None:
        return None
    return k8s.ApiClient(configuration)
