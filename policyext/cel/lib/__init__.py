"""The function libraries of the CEL environment, with Kubernetes' names and semantics."""

from __future__ import annotations

from typing import Final

from policyext.cel.functions import Library
from policyext.cel.lib.encoders import ENCODERS_LIBRARY
from policyext.cel.lib.format import FORMAT_LIBRARY
from policyext.cel.lib.lists import LISTS_LIBRARY
from policyext.cel.lib.math import MATH_LIBRARY
from policyext.cel.lib.named_formats import NAMED_FORMAT_LIBRARY
from policyext.cel.lib.net import NET_LIBRARY
from policyext.cel.lib.quantity import QUANTITY_LIBRARY
from policyext.cel.lib.regex import REGEX_LIBRARY
from policyext.cel.lib.semver import SEMVER_LIBRARY
from policyext.cel.lib.sets import SETS_LIBRARY
from policyext.cel.lib.strings import STRINGS_LIBRARY
from policyext.cel.lib.url import URL_LIBRARY
from policyext.cel.stdlib import STANDARD_LIBRARY

# what Kubernetes' CEL environment declares: the environment of every policy expression
KUBERNETES_LIBRARIES: Final[tuple[Library, ...]] = (
    STANDARD_LIBRARY,
    STRINGS_LIBRARY,
    FORMAT_LIBRARY,
    LISTS_LIBRARY,
    SETS_LIBRARY,
    REGEX_LIBRARY,
    QUANTITY_LIBRARY,
    SEMVER_LIBRARY,
    NET_LIBRARY,
    URL_LIBRARY,
    NAMED_FORMAT_LIBRARY,
)

# cel-go's ext.Math and ext.Encoders, which Kubernetes does not declare: only for running
# cel-spec's conformance tests (with `cel.bind`, see `compile(..., extensions=True)`)
CEL_GO_EXTENSIONS: Final[tuple[Library, ...]] = (MATH_LIBRARY, ENCODERS_LIBRARY)
