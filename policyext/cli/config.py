"""`policyext config`: the KubeSchedulerConfiguration that calls this extender, to paste
(its `extenders:` block) or, with `--scheduler-name`, to run a second scheduler as is."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any
from urllib.parse import SplitResult, urlsplit

import yaml

from policyext.cli.flags import EXIT_INVALID, EXIT_OK, Commands, fail


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "config",
        help="print the KubeSchedulerConfiguration extenders: block for this extender "
        "(with --scheduler-name: a whole configuration for a second scheduler)",
    )
    parser.add_argument(
        "--url", default="http://127.0.0.1:8888", help="where the extender is (http or https)"
    )
    parser.add_argument(
        "--url-prefix",
        default="",
        metavar="PATH",
        help="the path prefix of the verbs, as given to policyext serve --url-prefix "
        "(e.g. /scheduler); appended to --url, which holds the scheme and host",
    )
    parser.add_argument("--weight", type=int, default=1, help="multiplies our 0..10 scores")
    parser.add_argument(
        "--timeout", default="5s", metavar="DURATION", help="httpTimeout: 5s, 1500ms, 1m30s"
    )
    parser.add_argument(
        "--bind",
        action="store_true",
        help="let the extender bind pods (bindVerb); the extender must then run with "
        "`policyext serve --bind-verb --scheduler-name NAME`",
    )
    parser.add_argument("--no-preempt", action="store_true", help="leave out preemptVerb")
    parser.add_argument("--ignorable", action="store_true", help="schedule on if unreachable")
    parser.add_argument("--ca-file", help="tlsConfig.caFile (https URLs only)")
    parser.add_argument("--cert-file", help="tlsConfig.certFile (client certificate, mTLS)")
    parser.add_argument("--key-file", help="tlsConfig.keyFile (with --cert-file)")
    parser.add_argument("--server-name", help="tlsConfig.serverName")
    parser.add_argument(
        "--scheduler-name",
        help="print a whole KubeSchedulerConfiguration: one profile of this name, leader "
        "election off",
    )
    parser.set_defaults(run=run)


# a Go duration as time.ParseDuration reads it, with a unit on every number ("0" alone,
# which Go also takes, means no timeout at all to kube-scheduler's reader: refused too)
GO_DURATION = re.compile(r"^(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+$")
TLS_FLAGS = ("--ca-file", "--cert-file", "--key-file", "--server-name")


def problems(args: argparse.Namespace) -> list[str]:
    """Every flag kube-scheduler would refuse, or read otherwise than meant."""
    found: list[str] = []
    if args.weight < 1:
        found.append("--weight must be at least 1 (kube-scheduler requires it with prioritize)")
    if not GO_DURATION.match(args.timeout) or not _positive_duration(args.timeout):
        found.append(
            f"--timeout must be a positive duration with its unit, as 5s, 1500ms or 1m30s; "
            f"got {args.timeout!r}"
        )
    url = urlsplit(args.url)
    if url.scheme not in ("http", "https") or not url.hostname:
        found.append(f"--url must be an http:// or https:// URL with a host; got {args.url!r}")
    elif not _port_valid(url) or any(c.isspace() for c in args.url):
        found.append(
            f"--url must have a host without spaces and, if any, a port from 1 to 65535; "
            f"got {args.url!r}"
        )
    elif url.query or url.fragment:
        found.append(f"--url takes no query or fragment (the verbs follow it); got {args.url!r}")
    elif url.scheme == "http":
        given = [flag for flag in TLS_FLAGS if getattr(args, flag[2:].replace("-", "_"))]
        if given:
            found.append(
                f"{', '.join(given)} configure{'' if len(given) > 1 else 's'} TLS, but --url is "
                "http://: use an https:// URL"
            )
    prefix = urlsplit(args.url_prefix)
    if prefix.scheme or prefix.netloc:
        # `--url-prefix http://host:1/x` would be appended to --url's default address
        found.append(
            f"--url-prefix is a path appended to --url (e.g. /scheduler), not an address: "
            f"give the scheme and host with --url; got {args.url_prefix!r}"
        )
    elif prefix.query or prefix.fragment:
        found.append(
            f"--url-prefix takes no query or fragment (the verbs follow it); "
            f"got {args.url_prefix!r}"
        )
    if bool(args.cert_file) != bool(args.key_file):
        found.append("--cert-file and --key-file go together")
    if args.scheduler_name is not None and not args.scheduler_name.strip():
        found.append("--scheduler-name needs a name (the profile's schedulerName)")
    return found


def _port_valid(url: SplitResult) -> bool:
    """No port, or a whole number kube-scheduler can connect to."""
    try:
        port = url.port
    except ValueError:  # not a number, or past 65535
        return False
    return port is None or port > 0


def _positive_duration(text: str) -> bool:
    return any(digit in "123456789" for digit in text)


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
    found = problems(args)
    if found:
        for problem in found:
            fail(problem)
        return EXIT_INVALID
    block: dict[str, Any] = {"extenders": [extender_config(args)]}
    if args.scheduler_name:
        block = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            # v1 turns leader election on by default, for the Lease kube-system/kube-scheduler
            # that the cluster's own scheduler holds: a second scheduler would wait for ever.
            # No clientConnection: in a pod, kube-scheduler uses its service account.
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": args.scheduler_name}],
            **block,
        }
    if args.bind:
        # a comment, so that the output stays a configuration to paste
        print(bind_note(args.scheduler_name or "default-scheduler"), file=sys.stdout)
    yaml.safe_dump(block, sys.stdout, sort_keys=False)
    return EXIT_OK


def bind_note(scheduler_name: str) -> str:
    """What the extender needs to bind what this configuration asks it to."""
    return (
        "# bindVerb: run the extender with\n"
        f"#   policyext serve --bind-verb --scheduler-name {scheduler_name}\n"
        "# without --bind-verb its /bind binds nothing, and it binds only the pods whose\n"
        "# schedulerName --scheduler-name names (the profile's name above, or yours)"
    )
