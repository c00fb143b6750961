"""`policyext config`: the KubeSchedulerConfiguration that calls this extender, to paste
(its `extenders:` block) or, with `--scheduler-name`, to run a second scheduler as is."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

from policyext.cli.flags import EXIT_OK, Commands, fail


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "config", help="print the KubeSchedulerConfiguration extenders: block for this extender"
    )
    parser.add_argument("--url", default="http://127.0.0.1:8888", help="where the extender is")
    parser.add_argument("--url-prefix", default="", metavar="P")
    parser.add_argument("--weight", type=int, default=1, help="multiplies our 0..10 scores")
    parser.add_argument("--timeout", default="5s", help="httpTimeout")
    parser.add_argument("--bind", action="store_true", help="let the extender bind pods")
    parser.add_argument("--no-preempt", action="store_true", help="leave out preemptVerb")
    parser.add_argument("--ignorable", action="store_true", help="schedule on if unreachable")
    parser.add_argument("--ca-file", help="tlsConfig.caFile (https URLs)")
    parser.add_argument("--cert-file", help="tlsConfig.certFile (client certificate, mTLS)")
    parser.add_argument("--key-file", help="tlsConfig.keyFile")
    parser.add_argument("--server-name", help="tlsConfig.serverName")
    parser.add_argument(
        "--scheduler-name", help="print a whole KubeSchedulerConfiguration with this profile"
    )
    parser.set_defaults(run=run)


def extender_config(args: argparse.Namespace) -> dict[str, Any]:
    """One entry of `extenders:` (the chart's templates build the same; its tests compare)."""
    url = args.url.rstrip("/") + ("/" + args.url_prefix.strip("/") if args.url_prefix else "")
    extender: dict[str, Any] = {
        "urlPrefix": url,
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
    }
    if not args.no_preempt:
        extender["preemptVerb"] = "preempt"
    if args.bind:
        extender["bindVerb"] = "bind"
    extender.update(
        {
            "weight": args.weight,
            "nodeCacheCapable": True,
            "enableHTTPS": url.startswith("https://"),
            "httpTimeout": args.timeout,
            "ignorable": bool(args.ignorable),
        }
    )
    tls = {
        key: value
        for key, value in (
            ("caFile", args.ca_file),
            ("certFile", args.cert_file),
            ("keyFile", args.key_file),
            ("serverName", args.server_name),
        )
        if value
    }
    if tls:
        extender["tlsConfig"] = tls
    return extender


def run(args: argparse.Namespace) -> int:
    if args.weight < 1:
        return fail("--weight must be at least 1 (kube-scheduler requires it with prioritize)")
    block: dict[str, Any] = {"extenders": [extender_config(args)]}
    if args.scheduler_name:
        block = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": args.scheduler_name}],
            **block,
        }
    yaml.safe_dump(block, sys.stdout, sort_keys=False)
    return EXIT_OK
