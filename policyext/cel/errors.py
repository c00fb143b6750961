"""The errors of the CEL engine.

Every failure leaves the engine as a `CELError`: a syntax error while parsing, a check error
while compiling (unknown names, wrong result type, limits), or an evaluation error at run
time. Each carries a message and, where known, the 1-based line and column in the source.

Checking goes on past a problem, as cel-go's checker does: an expression with several
problems raises one error, the first found, whose `issues` are every problem found (each
with its own position), so a user fixes them all in one run.
"""

from __future__ import annotations


class CELError(Exception):
    """Base class of every error the CEL engine raises."""

    # the other problems found with this one (`with_issues`; a class default: nothing to
    # set on each evaluation error). Not this one itself: an error holding itself would be
    # a cycle, and keep what its traceback holds (a request's pod) until a collection.
    _others: tuple[CELError, ...] = ()

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    @property
    def issues(self) -> tuple[CELError, ...]:
        """Every problem of the expression, this one first."""
        return (self, *self._others)

    def with_issues(self, others: list[CELError]) -> CELError:
        """This error, telling of the other problems found with it too."""
        self._others = tuple(others)
        return self

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        return f"{self.line}:{self.column}: {self.message}"

    def located(self) -> str:
        """The message with its position, `line:column: message` (this problem's alone:
        the others are in `issues`)."""
        return CELError.__str__(self)


class CELSyntaxError(CELError):
    """The source is not a CEL expression."""


class CELCheckError(CELError):
    """The expression parses but cannot be compiled: unknown names, types, limits."""


class CELEvalError(CELError):
    """Evaluation failed: no such key, no such overload, overflow, cost budget exceeded..."""


class CostLimitExceeded(CELEvalError):
    """The evaluation used more than its cost budget."""
