"""`policyext eval EXPR [--pod FILE] [--node NAME --snapshot FILE]`: one expression, as a rule
sees it: its value and type, or its error with the position (OPA's `eval` for one
expression).

The expression is checked in a rule's environment (`pod` and `node` typed from Kubernetes'
schemas, `nodeInfo`, `podRequests`, `now`; `variables` is empty) and evaluated with the
pod of `--pod` and, with `--node`, that node of the `--snapshot` and its information.
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from typing import Any, Final

from policyext import cel
from policyext.cli.flags import EXIT_INVALID, EXIT_OK, EXIT_USAGE, Commands, fail, usage
from policyext.cli.inputs import read_pods
from policyext.cluster.snapshot import SnapshotError, SnapshotSource
from policyext.policy import pod_requests, rule_variables


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "eval", help="evaluate one CEL expression over a pod (and a node): value and type"
    )
    parser.add_argument("expression", metavar="EXPR", help="a CEL expression, as in a rule")
    parser.add_argument(
        "--pod",
        metavar="FILE",
        help="the Pod, or a workload (YAML or JSON); needed when the expression reads `pod` "
        "or `podRequests`",
    )
    parser.add_argument(
        "--node",
        metavar="NAME",
        help="the node of --snapshot to evaluate on; needed when the expression reads `node` "
        "or `nodeInfo`",
    )
    parser.add_argument(
        "--snapshot", metavar="FILE", help="Nodes and Pods (for --node, and nodeInfo)"
    )
    parser.add_argument(
        "--now", metavar="TIMESTAMP", help="the time of the request (RFC 3339; default: now)"
    )
    parser.set_defaults(run=run)


# what binds each input of a rule's expression (`now` and `variables` are always bound)
BINDINGS: Final = {
    "pod": "--pod FILE",
    "podRequests": "--pod FILE (podRequests are the pod's requests)",
    "node": "--node NAME --snapshot FILE (a node of a snapshot: kubectl get nodes,pods -A -o yaml)",
    "nodeInfo": "--node NAME --snapshot FILE (nodeInfo is computed from the snapshot's pods)",
}
# eval's flags, each followed by its value
VALUE_FLAGS: Final = ("--pod", "--node", "--snapshot", "--now")
_FLAG = re.compile(r"--[a-z][a-z-]*(=.*)?", re.DOTALL)


def expression_apart(argv: list[str]) -> list[str]:
    """`policyext eval -nodeInfo.podCount ...`: argparse reads a word that starts with `-`
    as a flag, but an expression may start with a negation. The first such word of `eval`
    that is no flag of its (`-h`, `--NAME`, `--NAME=VALUE`) is moved behind `--`, where
    argparse reads it as the expression."""
    if argv[:1] != ["eval"]:
        return argv
    kept: list[str] = []
    expression: list[str] = []
    words = iter(argv[1:])
    for word in words:
        if word == "--":
            kept += [word, *words]
        elif word in VALUE_FLAGS:
            value = next(words, None)  # its value, whatever it starts with
            kept += [word] if value is None else [word, value]
        elif not expression and word.startswith("-") and word != "-h" and not _FLAG.fullmatch(word):
            expression = ["--", word]
        else:
            kept.append(word)
    return ["eval", *kept, *expression]


def run(args: argparse.Namespace) -> int:
    if args.node and not args.snapshot:
        return usage("--node needs --snapshot (the file that holds the node)")
    try:
        program = cel.compile(args.expression, rule_variables({}, ()))
    except cel.CELError as e:
        return _error(args.expression, e)
    given = {"pod": args.pod, "podRequests": args.pod, "node": args.node, "nodeInfo": args.node}
    unbound = [name for name in BINDINGS if name in program.references and not given[name]]
    for name in unbound:
        usage(f"the expression reads '{name}', which is not bound: bind it with {BINDINGS[name]}")
    if unbound:
        return EXIT_USAGE
    try:
        activation = _activation(args)
    except (SnapshotError, cel.CELError) as e:
        return fail(str(e))
    except LookupError as e:
        return fail(str(e.args[0]))
    try:
        value = program.evaluate(activation)
    except cel.CELError as e:
        return _error(args.expression, e)
    print(literal(value))
    static = str(program.type)
    print(f"type: {static if static != 'dyn' else cel.type_name(value)}")
    return EXIT_OK


def _activation(args: argparse.Namespace) -> dict[str, Any]:
    now = (
        cel.parse_timestamp(args.now)
        if args.now
        else cel.Timestamp.from_datetime(datetime.datetime.now(datetime.UTC))
    )
    activation: dict[str, Any] = {"now": now, "variables": {}}
    if args.pod:
        pods = read_pods(args.pod)
        if len(pods) != 1:
            raise SnapshotError(f"{args.pod}: holds {len(pods)} pods; eval takes one")
        activation["pod"] = pods[0].pod
        activation["podRequests"] = pod_requests(pods[0].pod)
    if args.node:
        source = SnapshotSource.from_file(args.snapshot)
        node = source.get_node(args.node)
        if node is None:
            raise LookupError(f"no node {args.node!r} in {args.snapshot}")
        activation["node"] = node
        activation["nodeInfo"] = source.node_info(node)
    return activation


def _error(expression: str, error: cel.CELError) -> int:
    """Each problem, and where the expression has a position, the line with a caret under
    it."""
    kind = {
        cel.CELSyntaxError: "syntax error",
        cel.CELCheckError: "check error",
    }.get(type(error), "evaluation error")
    for problem in error.issues:
        fail(f"{kind}: {problem.located()}")
        if problem.line is not None and problem.column is not None:
            line = expression.splitlines()[problem.line - 1] if expression else ""
            print(f"  {line}", file=sys.stderr)
            print(f"  {' ' * (problem.column - 1)}^", file=sys.stderr)
    return EXIT_INVALID


def literal(value: object) -> str:
    """A value written as the CEL literal (or call) that makes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, cel.UInt):
        return f"{int(value)}u"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, bytes):
        return "b" + _quote(value.decode("utf-8", errors="backslashreplace"))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, cel.Optional):
        return f"optional.of({literal(value.value)})" if value.has_value() else "optional.none()"
    if isinstance(value, cel.Timestamp):
        return f"timestamp({_quote(cel.format_timestamp(value))})"
    if isinstance(value, cel.Duration | cel.CELType):
        return repr(value)
    if isinstance(value, cel.Quantity):
        return f"quantity({_quote(str(value))})"
    return repr(value)


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return f"'{escaped}'"
