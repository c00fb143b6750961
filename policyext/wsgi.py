"""Wiring for `policyext serve`: settings, the application of one worker, and gunicorn.

Each gunicorn worker builds its own application (policies, node source, metrics): nothing
is shared between processes but the metrics directory, so a worker is consistent on its
own and the server as a whole serves one policy version per request.
"""

from __future__ import annotations

import gc
import logging
import ssl
import sys
from dataclasses import dataclass, field
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from prometheus_client import multiprocess

from policyext.cluster.binder import ClusterBinder
from policyext.cluster.cache import ClusterSource
from policyext.cluster.client import ClusterSettings, api_client
from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import load_policy_set
from policyext.policy.resources import NodeSource
from policyext.server.app import DEFAULT_MAX_BODY, Binder, Options, create_app
from policyext.server.metrics import Metrics
from policyext.server.worker import LingeringThreadWorker
from policyext.store import PolicyStore

log = logging.getLogger("policyext")


@dataclass
class Settings:
    rules: list[str] = field(default_factory=list)
    bind: str = "0.0.0.0:8888"
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


def configure_logging(level: str) -> None:
    """Decision logs are JSON lines on stdout; everything else goes to stderr."""
    numeric = getattr(logging, level.upper(), logging.INFO)
    decisions = logging.getLogger("policyext.decisions")
    if not decisions.handlers:
        out = logging.StreamHandler(sys.stdout)
        out.setFormatter(logging.Formatter("%(message)s"))
        decisions.addHandler(out)
        decisions.propagate = False
    decisions.setLevel(numeric)
    root = logging.getLogger("policyext")
    if not root.handlers:
        err = logging.StreamHandler(sys.stderr)
        err.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(err)
    root.setLevel(numeric)


def build_app(settings: Settings) -> Flask:
    """The application of one worker: load the policies and the node source, then serve."""
    configure_logging(settings.log_level)
    store = PolicyStore()
    metrics = Metrics()
    source: NodeSource | None = None
    if settings.snapshot:
        source = SnapshotSource.from_file(settings.snapshot)
        log.info("node source: %s (%d nodes)", settings.snapshot, len(source.nodes))
    binder: Binder | None = None
    api = api_client(ClusterSettings(settings.kubeconfig, settings.in_cluster))
    if api is not None:
        # per worker, after the fork: threads and connections do not survive one
        live = ClusterSource(api)
        live.start()
        source = live
        binder = ClusterBinder(api, live)
        log.info("node source: the cluster (%s)", settings.kubeconfig or "in-cluster")
    status = store.reload(lambda: load_policy_set(settings.rules), ", ".join(settings.rules))
    metrics.reloads.labels("ok" if status.ok else "failed").inc()
    if status.ok:
        log.info("serving policy version %s from %s", status.version, status.source)
    else:
        for issue in status.issues:
            log.error("%s", issue)
        if status.error:
            log.error("%s", status.error)
    options = Options(url_prefix=settings.url_prefix, max_body=settings.max_body)
    app = create_app(store, source, binder, metrics, options)
    # the snapshot and the compiled policies live as long as the worker: keep the garbage
    # collector from walking them on every collection (they are most of the heap)
    gc.collect()
    gc.freeze()
    return app


def _tls_context(settings: Settings) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    assert settings.tls_cert and settings.tls_key
    context.load_cert_chain(settings.tls_cert, settings.tls_key)
    if settings.tls_client_ca:
        context.load_verify_locations(settings.tls_client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


class Server(BaseApplication):  # type: ignore[misc]
    """gunicorn, configured from Settings rather than from its own command line."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        s = self.settings
        config: dict[str, Any] = {
            "bind": [s.bind],
            "workers": s.workers,
            "worker_class": LingeringThreadWorker,  # gthread, see server/worker.py
            "threads": s.threads,
            "keepalive": 75,  # the scheduler keeps its connection open between pods
            "timeout": 30,
            "graceful_timeout": 10,
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
            settings = s
            config["ssl_context"] = lambda _conf, _default: _tls_context(settings)
        if s.workers > 1:
            config["child_exit"] = _child_exit
        for key, value in config.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        return build_app(self.settings)


def _child_exit(_server: object, worker: Any) -> None:
    multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


def serve(settings: Settings) -> None:
    """Run until stopped. With several workers, PROMETHEUS_MULTIPROC_DIR must be set before
    this module is imported (the CLI does it)."""
    configure_logging(settings.log_level)
    Server(settings).run()
