"""The `policyext` command line: one parser, one subcommand per module.

A command is a module with `register(commands)`, which adds its parser and sets `run`
(a function of the parsed arguments returning the exit status); listing it in COMMANDS
makes it part of `policyext`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from policyext.cli import config, serve, simulate, test, validate
from policyext.cli.flags import EXIT_OK, EXIT_USAGE

COMMANDS = (validate, simulate, test, serve, config)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="policyext",
        description="A Kubernetes scheduler extender driven by declarative CEL policies.",
    )
    commands = top.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    top = parser()
    args = top.parse_args(argv)
    if not getattr(args, "command", None):
        top.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except BrokenPipeError:  # `policyext simulate ... | head`
        return EXIT_OK
