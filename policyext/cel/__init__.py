"""CEL for scheduling policies: parse, check and compile expressions to Python closures.

    program = compile("node.metadata.labels.?zone.orValue('') == 'a'", {"node": "map"})
    program.evaluate({"node": node})  # -> True / False

`compile` is `check_expression` then `plan`; a caller that evaluates parts of an expression
apart checks it once and plans the parts from that (`split_checked`, `plan(checked, node)`).

This module is the engine's whole public face: callers import from here, never from its
modules (an import-linter contract keeps them to it). See docs/cel.md for the language, the
libraries and the limits.
"""

from policyext.cel import ast
from policyext.cel.celtypes import (
    BOOL,
    DOUBLE,
    DYN,
    INT,
    QUANTITY,
    STRING,
    TIMESTAMP,
    Type,
    object_type,
)
from policyext.cel.celtypes import (
    list_of as list_type,
)
from policyext.cel.celtypes import (
    map_of as map_type,
)
from policyext.cel.code import COST
from policyext.cel.errors import (
    CELCheckError,
    CELError,
    CELEvalError,
    CELSyntaxError,
    CostLimitExceeded,
)
from policyext.cel.guards import UnguardedRead, unguarded_reads
from policyext.cel.k8stypes import root as kubernetes_type
from policyext.cel.lib.quantity import Quantity
from policyext.cel.limits import Limits
from policyext.cel.parser import parse
from policyext.cel.partial import LOCAL, Split, placeholder, reads, split
from policyext.cel.program import (
    DEFAULT_LIMITS,
    CheckedExpression,
    CheckedSplit,
    Program,
    check_expression,
    compile,
    compile_tree,
    new_frame,
    plan,
    split_checked,
)
from policyext.cel.timeutil import parse_timestamp
from policyext.cel.values import (
    INT64_MAX,
    CELType,
    Duration,
    Optional,
    Timestamp,
    UInt,
    format_timestamp,
    type_name,
)

__all__ = [
    "BOOL",
    "COST",
    "DEFAULT_LIMITS",
    "DOUBLE",
    "DYN",
    "INT",
    "INT64_MAX",
    "LOCAL",
    "QUANTITY",
    "STRING",
    "TIMESTAMP",
    "CELCheckError",
    "CELError",
    "CELEvalError",
    "CELSyntaxError",
    "CELType",
    "CheckedExpression",
    "CheckedSplit",
    "CostLimitExceeded",
    "Duration",
    "Limits",
    "Optional",
    "Program",
    "Quantity",
    "Split",
    "Timestamp",
    "Type",
    "UInt",
    "UnguardedRead",
    "ast",
    "check_expression",
    "compile",
    "compile_tree",
    "format_timestamp",
    "kubernetes_type",
    "list_type",
    "map_type",
    "new_frame",
    "object_type",
    "parse",
    "parse_timestamp",
    "placeholder",
    "plan",
    "reads",
    "split",
    "split_checked",
    "type_name",
    "unguarded_reads",
]
