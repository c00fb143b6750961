"""`policyext webhook`: the validating admission webhook of SchedulingPolicy objects
(server/admission.py), a process of its own beside `serve`. Every flag is also an
environment variable (`--tls-cert` is `POLICYEXT_WEBHOOK_TLS_CERT`)."""

from __future__ import annotations

import argparse
import os

from policyext.cli.flags import EXIT_OK, EXIT_USAGE, Commands, add_paths, fail, split_paths
from policyext.settings import DEFAULT_WEBHOOK_BIND, SettingsError, WebhookSettings


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "webhook",
        help="serve the validating admission webhook of SchedulingPolicy objects (TLS)",
        description="kubectl apply of a SchedulingPolicy that `policyext validate` refuses "
        "fails with the same problems, by field path; warnings come back as admission "
        "warnings. Every flag can also be set as POLICYEXT_WEBHOOK_<FLAG>.",
    )
    _env(parser, "--bind", DEFAULT_WEBHOOK_BIND, metavar="HOST:PORT")
    _env(parser, "--tls-cert", None, metavar="FILE", help="the webhook's serving certificate")
    _env(parser, "--tls-key", None, metavar="FILE")
    add_paths(
        parser,
        "--rules",
        dest="rules",
        help="the extender's policy folders: an object whose name one of their policies "
        "holds is refused, as the extender would refuse it [env POLICYEXT_WEBHOOK_RULES]",
    )
    _env(
        parser,
        "--rules-configmap",
        None,
        metavar="NAMESPACE/NAME",
        help="the extender's policy ConfigMap, read at each review: an object whose name "
        "one of its policies holds is refused",
    )
    _env(parser, "--kubeconfig", None, metavar="FILE", help="to read --rules-configmap")
    parser.add_argument(
        "--in-cluster",
        action="store_true",
        default=os.environ.get("POLICYEXT_WEBHOOK_IN_CLUSTER", "").lower() in ("1", "true"),
        help="read --rules-configmap with the pod's service account "
        "[env POLICYEXT_WEBHOOK_IN_CLUSTER]",
    )
    _env(parser, "--log-level", "info", metavar="L", help="debug, info, warning, error")
    parser.set_defaults(run=run)


def _env(parser: argparse.ArgumentParser, flag: str, default: str | None, **kwargs: str) -> None:
    env = "POLICYEXT_WEBHOOK_" + flag.lstrip("-").upper().replace("-", "_")
    help_text = kwargs.pop("help", "")
    parser.add_argument(
        flag,
        default=os.environ.get(env, default),
        help=f"{help_text} [env {env}, default {default!r}]".strip(),
        **kwargs,  # type: ignore[arg-type]
    )


def run(args: argparse.Namespace) -> int:
    try:
        settings = WebhookSettings(
            tls_cert=args.tls_cert or "",
            tls_key=args.tls_key or "",
            bind=args.bind,
            rules=args.rules or split_paths(os.environ.get("POLICYEXT_WEBHOOK_RULES", "")),
            rules_configmap=args.rules_configmap or None,
            kubeconfig=args.kubeconfig or None,
            in_cluster=bool(args.in_cluster),
            log_level=args.log_level,
        )
    except SettingsError as e:
        return fail(str(e), EXIT_USAGE)
    from policyext.wsgi import serve_webhook  # noqa: PLC0415 - flask and gunicorn only to serve

    serve_webhook(settings)
    return EXIT_OK
