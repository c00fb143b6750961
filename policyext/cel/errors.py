"""The errors of the CEL engine.

Every failure leaves the engine as a `CELError`: a syntax error while parsing, a check error
while compiling (unknown names, wrong result type, limits), or an evaluation error at run
time. Each carries a message and, where known, the 1-based line and column in the source.
"""

from __future__ import annotations


class CELError(Exception):
    """Base class of every error the CEL engine raises."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        return f"{self.line}:{self.column}: {self.message}"


class CELSyntaxError(CELError):
    """The source is not a CEL expression."""


class CELCheckError(CELError):
    """The expression parses but cannot be compiled: unknown names, types, limits."""


class CELEvalError(CELError):
    """Evaluation failed: no such key, no such overload, overflow, cost budget exceeded..."""


class CostLimitExceeded(CELEvalError):
    """The evaluation used more than its cost budget."""
