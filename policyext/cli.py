"""The `policyext` command: validate, simulate and test policies (and, later, serve them).

Conventions as kubectl's: `-o table|json|yaml`, results on stdout, errors on stderr,
exit 0 on success, 1 when the input is invalid or a test fails, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from policyext.cel import CELError, Timestamp, parse_timestamp
from policyext.cluster.snapshot import SnapshotError, SnapshotSource, read_objects
from policyext.policy.compile import PolicySet, load_policy_set, load_policy_texts
from policyext.policy.engine import Evaluation, evaluate
from policyext.policy.explain import evaluation_to_dict
from policyext.policy.loader import load_yaml
from policyext.policy.model import PolicyError
from policyext.policy.resources import NodeSource
from policyext.policy.testing import find_tests, run_test
from policyext.policy.whatif import compare, is_pending, whatif_to_dict
from policyext.render import evaluation_table, test_report, whatif_table

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except BrokenPipeError:  # `policyext simulate ... | head`
        return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="policyext",
        description="A Kubernetes scheduler extender driven by declarative CEL policies.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    validate = commands.add_parser(
        "validate", help="check policy files; print every problem as file:line:col"
    )
    validate.add_argument("paths", nargs="+", metavar="PATH", help="policy files or folders")
    validate.set_defaults(run=cmd_validate)

    simulate = commands.add_parser(
        "simulate",
        help="rank nodes for a pod under the policies, with every reason shown; or compare "
        "two rule sets for every pending pod",
    )
    simulate.add_argument(
        "--rules",
        required=True,
        action="append",
        metavar="PATH",
        help="policy files or folders (with --pending: the candidate rules)",
    )
    pods = simulate.add_mutually_exclusive_group(required=True)
    pods.add_argument("--pod", metavar="FILE", help="a Pod (YAML or JSON)")
    pods.add_argument(
        "--pending",
        action="store_true",
        help="every pending pod, under --current and under --rules: what would change",
    )
    nodes = simulate.add_mutually_exclusive_group(required=True)
    nodes.add_argument("--snapshot", metavar="FILE", help="Nodes and Pods (kubectl get -o yaml)")
    nodes.add_argument("--nodes", metavar="FILE", help="Nodes only (no pod information)")
    nodes.add_argument(
        "--cluster", action="store_true", help="list the live Nodes and Pods once (kubeconfig)"
    )
    simulate.add_argument(
        "--kubeconfig", metavar="FILE", help="with --cluster (default: $KUBECONFIG, ~/.kube/config)"
    )
    simulate.add_argument("--context", metavar="NAME", help="a context of the kubeconfig")
    current = simulate.add_mutually_exclusive_group()
    current.add_argument(
        "--current", action="append", metavar="PATH", help="with --pending: the rules in use"
    )
    current.add_argument(
        "--current-configmap",
        metavar="NAMESPACE/NAME",
        help="with --pending --cluster: the rules in use, from the ConfigMap served",
    )
    simulate.add_argument(
        "--scheduler-name", metavar="NAME", help="with --pending: only this scheduler's pods"
    )
    simulate.add_argument("--now", metavar="TIME", help="the time as `now` (RFC 3339)")
    simulate.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    simulate.set_defaults(run=cmd_simulate)

    test = commands.add_parser("test", help="run PolicyTest files")
    test.add_argument("paths", nargs="+", metavar="PATH", help="test files or folders")
    test.set_defaults(run=cmd_test)

    serve = commands.add_parser(
        "serve",
        help="serve the extender (gunicorn); every flag is also an environment variable",
        description="Every flag can also be set as POLICYEXT_<FLAG>, e.g. POLICYEXT_RULES.",
    )
    _env_flag(
        serve,
        "--rules",
        "",
        metavar="PATH",
        help="policy files or folders (comma-separated), reloaded when they change",
    )
    _env_flag(
        serve,
        "--rules-configmap",
        None,
        metavar="NAMESPACE/NAME",
        help="policies from this ConfigMap, watched through the API (with --rules: both)",
    )
    _env_flag(serve, "--bind", "0.0.0.0:8888", metavar="HOST:PORT")
    _env_flag(serve, "--snapshot", None, metavar="FILE", help="Nodes and Pods to serve from")
    _env_flag(serve, "--kubeconfig", None, metavar="FILE", help="watch and bind in this cluster")
    serve.add_argument(
        "--in-cluster",
        action="store_true",
        default=os.environ.get("POLICYEXT_IN_CLUSTER", "").lower() in ("1", "true", "yes"),
        help="watch and bind in the cluster the extender runs in (its service account) "
        "[env POLICYEXT_IN_CLUSTER]",
    )
    _env_flag(serve, "--workers", "1", metavar="N")
    _env_flag(serve, "--threads", "4", metavar="N")
    _env_flag(serve, "--url-prefix", "", metavar="P", help="path prefix of the verbs")
    _env_flag(serve, "--log-level", "info", metavar="L", help="debug, info, warning, error")
    _env_flag(serve, "--tls-cert", None, metavar="FILE")
    _env_flag(serve, "--tls-key", None, metavar="FILE")
    _env_flag(serve, "--tls-client-ca", None, metavar="FILE", help="require client certificates")
    _env_flag(serve, "--max-body", str(64 * 1024 * 1024), metavar="BYTES")
    _env_flag(
        serve,
        "--request-deadline",
        "3",
        metavar="SECONDS",
        help="evaluation time per request; what is left then fails as its failurePolicy says",
    )
    serve.set_defaults(run=cmd_serve)

    config = commands.add_parser(
        "config", help="print the KubeSchedulerConfiguration extenders: block for this extender"
    )
    config.add_argument("--url", default="http://127.0.0.1:8888", help="where the extender is")
    config.add_argument("--url-prefix", default="", metavar="P")
    config.add_argument("--weight", type=int, default=1, help="multiplies our 0..10 scores")
    config.add_argument("--timeout", default="5s", help="httpTimeout")
    config.add_argument("--bind", action="store_true", help="let the extender bind pods")
    config.add_argument("--no-preempt", action="store_true", help="leave out preemptVerb")
    config.add_argument("--ignorable", action="store_true", help="schedule on if unreachable")
    config.add_argument("--ca-file", help="tlsConfig.caFile (https URLs)")
    config.add_argument("--cert-file", help="tlsConfig.certFile (client certificate, mTLS)")
    config.add_argument("--key-file", help="tlsConfig.keyFile")
    config.add_argument("--server-name", help="tlsConfig.serverName")
    config.add_argument(
        "--scheduler-name", help="print a whole KubeSchedulerConfiguration with this profile"
    )
    config.set_defaults(run=cmd_config)
    return parser


def _env_flag(
    parser: argparse.ArgumentParser, flag: str, default: str | None, **kwargs: Any
) -> None:
    env = "POLICYEXT_" + flag.lstrip("-").upper().replace("-", "_")
    value = os.environ.get(env, default)
    help_text = kwargs.pop("help", "")
    parser.add_argument(
        flag, default=value, help=f"{help_text} [env {env}, default {default!r}]".strip(), **kwargs
    )


def _positive(value: str, flag: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        print(f"error: {flag} must be a whole number of at least 1, got {value!r}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    return number


def _seconds(value: str, flag: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not 0 < number < float("inf"):
        print(f"error: {flag} must be a positive number of seconds, got {value!r}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    return number


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


def cmd_serve(args: argparse.Namespace) -> int:
    workers = _positive(args.workers, "--workers")
    if workers > 1:
        # before prometheus_client is imported: it chooses its storage at import time
        prepare_metrics_directory()
    from policyext.wsgi import Settings, serve  # noqa: PLC0415 - flask/gunicorn only to serve

    if bool(args.tls_cert) != bool(args.tls_key):
        return _fail("--tls-cert and --tls-key go together")
    if args.tls_client_ca and not args.tls_cert:
        return _fail("--tls-client-ca needs --tls-cert and --tls-key")
    if args.snapshot and (args.kubeconfig or args.in_cluster):
        print("error: --snapshot and --kubeconfig/--in-cluster exclude each other", file=sys.stderr)
        return EXIT_USAGE
    rules = [p for p in str(args.rules or "").split(",") if p]
    if not rules and not args.rules_configmap:
        print("error: give the policies with --rules and/or --rules-configmap", file=sys.stderr)
        return EXIT_USAGE
    if args.rules_configmap:
        from policyext.cluster.rules_configmap import (  # noqa: PLC0415 - kubernetes only to serve
            ConfigMapNameError,
            ConfigMapRef,
        )

        try:
            ConfigMapRef.parse(args.rules_configmap)
        except ConfigMapNameError as e:
            print(f"error: {e}", file=sys.stderr)
            return EXIT_USAGE
        if not (args.kubeconfig or args.in_cluster):
            print("error: --rules-configmap needs --kubeconfig or --in-cluster", file=sys.stderr)
            return EXIT_USAGE
    settings = Settings(
        rules=rules,
        rules_configmap=args.rules_configmap or None,
        bind=args.bind,
        snapshot=args.snapshot or None,
        kubeconfig=args.kubeconfig or None,
        in_cluster=bool(args.in_cluster),
        workers=workers,
        threads=_positive(args.threads, "--threads"),
        url_prefix=args.url_prefix,
        log_level=args.log_level,
        tls_cert=args.tls_cert or None,
        tls_key=args.tls_key or None,
        tls_client_ca=args.tls_client_ca or None,
        max_body=_positive(args.max_body, "--max-body"),
        request_deadline=_seconds(args.request_deadline, "--request-deadline"),
    )
    if not settings.rules_configmap:
        try:
            load_policy_set(settings.rules)  # refuse to start on invalid policies
        except PolicyError as e:  # (with a ConfigMap too, the union is judged once it is read)
            for issue in e.issues:
                print(issue, file=sys.stderr)
            return EXIT_INVALID
    if settings.snapshot:
        try:
            SnapshotSource.from_file(settings.snapshot)  # and on a snapshot it cannot read
        except SnapshotError as e:
            return _fail(str(e))
    if settings.kubeconfig or settings.in_cluster:
        from policyext.cluster.client import (  # noqa: PLC0415 - kubernetes only to serve
            ClientConfigError,
            ClusterSettings,
            load_configuration,
        )

        try:  # and on a connection it cannot configure
            load_configuration(ClusterSettings(settings.kubeconfig, settings.in_cluster))
        except ClientConfigError as e:
            return _fail(str(e))
    serve(settings)
    return EXIT_OK


def extender_config(args: argparse.Namespace) -> dict[str, Any]:
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


def cmd_config(args: argparse.Namespace) -> int:
    if args.weight < 1:
        return _fail("--weight must be at least 1 (kube-scheduler requires it with prioritize)")
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


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_INVALID


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        policy_set = load_policy_set(args.paths)
    except PolicyError as e:
        for issue in e.issues:
            print(issue, file=sys.stderr)
        count = len(e.issues)
        print(f"{count} problem{'s' if count != 1 else ''} found", file=sys.stderr)
        return EXIT_INVALID
    policies = len(policy_set.policies)
    print(
        f"valid: {policies} polic{'ies' if policies != 1 else 'y'}, "
        f"{_plural(policy_set.rule_count(), 'rule')}, version {policy_set.version}"
    )
    return EXIT_OK


def _load_source(args: argparse.Namespace) -> tuple[list[dict[str, Any]], NodeSource | None]:
    if args.snapshot or args.cluster:
        source = (
            _cluster_snapshot(args) if args.cluster else SnapshotSource.from_file(args.snapshot)
        )
        return list(source.nodes.values()), source
    objects = read_objects(Path(args.nodes))
    nodes = [o for o in objects if o.get("kind", "Node") == "Node"]
    return nodes, None


def _read_pod(path: str) -> dict[str, Any]:
    try:
        pod = load_yaml(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise SnapshotError(f"{path}: {e}") from None
    if not isinstance(pod, dict):
        raise SnapshotError(f"{path}: not a Pod object")
    return pod


def _cluster_api(args: argparse.Namespace) -> Any:
    """The API client of `--cluster` (kubernetes is imported only for it)."""
    from policyext.cluster.client import (  # noqa: PLC0415 - kubernetes only for --cluster
        ClientConfigError,
        ClusterSettings,
        api_client,
        default_kubeconfig,
    )

    settings = ClusterSettings(args.kubeconfig or default_kubeconfig(), context=args.context)
    try:
        return api_client(settings)
    except ClientConfigError as e:
        raise SnapshotError(str(e)) from None


def _cluster_snapshot(args: argparse.Namespace, api: Any = None) -> SnapshotSource:
    from policyext.cluster.listing import cluster_snapshot  # noqa: PLC0415 - as _cluster_api

    return cluster_snapshot(api if api is not None else _cluster_api(args))


def _simulate_usage(args: argparse.Namespace) -> str | None:
    """What is wrong with a combination of flags argparse cannot express, if anything."""
    if (args.kubeconfig or args.context) and not args.cluster:
        return "--kubeconfig and --context go with --cluster"
    if not args.pending:
        if args.current or args.current_configmap or args.scheduler_name:
            return "--current, --current-configmap and --scheduler-name go with --pending"
        return None
    if args.nodes:
        return "--pending needs the pods of the cluster: --cluster or --snapshot, not --nodes"
    if not (args.current or args.current_configmap):
        return (
            "--pending compares with the rules in use: "
            "give --current PATH or --current-configmap NAMESPACE/NAME"
        )
    if args.current_configmap and not args.cluster:
        return "--current-configmap reads the live cluster: it goes with --cluster"
    if args.current_configmap and args.current_configmap.count("/") != 1:
        return "--current-configmap is NAMESPACE/NAME"
    return None


def _load_rules(paths: Sequence[str]) -> PolicySet | None:
    """The policies under `paths`, or None after printing every problem."""
    try:
        return load_policy_set(paths)
    except PolicyError as e:
        for issue in e.issues:
            print(issue, file=sys.stderr)
        return None


def cmd_simulate(args: argparse.Namespace) -> int:
    usage = _simulate_usage(args)
    if usage is not None:
        print(f"error: {usage}", file=sys.stderr)
        return EXIT_USAGE
    policy_set = _load_rules(args.rules)
    if policy_set is None:
        return EXIT_INVALID
    if args.pending:
        return _simulate_pending(args, policy_set)
    try:
        pod = _read_pod(args.pod)
        now = parse_timestamp(args.now) if args.now else None
        nodes, source = _load_source(args)
    except (SnapshotError, CELError) as e:
        return _fail(str(e))
    evaluation = evaluate(policy_set, pod, nodes, source, now)
    _print_evaluation(evaluation, args.output, sys.stdout)
    return EXIT_OK


def _simulate_pending(args: argparse.Namespace, candidate: PolicySet) -> int:
    current = _load_rules(args.current) if args.current else None
    if args.current and current is None:
        return EXIT_INVALID
    try:
        now = parse_timestamp(args.now) if args.now else Timestamp(time.time_ns())
        if args.cluster:
            api = _cluster_api(args)
            if current is None:
                current = _configmap_rules(api, args.current_configmap)
                if current is None:
                    return EXIT_INVALID
            source = _cluster_snapshot(args, api)
        else:
            source = SnapshotSource.from_file(args.snapshot)
    except (SnapshotError, CELError) as e:
        return _fail(str(e))
    assert current is not None
    pending = [p for p in source.pods if is_pending(p, args.scheduler_name)]
    result = compare(current, candidate, pending, list(source.nodes.values()), source, now)
    if args.output == "json":
        json.dump(whatif_to_dict(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.output == "yaml":
        yaml.safe_dump(whatif_to_dict(result), sys.stdout, sort_keys=False)
    else:
        sys.stdout.write(whatif_table(result))
    return EXIT_OK


def _configmap_rules(api: Any, reference: str) -> PolicySet | None:
    """The rules a ConfigMap serves, or None after printing every problem."""
    from policyext.cluster.listing import configmap_rule_texts  # noqa: PLC0415 - as _cluster_api

    namespace, name = reference.split("/")
    texts = configmap_rule_texts(api, namespace, name)
    try:
        return load_policy_texts(texts)
    except PolicyError as e:
        for issue in e.issues:
            print(issue, file=sys.stderr)
        return None


def _print_evaluation(ev: Evaluation, output: str, out: TextIO) -> None:
    if output == "json":
        json.dump(evaluation_to_dict(ev), out, indent=2)
        out.write("\n")
    elif output == "yaml":
        yaml.safe_dump(evaluation_to_dict(ev), out, sort_keys=False)
    else:
        out.write(evaluation_table(ev))


def cmd_test(args: argparse.Namespace) -> int:
    tests, issues = find_tests(args.paths)
    for issue in issues:
        print(issue, file=sys.stderr)
    results = [run_test(doc, SnapshotSource.from_file) for doc in tests]
    report, passed, failed = test_report(results)
    sys.stdout.write(report)
    failed += len(issues)
    print(f"{passed} passed, {failed} failed")
    return EXIT_OK if failed == 0 and (tests or not issues) else EXIT_INVALID


if __name__ == "__main__":
    sys.exit(main())
