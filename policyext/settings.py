"""What `policyext serve` runs with, checked in one place.

A `Settings` that exists is consistent: its constructor refuses a combination that cannot
run (a certificate without its key, a ConfigMap without a cluster, a worker count of 0),
so the command line and the gunicorn wiring (wsgi.py) never check the same thing twice.
What needs the outside world (the policies validate, the snapshot reads, the kubeconfig
loads) is `preflight`, run once by the command before anything starts.

Nothing here imports Flask, gunicorn or prometheus_client (the command must prepare the
metrics directory before prometheus_client is first imported), and the Kubernetes client
only when a cluster is configured, so the other commands start without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from policyext.cluster.rules_dir import POLL_INTERVAL
from policyext.cluster.snapshot import SnapshotError, SnapshotSource
from policyext.policy.compile import load_policy_set
from policyext.policy.model import Issue, PolicyError
from policyext.store import unexpected_failure

if TYPE_CHECKING:
    from policyext.cluster.client import ClusterSettings
    from policyext.cluster.rules_configmap import ConfigMapRef

# the server's own defaults (server/app.py Options), repeated so that reading the settings
# does not import the web stack
DEFAULT_MAX_BODY = 64 * 1024 * 1024
DEFAULT_REQUEST_DEADLINE = 3.0
DEFAULT_AUDIT_EVENTS_PER_SECOND = 5.0
# server/worker.py READ_TIMEOUT
DEFAULT_READ_TIMEOUT = 10.0
DEFAULT_BIND = "0.0.0.0:8888"


class SettingsError(ValueError):
    """The settings cannot run. `usage` tells a wrong combination or form of flags (exit 2)
    from input that is present but unusable (exit 1)."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


@dataclass
class Settings:
    rules: list[str] = field(default_factory=list)
    rules_configmap: str | None = None  # NAMESPACE/NAME
    reload_interval: float = POLL_INTERVAL
    bind: str = DEFAULT_BIND
    snapshot: str | None = None
    kubeconfig: str | None = None
    in_cluster: bool = False
    workers: int = 1
    threads: int = 4
    url_prefix: str = ""
    log_level: str = "info"
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_client_ca: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    request_deadline: float = DEFAULT_REQUEST_DEADLINE
    read_timeout: float = DEFAULT_READ_TIMEOUT
    # Events on pods about Audit findings, per worker and second (0: none); needs a cluster
    audit_events_per_second: float = DEFAULT_AUDIT_EVENTS_PER_SECOND

    def __post_init__(self) -> None:
        for flag, count in (
            ("--workers", self.workers),
            ("--threads", self.threads),
            ("--max-body", self.max_body),
        ):
            if count < 1:
                raise SettingsError(
                    f"{flag} must be a whole number of at least 1, got {count}", usage=True
                )
        for flag, seconds in (
            ("--request-deadline", self.request_deadline),
            ("--read-timeout", self.read_timeout),
        ):
            if not 0 < seconds < float("inf"):
                raise SettingsError(
                    f"{flag} must be a positive number of seconds, got {seconds}", usage=True
                )
        if not 0 <= self.audit_events_per_second < float("inf"):
            raise SettingsError(
                f"--audit-events-per-second must be 0 or more, got {self.audit_events_per_second}",
                usage=True,
            )
        if bool(self.tls_cert) != bool(self.tls_key):
            raise SettingsError("--tls-cert and --tls-key go together")
        if self.tls_client_ca and not self.tls_cert:
            raise SettingsError("--tls-client-ca needs --tls-cert and --tls-key")
        connected = self.in_cluster or bool(self.kubeconfig)
        if self.snapshot and connected:
            raise SettingsError(
                "--snapshot and --kubeconfig/--in-cluster exclude each other", usage=True
            )
        if not self.rules and not self.rules_configmap:
            raise SettingsError(
                "give the policies with --rules and/or --rules-configmap", usage=True
            )
        if self.rules_configmap is not None:
            from policyext.cluster.rules_configmap import ConfigMapNameError  # noqa: PLC0415

            try:
                self.configmap  # noqa: B018 - parsed to be checked
            except ConfigMapNameError as e:
                raise SettingsError(str(e), usage=True) from None
            if not connected:
                raise SettingsError(
                    "--rules-configmap needs --kubeconfig or --in-cluster", usage=True
                )

    @property
    def cluster(self) -> ClusterSettings:
        from policyext.cluster.client import ClusterSettings  # noqa: PLC0415 - see above

        return ClusterSettings(self.kubeconfig, self.in_cluster)

    @property
    def configmap(self) -> ConfigMapRef | None:
        from policyext.cluster.rules_configmap import ConfigMapRef  # noqa: PLC0415

        return ConfigMapRef.parse(self.rules_configmap) if self.rules_configmap else None


def whole_number(text: str, flag: str) -> int:
    """A count given as text (a flag or an environment variable)."""
    try:
        return int(text)
    except ValueError:
        raise SettingsError(
            f"{flag} must be a whole number of at least 1, got {text!r}", usage=True
        ) from None


def seconds(text: str, flag: str) -> float:
    """A duration in seconds given as text."""
    try:
        return float(text)
    except ValueError:
        raise SettingsError(
            f"{flag} must be a positive number of seconds, got {text!r}", usage=True
        ) from None


def number(text: str, flag: str) -> float:
    """A number given as text (0 allowed)."""
    try:
        return float(text)
    except ValueError:
        raise SettingsError(f"{flag} must be a number, got {text!r}", usage=True) from None


def preflight(settings: Settings) -> list[Issue] | None:
    """Refuse to start on what would fail in every worker: policies that do not validate
    (returned as issues), a snapshot that cannot be read, a connection that cannot be
    configured (raised as SettingsError). With a ConfigMap the policies are judged once it
    is read, as a union with the folders."""
    if not settings.rules_configmap:
        try:
            load_policy_set(settings.rules)
        except PolicyError as e:
            return e.issues
        except Exception as e:  # a refusal to start, never a traceback loop
            raise SettingsError(unexpected_failure(e)) from None
    if settings.snapshot:
        try:
            SnapshotSource.from_file(settings.snapshot)
        except SnapshotError as e:
            raise SettingsError(str(e)) from None
    if settings.in_cluster or settings.kubeconfig:
        from policyext.cluster.client import (  # noqa: PLC0415 - see above
            ClientConfigError,
            load_configuration,
        )

        try:
            load_configuration(settings.cluster)
        except ClientConfigError as e:
            raise SettingsError(str(e)) from None
    return None
