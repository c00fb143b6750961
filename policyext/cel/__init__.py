"""CEL for scheduling policies: parse, check and compile expressions to Python closures.

    program = compile("node.metadata.labels.?zone.orValue('') == 'a'", {"node": "map"})
    program.evaluate({"node": node})  # -> True / False

See docs/cel.md for the language, the libraries and the limits.
"""

from policyext.cel.compiler import Limits
from policyext.cel.errors import (
    CELCheckError,
    CELError,
    CELEvalError,
    CELSyntaxError,
    CostLimitExceeded,
)
from policyext.cel.program import Program, compile, compile_tree
from policyext.cel.values import CELType, Duration, Optional, Timestamp, UInt

__all__ = [
    "CELCheckError",
    "CELError",
    "CELEvalError",
    "CELSyntaxError",
    "CELType",
    "CostLimitExceeded",
    "Duration",
    "Limits",
    "Optional",
    "Program",
    "Timestamp",
    "UInt",
    "compile",
    "compile_tree",
]
