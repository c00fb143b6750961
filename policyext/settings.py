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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from policyext.cluster.rules_dir import POLL_INTERVAL
from policyext.cluster.snapshot import SnapshotError, SnapshotSource
from policyext.policy import Issue, PolicyError, load_policy_set
from policyext.store import unexpected_failure

if TYPE_CHECKING:
    from policyext.cluster.client import ClusterSettings
    from policyext.cluster.rules_configmap import ConfigMapRef

T = TypeVar("T")
# the server's own defaults (server/app.py Options), repeated so that reading the settings
# does not import the web stack
DEFAULT_MAX_BODY = 64 * 1024 * 1024
# the body limit with a cluster connection: `policyext config` then says nodeCacheCapable,
# and kube-scheduler sends node names only (a NodeNames call at 5,000 nodes is ~100 KB)
DEFAULT_MAX_BODY_CONNECTED = 4 * 1024 * 1024
# the bytes of requests in flight a worker holds, in bodies: --max-buffered's default
BUFFERED_BODIES = 4
# open connections per worker on the verbs listener: kube-scheduler keeps one or two per
# extender, probes and scrapes come and go; far below the usual 1,024 open files
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_REQUEST_DEADLINE = 3.0
DEFAULT_AUDIT_EVENTS_PER_SECOND = 5.0
# policy reports (cluster/policy_reports.py, repeated here as the other defaults are)
REPORT_APIS = ("wgpolicyk8s.io/v1alpha2", "openreports.io/v1alpha1")
DEFAULT_REPORTS_PER_SECOND = 10.0
# server/transport/worker.py READ_TIMEOUT
DEFAULT_READ_TIMEOUT = 10.0
DEFAULT_BIND = "0.0.0.0:8888"
# seconds between SIGTERM and gunicorn's stop, answering while the load balancers take the
# replica out (server/draining.py): kube-proxy needs a second or two after the endpoint
# turns unready, a load balancer its health check's interval
DEFAULT_SHUTDOWN_DELAY = 5.0
# the schedulerName of a pod that names none: the pods /bind binds unless told otherwise
DEFAULT_SCHEDULER_NAMES = ("default-scheduler",)


class SettingsError(ValueError):
    """The settings cannot run. `usage` tells a wrong combination or form of flags (exit 2)
    from input that is present but unusable (exit 1)."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


class _ClusterReach:
    """The flags `serve` and `webhook` share: how to reach the cluster, and a ConfigMap of
    policies read from it (the dataclasses below declare them as fields)."""

    kubeconfig: str | None
    in_cluster: bool
    rules_configmap: str | None  # NAMESPACE/NAME

    @property
    def connected(self) -> bool:
        """Whether a cluster is configured (kubeconfig or in-cluster)."""
        return self.in_cluster or bool(self.kubeconfig)

    @property
    def cluster(self) -> ClusterSettings:
        from policyext.cluster.client import ClusterSettings  # noqa: PLC0415 - see above

        return ClusterSettings(self.kubeconfig, self.in_cluster)

    @property
    def configmap(self) -> ConfigMapRef | None:
        from policyext.cluster.rules_configmap import ConfigMapRef  # noqa: PLC0415

        return ConfigMapRef.parse(self.rules_configmap) if self.rules_configmap else None

    def _check_configmap(self) -> None:
        """--rules-configmap names a ConfigMap, and a cluster to read it from is given."""
        if self.rules_configmap is None:
            return
        from policyext.cluster.rules_configmap import ConfigMapNameError  # noqa: PLC0415

        try:
            self.configmap  # noqa: B018 - parsed to be checked
        except ConfigMapNameError as e:
            raise SettingsError(str(e), usage=True) from None
        if not self.connected:
            raise SettingsError("--rules-configmap needs --kubeconfig or --in-cluster", usage=True)


def _check_address(flag: str, address: str, *, host_required: bool) -> None:
    host, sep, port = address.rpartition(":")
    if not sep or (host_required and not host) or not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(
            f"{flag} must be HOST:PORT with a port from 1 to 65535, got {address!r}",
            usage=True,
        )


@dataclass
class Settings(_ClusterReach):
    rules: list[str] = field(default_factory=list)
    rules_configmap: str | None = None  # NAMESPACE/NAME
    rules_crd: bool = False  # the cluster's SchedulingPolicy objects
    # this replica's name in the objects' status.byPod ("": the host name, a pod's name)
    replica_name: str = ""
    # the namespace of the replicas' pods: a byPod entry whose pod is gone from it is
    # removed ("": entries are never removed)
    replica_namespace: str = ""
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
    # None: by the configuration (DEFAULT_MAX_BODY_CONNECTED with a cluster, else
    # DEFAULT_MAX_BODY); `body_limit` says which
    max_body: int | None = None
    # bytes of requests in flight a worker holds at once (None: BUFFERED_BODIES bodies)
    max_buffered: int | None = None
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    # a second listener for /healthz, /readyz, /metrics, /explain, /policies
    ops_bind: str | None = None
    introspection: bool = True  # /explain and /policies answered
    tls_client_allow: list[str] = field(default_factory=list)
    request_deadline: float = DEFAULT_REQUEST_DEADLINE
    read_timeout: float = DEFAULT_READ_TIMEOUT
    # Events on pods about Audit findings, per worker and second (0: none); needs a cluster
    audit_events_per_second: float = DEFAULT_AUDIT_EVENTS_PER_SECOND
    # a policy report per bound pod that Audit filters apply to; needs a cluster
    reports: bool = False
    reports_api: str = REPORT_APIS[0]
    reports_per_second: float = DEFAULT_REPORTS_PER_SECOND
    # /bind binds (kube-scheduler's bindVerb); without it /bind binds nothing and says why
    bind_verb: bool = False
    # the spec.schedulerName of the pods /bind may bind (those of other schedulers: never)
    scheduler_names: list[str] = field(default_factory=lambda: list(DEFAULT_SCHEDULER_NAMES))
    # the drain window on SIGTERM (0: stop accepting at once, gunicorn's own way)
    shutdown_delay: float = DEFAULT_SHUTDOWN_DELAY

    def __post_init__(self) -> None:
        for flag, count in (
            ("--workers", self.workers),
            ("--threads", self.threads),
            ("--max-body", self.max_body),
            ("--max-buffered", self.max_buffered),
            ("--max-connections", self.max_connections),
        ):
            if count is None:
                continue
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
        if not 0 <= self.shutdown_delay < float("inf"):
            raise SettingsError(
                f"--shutdown-delay must be 0 or more seconds, got {self.shutdown_delay}",
                usage=True,
            )
        if not 0 <= self.audit_events_per_second < float("inf"):
            raise SettingsError(
                f"--audit-events-per-second must be 0 or more, got {self.audit_events_per_second}",
                usage=True,
            )
        self._check_reports()
        if not self.scheduler_names or not all(n.strip() for n in self.scheduler_names):
            raise SettingsError(
                f"--scheduler-name must name at least one scheduler; got {self.scheduler_names!r}",
                usage=True,
            )
        if bool(self.tls_cert) != bool(self.tls_key):
            raise SettingsError("--tls-cert and --tls-key go together")
        if self.tls_client_ca and not self.tls_cert:
            raise SettingsError("--tls-client-ca needs --tls-cert and --tls-key")
        if self.tls_client_allow and not self.tls_client_ca:
            raise SettingsError(
                "--tls-client-allow needs --tls-client-ca (the names are those of verified "
                "client certificates)",
                usage=True,
            )
        if self.ops_bind is not None:
            self._check_ops_bind(self.ops_bind)
        if self.max_buffered is not None and self.max_buffered < self.body_limit:
            raise SettingsError(
                f"--max-buffered ({self.max_buffered}) must be at least the body limit "
                f"({self.body_limit}): a request that size could never be read",
                usage=True,
            )
        connected = self.connected
        if self.snapshot and connected:
            raise SettingsError(
                "--snapshot and --kubeconfig/--in-cluster exclude each other", usage=True
            )
        if not self.rules and not self.rules_configmap and not self.rules_crd:
            raise SettingsError(
                "give the policies with --rules, --rules-configmap and/or --rules-crd",
                usage=True,
            )
        if self.rules_crd and not connected:
            raise SettingsError("--rules-crd needs --kubeconfig or --in-cluster", usage=True)
        if self.replica_namespace and not self.rules_crd:
            raise SettingsError(
                "--replica-namespace goes with --rules-crd (it says whose status entries are gone)",
                usage=True,
            )
        self._check_configmap()

    def _check_reports(self) -> None:
        if self.reports_api not in REPORT_APIS:
            raise SettingsError(
                f"--reports-api must be one of {', '.join(REPORT_APIS)}, got {self.reports_api!r}",
                usage=True,
            )
        if not 0 < self.reports_per_second < float("inf"):
            raise SettingsError(
                f"--reports-per-second must be more than 0, got {self.reports_per_second}",
                usage=True,
            )
        if self.reports and not self.connected:
            raise SettingsError("--reports needs --kubeconfig or --in-cluster", usage=True)

    def _check_ops_bind(self, address: str) -> None:
        _check_address("--ops-bind", address, host_required=True)
        if address == self.bind:
            raise SettingsError("--ops-bind must differ from --bind", usage=True)

    @property
    def body_limit(self) -> int:
        """--max-body, else by the configuration: with a cluster the scheduler sends node
        names only (nodeCacheCapable), a snapshot or standalone extender receives Nodes."""
        if self.max_body is not None:
            return self.max_body
        return DEFAULT_MAX_BODY_CONNECTED if self.connected else DEFAULT_MAX_BODY

    @property
    def buffered_limit(self) -> int:
        """--max-buffered, else BUFFERED_BODIES bodies at the limit."""
        if self.max_buffered is not None:
            return self.max_buffered
        return BUFFERED_BODIES * self.body_limit


DEFAULT_WEBHOOK_BIND = "0.0.0.0:8443"


@dataclass
class WebhookSettings(_ClusterReach):
    """What `policyext webhook` runs with: where it listens, its certificate (the API server
    calls a webhook over TLS only), and the other policy sources a SchedulingPolicy's name
    must not clash with (`--rules` folders, a ConfigMap read at each review)."""

    tls_cert: str
    tls_key: str
    bind: str = DEFAULT_WEBHOOK_BIND
    rules: list[str] = field(default_factory=list)
    rules_configmap: str | None = None  # NAMESPACE/NAME
    kubeconfig: str | None = None
    in_cluster: bool = False
    log_level: str = "info"

    def __post_init__(self) -> None:
        if not self.tls_cert or not self.tls_key:
            raise SettingsError(
                "--tls-cert and --tls-key are required: the API server calls a webhook "
                "over TLS only",
                usage=True,
            )
        # (":8443": every address, as gunicorn reads it)
        _check_address("--bind", self.bind, host_required=False)
        self._check_configmap()


def whole_number(text: str, flag: str) -> int:
    """A count given as text (a flag or an environment variable)."""
    return _parsed(text, int, flag, "a whole number of at least 1")


def seconds(text: str, flag: str) -> float:
    """A duration in seconds given as text."""
    return _parsed(text, float, flag, "a positive number of seconds")


def number(text: str, flag: str) -> float:
    """A number given as text (0 allowed)."""
    return _parsed(text, float, flag, "a number")


def _parsed(text: str, parse: Callable[[str], T], flag: str, what: str) -> T:
    """`text` read by `parse`; a usage error saying what `flag` takes when it cannot be."""
    try:
        return parse(text)
    except ValueError:
        raise SettingsError(f"{flag} must be {what}, got {text!r}", usage=True) from None


def preflight(settings: Settings) -> list[Issue] | None:
    """Refuse to start on what would fail in every worker: policies that do not validate
    (returned as issues), a snapshot that cannot be read, a connection that cannot be
    configured (raised as SettingsError). With a ConfigMap or the SchedulingPolicy objects
    the policies are judged once those are read, as a union with the folders."""
    if not settings.rules_configmap and not settings.rules_crd:
        try:
            load_policy_set(settings.rules)
        except PolicyError as e:
            return e.issues
        except Exception as e:  # a refusal to start, never a traceback loop
            raise SettingsError(unexpected_failure(e)) from None
    if settings.snapshot:
        try:
            SnapshotSource.with_nodes(settings.snapshot)
        except SnapshotError as e:
            raise SettingsError(str(e)) from None
    if settings.connected:
        from policyext.cluster.client import (  # noqa: PLC0415 - see above
            ClientConfigError,
            load_configuration,
        )

        try:
            load_configuration(settings.cluster)
        except ClientConfigError as e:
            raise SettingsError(str(e)) from None
    return None
