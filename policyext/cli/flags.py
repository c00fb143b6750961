"""What every command shares: exit statuses, the error line, and flags written once.

Conventions as kubectl's: results on stdout, errors on stderr; exit 0 on success, 1 when
the input is invalid or a test fails, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
from typing import TypeAlias

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
