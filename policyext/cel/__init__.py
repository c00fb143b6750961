"""CEL for scheduling policies: parse, check and compile expressions to Python closures.

    program = compile("node.metadata.labels.?zone.orValue('') == 'a'", {"node": "map"})
    program.evaluate({"node": node})  # -> True / False

This module is the engine's whole public face: callers import from here, never from its
modules (an import-linter contract keeps them to it). See docs/cel.md for the language, the
libraries and the limits.
"""

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
from policyext.cel.k8stypes import root as kubernetes_type
from policyext.cel.lib.quantity import Quantity
from policyext.cel.limits import Limits
from policyext.cel.parser import parse
from policyext.cel.partial import Split, placeholder, reads, split
from policyext.cel.program import DEFAULT_LIMITS, Program, compile, compile_tree, new_frame
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
    "QUANTITY",
    "STRING",
    "TIMESTAMP",
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
    "Quantity",
    "Split",
    "Timestamp",
    "Type",
    "UInt",
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
    "reads",
    "split",
    "type_name",
]
