"""`policyext serve`: the extender under gunicorn. Every flag is also an environment
variable (`--rules` is `POLICYEXT_RULES`), as a container is configured.

Flask, gunicorn and prometheus_client are imported only here, once the metrics directory
is prepared: prometheus_client chooses its storage when it is first imported.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from policyext.cli.flags import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    Commands,
    add_paths,
    fail,
    split_paths,
)
from policyext.cli.output import print_issues
from policyext.settings import (
    BUFFERED_BODIES,
    DEFAULT_AUDIT_EVENTS_PER_SECOND,
    DEFAULT_BIND,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_BODY_CONNECTED,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_REPORTS_PER_SECOND,
    DEFAULT_REQUEST_DEADLINE,
    DEFAULT_SCHEDULER_NAMES,
    DEFAULT_SHUTDOWN_DELAY,
    REPORT_APIS,
    Settings,
    SettingsError,
    number,
    preflight,
    seconds,
    whole_number,
)


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "serve",
        help="serve the extender (gunicorn); every flag is also an environment variable",
        description="Every flag can also be set as POLICYEXT_<FLAG>, e.g. POLICYEXT_RULES.",
    )
    add_paths(
        parser,
        "--rules",
        dest="rules",
        help="policy files or folders, reloaded when they change [env POLICYEXT_RULES, "
        "comma-separated]",
    )
    _env_flag(
        parser,
        "--rules-configmap",
        None,
        metavar="NAMESPACE/NAME",
        help="policies from this ConfigMap, watched through the API (with --rules: both)",
    )
    parser.add_argument(
        "--rules-crd",
        action="store_true",
        default=_env_true("POLICYEXT_RULES_CRD"),
        help="policies from the cluster's SchedulingPolicy objects, watched through the API "
        "(with --rules or --rules-configmap: one set of all) [env POLICYEXT_RULES_CRD]",
    )
    _env_flag(
        parser,
        "--replica-name",
        None,
        metavar="NAME",
        help="with --rules-crd: this replica's entry in the SchedulingPolicy objects' "
        "status.byPod (default: the host name, which is the pod's name)",
    )
    _env_flag(
        parser,
        "--replica-namespace",
        None,
        metavar="NAMESPACE",
        help="with --rules-crd: the namespace of the replicas' pods; the status.byPod entry "
        "of a replica whose pod is gone from it is removed (default: never removed)",
    )
    _env_flag(parser, "--bind", DEFAULT_BIND, metavar="HOST:PORT")
    _env_flag(
        parser,
        "--ops-bind",
        None,
        metavar="HOST:PORT",
        help="a second listener for /healthz, /readyz, /metrics, /explain and /policies; "
        "--bind then answers the verbs only",
    )
    _env_flag(
        parser,
        "--introspection",
        "on",
        metavar="on|off",
        help="off: /explain and /policies answer 404",
    )
    _env_flag(parser, "--snapshot", None, metavar="FILE", help="Nodes and Pods to serve from")
    _env_flag(parser, "--kubeconfig", None, metavar="FILE", help="watch and bind in this cluster")
    parser.add_argument(
        "--in-cluster",
        action="store_true",
        default=_env_true("POLICYEXT_IN_CLUSTER"),
        help="watch and bind in the cluster the extender runs in (its service account) "
        "[env POLICYEXT_IN_CLUSTER]",
    )
    parser.add_argument(
        "--bind-verb",
        action="store_true",
        default=_env_true("POLICYEXT_BIND_VERB"),
        help="serve /bind (kube-scheduler's bindVerb): bind the pods of --scheduler-name to "
        "nodes that pass the policies; without it /bind binds nothing and says why "
        "[env POLICYEXT_BIND_VERB]",
    )
    parser.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="with --bind-verb: the spec.schedulerName of the pods /bind may bind; repeat it "
        "or separate names with commas [env POLICYEXT_SCHEDULER_NAME, default "
        f"{','.join(DEFAULT_SCHEDULER_NAMES)!r}]",
    )
    _env_flag(parser, "--workers", "1", metavar="N")
    _env_flag(parser, "--threads", "4", metavar="N")
    _env_flag(parser, "--url-prefix", "", metavar="P", help="path prefix of the verbs")
    _env_flag(parser, "--log-level", "info", metavar="L", help="debug, info, warning, error")
    _env_flag(parser, "--tls-cert", None, metavar="FILE")
    _env_flag(parser, "--tls-key", None, metavar="FILE")
    _env_flag(parser, "--tls-client-ca", None, metavar="FILE", help="require client certificates")
    parser.add_argument(
        "--tls-client-allow",
        action="append",
        default=[],
        metavar="NAME",
        help="with --tls-client-ca: only client certificates whose subject CN or a DNS/URI "
        "SAN is one of these names may call (repeat it or separate names with commas) "
        "[env POLICYEXT_TLS_CLIENT_ALLOW, default: any certificate the CA signed]",
    )
    _env_flag(
        parser,
        "--max-body",
        None,
        metavar="BYTES",
        help=f"default {DEFAULT_MAX_BODY_CONNECTED} with --kubeconfig/--in-cluster (the "
        f"scheduler sends node names), else {DEFAULT_MAX_BODY}",
    )
    _env_flag(
        parser,
        "--max-buffered",
        None,
        metavar="BYTES",
        help=f"request bytes a worker holds at once; past it a request is answered 503 "
        f"(default {BUFFERED_BODIES} times the body limit)",
    )
    _env_flag(
        parser,
        "--max-connections",
        str(DEFAULT_MAX_CONNECTIONS),
        metavar="N",
        help="open connections per worker on --bind; past it the oldest idle one is closed, "
        "else the new one is refused",
    )
    _env_flag(
        parser,
        "--request-deadline",
        f"{DEFAULT_REQUEST_DEADLINE:g}",
        metavar="SECONDS",
        help="evaluation time per request; what is left then fails as its failurePolicy says",
    )
    _env_flag(
        parser,
        "--read-timeout",
        f"{DEFAULT_READ_TIMEOUT:g}",
        metavar="SECONDS",
        help="time for a request to arrive whole from its first byte; a slower client gets 408",
    )
    _env_flag(
        parser,
        "--audit-events-per-second",
        f"{DEFAULT_AUDIT_EVENTS_PER_SECOND:g}",
        metavar="N",
        help="with a cluster: Events on pods an Audit filter would have kept off nodes, at "
        "most N a second per worker (0: none)",
    )
    parser.add_argument(
        "--reports",
        action="store_true",
        default=_env_true("POLICYEXT_REPORTS"),
        help="with a cluster: a policy report on each bound pod that Audit filters apply to, "
        "one result per Audit rule about the pod's node [env POLICYEXT_REPORTS]",
    )
    _env_flag(
        parser,
        "--reports-api",
        REPORT_APIS[0],
        metavar="API",
        help=f"with --reports: the reports' API, {' or '.join(REPORT_APIS)}",
    )
    _env_flag(
        parser,
        "--reports-per-second",
        f"{DEFAULT_REPORTS_PER_SECOND:g}",
        metavar="N",
        help="with --reports: at most N reports written a second per worker",
    )
    _env_flag(
        parser,
        "--shutdown-delay",
        f"{DEFAULT_SHUTDOWN_DELAY:g}",
        metavar="SECONDS",
        help="on SIGTERM: /readyz answers 503 and every call is still answered (its "
        "connection then closed) for this long, then in-flight calls finish and the server "
        "exits (0: stop accepting at once)",
    )
    parser.set_defaults(run=run)


def _env_flag(
    parser: argparse.ArgumentParser, flag: str, default: str | None, **kwargs: Any
) -> None:
    env = "POLICYEXT_" + flag.lstrip("-").upper().replace("-", "_")
    value = os.environ.get(env, default)
    help_text = kwargs.pop("help", "")
    parser.add_argument(
        flag, default=value, help=f"{help_text} [env {env}, default {default!r}]".strip(), **kwargs
    )


def _env_true(env: str) -> bool:
    return os.environ.get(env, "").lower() in ("1", "true", "yes")


def _scheduler_names(given: list[str] | None) -> list[str]:
    """Every --scheduler-name, split at commas (empty parts dropped); else those of
    POLICYEXT_SCHEDULER_NAME; else the default scheduler's name."""
    if given is None:
        env = os.environ.get("POLICYEXT_SCHEDULER_NAME")
        if env is None:
            return list(DEFAULT_SCHEDULER_NAMES)
        given = [env]
    return [name.strip() for value in given for name in value.split(",") if name.strip()]


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(
        rules=args.rules or split_paths(os.environ.get("POLICYEXT_RULES", "")),
        rules_configmap=args.rules_configmap or None,
        rules_crd=bool(args.rules_crd),
        replica_name=args.replica_name or "",
        replica_namespace=args.replica_namespace or "",
        bind=args.bind,
        snapshot=args.snapshot or None,
        kubeconfig=args.kubeconfig or None,
        in_cluster=bool(args.in_cluster),
        workers=whole_number(args.workers, "--workers"),
        threads=whole_number(args.threads, "--threads"),
        url_prefix=args.url_prefix,
        log_level=args.log_level,
        tls_cert=args.tls_cert or None,
        tls_key=args.tls_key or None,
        tls_client_ca=args.tls_client_ca or None,
        max_body=_optional_count(args.max_body, "--max-body"),
        max_buffered=_optional_count(args.max_buffered, "--max-buffered"),
        max_connections=whole_number(args.max_connections, "--max-connections"),
        ops_bind=args.ops_bind or None,
        introspection=_on_off(args.introspection, "--introspection"),
        tls_client_allow=_names(args.tls_client_allow, "POLICYEXT_TLS_CLIENT_ALLOW"),
        request_deadline=seconds(args.request_deadline, "--request-deadline"),
        read_timeout=seconds(args.read_timeout, "--read-timeout"),
        audit_events_per_second=number(args.audit_events_per_second, "--audit-events-per-second"),
        reports=bool(args.reports),
        reports_api=args.reports_api,
        reports_per_second=number(args.reports_per_second, "--reports-per-second"),
        bind_verb=bool(args.bind_verb),
        scheduler_names=_scheduler_names(args.scheduler_name),
        shutdown_delay=number(args.shutdown_delay, "--shutdown-delay"),
    )


def _optional_count(text: str | None, flag: str) -> int | None:
    return None if text is None or text == "" else whole_number(text, flag)


def _on_off(text: str, flag: str) -> bool:
    value = text.strip().lower()
    if value not in ("on", "off"):
        raise SettingsError(f"{flag} must be on or off, got {text!r}", usage=True)
    return value == "on"


def _names(given: list[str], env: str) -> list[str]:
    """Names from a repeatable, comma-separated flag, else from its environment variable."""
    values = given or [os.environ.get(env, "")]
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def run(args: argparse.Namespace) -> int:
    try:
        settings = _settings(args)
        issues = preflight(settings)
    except SettingsError as e:
        return fail(str(e), EXIT_USAGE if e.usage else EXIT_INVALID)
    if issues is not None:
        print_issues(issues)
        return EXIT_INVALID
    if settings.workers > 1:
        prepare_metrics_directory()  # before wsgi imports prometheus_client
    from policyext.wsgi import serve  # noqa: PLC0415 - flask and gunicorn only to serve

    serve(settings)
    return EXIT_OK


def prepare_metrics_directory() -> None:
    """Several workers share their metrics through files (prometheus_client's multiprocess
    mode). An operator's directory is emptied (old counts would add up); without one, a
    private directory is made and removed on exit."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        for stale in Path(directory).glob("*.db"):
            stale.unlink()
        return
    made = tempfile.mkdtemp(prefix="policyext-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = made
    atexit.register(shutil.rmtree, made, ignore_errors=True)
