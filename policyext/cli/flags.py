"""What every command shares: exit statuses, the error line, and flags written once.

Conventions as kubectl's: results on stdout, errors on stderr; exit 0 on success, 1 when
the input is invalid or a test fails, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, TypeAlias

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2


def fail(message: str, status: int = EXIT_INVALID) -> int:
    """Print one error line and return the exit status to end with."""
    print(f"error: {message}", file=sys.stderr)
    return status


def usage(message: str) -> int:
    return fail(message, EXIT_USAGE)


def add_output(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    """`-o FORMAT`; the first format is the default."""
    parser.add_argument(
        "-o", "--output", choices=formats, default=formats[0], help="how to print the result"
    )


# what `add_subparsers` returns: each command module's `register` adds its parser to it
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_kubeconfig(parser: argparse.ArgumentParser) -> None:
    """The connection flags of a command that can read the live cluster (`--cluster`)."""
    parser.add_argument(
        "--kubeconfig", metavar="FILE", help="with --cluster (default: $KUBECONFIG, ~/.kube/config)"
    )
    parser.add_argument("--context", metavar="NAME", help="a context of the kubeconfig")


def split_paths(text: str) -> list[str]:
    """`a.yaml,rules/` -> ["a.yaml", "rules/"] (empty parts dropped)."""
    return [part for part in text.split(",") if part]


class _Paths(argparse.Action):
    """Adds each value, split at commas, to the list in `dest`, so that the positional
    paths and every `--rules` end up in one list, in the order given."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        given = list(getattr(namespace, self.dest, None) or [])
        for value in [values] if isinstance(values, str) else values or []:
            given.extend(split_paths(str(value)))
        setattr(namespace, self.dest, given)


def add_paths(
    parser: argparse.ArgumentParser, flag: str | None, *, help: str, dest: str = "paths"
) -> None:
    """Files or folders, given the same way in every command: positional, as a repeated
    flag (`--rules a --rules b`), comma-separated (`--rules a,b`), or any mix of these.
    Positional paths after a flag are gathered by `main` (see `gather_stray_paths`)."""
    parser.add_argument(dest, nargs="*", action=_Paths, metavar="PATH", help=help)
    if flag is not None:
        parser.add_argument(
            flag,
            dest=dest,
            action=_Paths,
            metavar="PATH",
            help="the same as a flag: repeat it or separate paths with commas",
        )
    parser.set_defaults(**{dest: [], "paths_dest": dest})


def gather_stray_paths(args: argparse.Namespace, extra: Sequence[str]) -> str | None:
    """argparse takes a command's positional paths only before its first flag: those that
    come later (`--pod p.yaml rules/ more/`) are left over, and belong to the same list.
    Returns what cannot be placed, if anything."""
    dest = getattr(args, "paths_dest", None)
    if dest is None or any(e.startswith("-") for e in extra):
        return " ".join(extra) or None
    for value in extra:
        getattr(args, dest).extend(split_paths(value))
    return None
