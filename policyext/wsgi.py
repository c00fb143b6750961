"""Wiring for `policyext serve`: the application of one worker, and gunicorn.

Each gunicorn worker builds its own application (policies, node source, metrics): nothing
is shared between processes but the metrics directory, so a worker is consistent on its
own and the server as a whole serves one policy version per request.
"""

from __future__ import annotations

import functools
import gc
import logging
import socket
import sys
from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.util import parse_address
from prometheus_client import multiprocess

from policyext.cluster.audit_events import AuditEvents
from policyext.cluster.binder import ClusterBinder
from policyext.cluster.cache import ClusterSource
from policyext.cluster.client import api_clients
from policyext.cluster.listing import configmap_rule_texts
from policyext.cluster.policy_reports import PolicyReports
from policyext.cluster.policy_sources import PolicySources
from policyext.cluster.report_body import REPORT_APIS
from policyext.cluster.rules_configmap import ConfigMapWatch, PolicyEvents
from policyext.cluster.rules_crd import PolicyObjectsWatch
from policyext.cluster.rules_dir import DirectoryWatcher
from policyext.cluster.snapshot import SnapshotSource
from policyext.cluster.status_writer import StatusWriter
from policyext.policy import Evaluation, LiveNodeSource, PolicySet
from policyext.server.admission import create_webhook_app
from policyext.server.app import Binder, Options, create_app
from policyext.server.decisions import DecisionLines
from policyext.server.draining import DrainFlag, DrainingArbiter
from policyext.server.entrance import AuditSink
from policyext.server.metrics import Metrics
from policyext.server.tls import TLSContexts, TLSFiles
from policyext.server.transport.worker import OPS_MAX_CONNECTIONS, JsonErrorWorker
from policyext.settings import Settings, WebhookSettings
from policyext.store import PolicyStore, ReloadStatus

log = logging.getLogger("policyext")

# seconds the calls in flight have to finish once the drain window is over (gunicorn's
# graceful_timeout); the chart's terminationGracePeriodSeconds exceeds it plus the window
GRACEFUL_TIMEOUT = 10


def configure_logging(level: str) -> None:
    """Decision logs are JSON lines on stdout; everything else goes to stderr."""
    numeric = getattr(logging, level.upper(), logging.INFO)
    decisions = logging.getLogger("policyext.decisions")
    if not decisions.handlers:
        decisions.addHandler(DecisionLines(sys.stdout))
        decisions.propagate = False
    decisions.setLevel(numeric)
    root = logging.getLogger("policyext")
    if not root.handlers:
        err = logging.StreamHandler(sys.stderr)
        # the pid, as gunicorn's own lines show it: each worker loads and reloads on its own
        err.setFormatter(
            logging.Formatter("%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s")
        )
        root.addHandler(err)
    root.setLevel(numeric)


def build_app(settings: Settings) -> Flask:
    """The application of one worker: load the policies and the node source, then serve."""
    configure_logging(settings.log_level)
    store = PolicyStore()
    metrics = Metrics()
    store.subscribe(lambda status: _reloaded(metrics, status, store.current))
    source: LiveNodeSource | None = None
    if settings.snapshot:
        source = SnapshotSource.from_file(settings.snapshot)
        log.info("node source: %s (%d nodes)", settings.snapshot, len(source.nodes))
    binder: Binder | None = None
    audits: AuditSink | None = None
    api = api_clients(settings.cluster)
    if api is not None:
        # per worker, after the fork: threads and connections do not survive one
        live = ClusterSource(api)
        live.start()
        metrics.watch_caches(live)
        source = live
        binder = ClusterBinder(api, live)
        sinks: list[AuditSink] = []
        if settings.audit_events_per_second > 0:
            recorder = AuditEvents(
                api, live, socket.gethostname(), settings.audit_events_per_second
            )
            metrics.watch_audit_events(recorder)
            sinks.append(recorder)
        if settings.reports:
            reports = PolicyReports(
                api,
                live,
                store,
                REPORT_APIS[settings.reports_api],
                settings.reports_per_second,
            )
            metrics.watch_policy_reports(reports)
            sinks.append(reports)
        audits = sinks[0] if len(sinks) == 1 else Sinks(sinks) if sinks else None
        log.info("node source: the cluster (%s)", settings.kubeconfig or "in-cluster")
    configmap = settings.configmap  # Settings guarantees a cluster connection with it
    events = PolicyEvents(api, socket.gethostname()) if configmap and api is not None else None
    objects = settings.rules_crd and api is not None  # Settings guarantees the connection
    writer = None
    if objects and api is not None:  # the objects' status, written by a thread of its own
        alive = None
        if settings.replica_namespace and isinstance(source, ClusterSource):
            alive = _replica_alive(source, settings.replica_namespace)
        writer = StatusWriter(api, settings.replica_name or socket.gethostname(), alive=alive)
        writer.start()
    sources = PolicySources(
        store,
        settings.rules,
        configmap,
        events,
        objects=objects,
        on_outcomes=writer.outcomes_changed if writer else None,
    )
    if settings.rules:
        # fingerprinted before the first load: a change in between is loaded again, not lost
        DirectoryWatcher(settings.rules, sources.reload, interval=settings.reload_interval).start()
    if objects and api is not None:
        # as the ConfigMap's below: nothing is served until the first list is in
        PolicyObjectsWatch(
            api,
            sources.objects_changed,
            on_problem=sources.objects_unreadable,
            on_objects=writer.objects_seen if writer else None,
        ).start()
    if configmap is not None and api is not None:
        # the first list loads the policies; until then /readyz says not ready and the
        # verbs answer with an Error rather than let every node through
        ConfigMapWatch(
            api,
            configmap,
            sources.configmap_changed,
            on_problem=sources.configmap_unreadable,
        ).start()
    elif not objects:
        sources.reload()
    options = Options(
        url_prefix=settings.url_prefix,
        max_body=settings.body_limit,
        request_deadline=settings.request_deadline,
        ops_bind=settings.ops_bind,
        introspection=settings.introspection,
        bind_verb=settings.bind_verb,
        scheduler_names=tuple(settings.scheduler_names),
    )
    app = create_app(store, source, binder, metrics, options, audits=audits)
    # the snapshot and the compiled policies live as long as the worker: keep the garbage
    # collector from walking them on every collection (they are most of the heap)
    gc.collect()
    gc.freeze()
    return app


def _replica_alive(pods: ClusterSource, namespace: str) -> Callable[[str], bool | None]:
    """Whether the replica named as a pod of `namespace` still exists, as the live pod cache
    knows it (None until its first list is in)."""

    def alive(replica: str) -> bool | None:
        if not pods.ready():
            return None
        return pods.pod(namespace, replica) is not None

    return alive


class Sinks:
    """Several places a filter answer's Audit findings go (the Events and the reports),
    offered in turn: each `offer` returns at once."""

    def __init__(self, sinks: list[AuditSink]) -> None:
        self.sinks = tuple(sinks)

    def offer(self, pod: Mapping[str, Any], ev: Evaluation) -> None:
        for sink in self.sinks:
            sink.offer(pod, ev)


def _reloaded(metrics: Metrics, status: ReloadStatus, serving: PolicySet) -> None:
    metrics.reloaded(status.ok, status.at)
    metrics.set_policy(serving)
    if status.ok:
        log.info("serving policy version %s from %s", status.version, status.source)
        if not serving.policies:
            log.warning(
                "the policy set from %s is empty: every node passes the filters and every"
                " score is 0 (policyext_policies_loaded is 0)",
                status.source,
            )
        return
    if status.partial:
        log.error(
            "policies from %s refused in part (each keeps its last good text, if any);"
            " serving policy version %s",
            status.source,
            status.version,
        )
    else:
        log.error(
            "policies from %s rejected; version %s keeps serving", status.source, status.version
        )
    for issue in status.issues:
        log.error("%s", issue)
    if status.error:
        log.error("%s", status.error)


class Server(BaseApplication):  # type: ignore[misc]
    """gunicorn, configured from Settings rather than from its own command line."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # made before the workers are forked: those forked during a drain read it
        self.drain_flag = DrainFlag()
        super().__init__()

    def load_config(self) -> None:
        s = self.settings
        worker: dict[str, Any] = {
            "read_timeout": s.read_timeout,
            "max_body": s.body_limit,
            "max_buffered": s.buffered_limit,
            "max_connections": s.max_connections,
            "ops_address": parse_address(s.ops_bind) if s.ops_bind else None,
            "tls_allow": frozenset(s.tls_client_allow),
            "drain_flag": self.drain_flag,
            "shutdown_delay": s.shutdown_delay,
        }
        config: dict[str, Any] = {
            "bind": [s.bind] + ([s.ops_bind] if s.ops_bind else []),
            "workers": s.workers,
            # the worker (gthread reading requests whole before a thread sees them,
            # server/transport/worker.py) caps the connections of each listener itself: gunicorn's
            # cap, which stops every listener at once, is above their sum, never reached
            "worker_connections": s.max_connections + OPS_MAX_CONNECTIONS + 1,
            "threads": s.threads,
            "keepalive": 75,  # the scheduler keeps its connection open between pods
            "timeout": 30,
            # after the drain window (--shutdown-delay): the calls in flight finish
            "graceful_timeout": GRACEFUL_TIMEOUT,
            "loglevel": s.log_level,
            "errorlog": "-",
            "accesslog": None,
            "proc_name": "policyext",
            "limit_request_line": 8190,
            # gunicorn's control socket is per user, shared by every server on the host
            "control_socket_disable": True,
        }
        if s.tls_cert:
            config["certfile"] = s.tls_cert
            config["keyfile"] = s.tls_key
            files = TLSFiles(s.tls_cert, s.tls_key or "", s.tls_client_ca)
            contexts = TLSContexts(files)
            # called for every new connection: the cache rebuilds only on renewed files
            config["ssl_context"] = lambda _conf, _default: contexts.get()
            if s.ops_bind and s.tls_client_ca:
                # the probes of the operations listener come without a client certificate
                worker["ops_tls"] = TLSContexts(files, client_optional=True).get
        config["worker_class"] = type("PolicyextWorker", (JsonErrorWorker,), worker)
        if s.workers > 1:
            config["child_exit"] = _child_exit
        for key, value in config.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        return build_app(self.settings)

    def run(self) -> None:
        """gunicorn's arbiter, with a drain window on SIGTERM (server/draining.py)."""
        try:
            DrainingArbiter(self, self.settings.shutdown_delay, self.drain_flag).run()
        except RuntimeError as e:  # (as gunicorn reports a server that cannot start)
            print(f"\nError: {e}\n", file=sys.stderr)
            sys.stderr.flush()
            sys.exit(1)


def _child_exit(_server: object, worker: Any) -> None:
    multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


def serve(settings: Settings) -> None:
    """Run until stopped. With several workers, PROMETHEUS_MULTIPROC_DIR must be set before
    this module is imported (the CLI does it)."""
    configure_logging(settings.log_level)
    warn_about_access(settings)
    Server(settings).run()


def warn_about_access(settings: Settings) -> None:
    """Say at start who may call the verbs when it is wider than it may look."""
    if settings.tls_client_ca and not settings.tls_client_allow:
        log.warning(
            "--tls-client-ca without --tls-client-allow: any client certificate %s signed "
            "may call every endpoint; name the scheduler's with --tls-client-allow",
            settings.tls_client_ca,
        )


class WebhookServer(BaseApplication):  # type: ignore[misc]
    """`policyext webhook`: the admission webhook (server/admission.py) under gunicorn, a
    process of its own, never the extender's: a review compiles a policy, and that CPU
    never shares a worker, a thread or the GIL with a scheduling call."""

    def __init__(self, settings: WebhookSettings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        s = self.settings
        contexts = TLSContexts(TLSFiles(s.tls_cert, s.tls_key))
        config: dict[str, Any] = {
            "bind": [s.bind],
            "workers": 1,
            "threads": 2,  # reviews come one at a time, from the API servers
            "keepalive": 75,
            "timeout": 30,
            "graceful_timeout": GRACEFUL_TIMEOUT,
            "loglevel": s.log_level,
            "errorlog": "-",
            "accesslog": None,
            "proc_name": "policyext-webhook",
            "control_socket_disable": True,
            "certfile": s.tls_cert,
            "keyfile": s.tls_key,
            # renewed certificate files served to the next connection (server/tls.py)
            "ssl_context": lambda _conf, _default: contexts.get(),
            # gunicorn's own refusals (a malformed request) as JSON too
            "worker_class": type("PolicyextWebhookWorker", (JsonErrorWorker,), {}),
        }
        for key, value in config.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        s = self.settings
        configure_logging(s.log_level)
        others = None
        if s.configmap is not None:
            # per worker, after the fork: a connection does not survive one
            api = api_clients(s.cluster)
            if api is not None:
                namespace, name = s.configmap.namespace, s.configmap.name
                others = functools.partial(configmap_rule_texts, api, namespace, name)
        return create_webhook_app(s.rules, others)


def serve_webhook(settings: WebhookSettings) -> None:
    configure_logging(settings.log_level)
    try:
        WebhookServer(settings).run()
    except RuntimeError as e:  # (as gunicorn reports a server that cannot start)
        print(f"\nError: {e}\n", file=sys.stderr)
        sys.exit(1)
