"""The `policyext` command line: one parser, one subcommand per module.

A command is a module with `register(commands)`, which adds its parser and sets `run`
(a function of the parsed arguments returning the exit status); listing it in COMMANDS
makes it part of `policyext`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata

from policyext.cli import config, evaluate, explain, serve, simulate, test, validate, webhook
from policyext.cli.flags import EXIT_OK, EXIT_USAGE, gather_stray_paths

COMMANDS = (validate, simulate, explain, test, serve, webhook, config, evaluate)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="policyext",
        description="A Kubernetes scheduler extender driven by declarative CEL policies.",
    )
    top.add_argument("--version", action="version", version=f"policyext {version()}")
    commands = top.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    return top


def version() -> str:
    """The installed package's version (setup.cfg's)."""
    try:
        return metadata.version("policyext")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    top = parser()
    words = evaluate.expression_apart(list(sys.argv[1:] if argv is None else argv))
    args, extra = top.parse_known_args(words)
    unplaced = gather_stray_paths(args, extra)
    if unplaced is not None:
        top.error(f"unrecognized arguments: {unplaced}")
    if not getattr(args, "command", None):
        top.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except BrokenPipeError:  # `policyext simulate ... | head`
        return EXIT_OK
