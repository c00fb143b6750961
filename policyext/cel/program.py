"""The public face of the engine: `compile(source) -> Program`, `Program.evaluate`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Final

from policyext.cel import ast
from policyext.cel.celtypes import Type
from policyext.cel.checker import Checker
from policyext.cel.code import COST
from policyext.cel.errors import CELCheckError, CELError, CELEvalError
from policyext.cel.functions import FunctionTable, Library, merge_libraries
from policyext.cel.lib import CEL_GO_EXTENSIONS, KUBERNETES_LIBRARIES
from policyext.cel.limits import Limits
from policyext.cel.parser import parse
from policyext.cel.planner import Planner

DEFAULT_LIMITS: Final = Limits()

__all__ = ["COST", "DEFAULT_LIMITS", "Program", "compile", "compile_tree", "new_frame"]


class Program:
    """A compiled CEL expression. Immutable and safe to share between threads."""

    __slots__ = (
        "_fn",
        "_frame",
        "limits",
        "opaque_references",
        "paths",
        "references",
        "result_type",
        "selections",
        "source",
        "type",
    )

    def __init__(
        self,
        source: str,
        compiler: Planner,
        fn: object,
        type_: Type,
    ) -> None:
        self.source = source
        # the static type of the result (`list(string)`, `bool`, `dyn`...) and its kind
        self.type = type_
        self.result_type = type_.kind
        self.limits = compiler.limits
        # the root variables the expression reads, and the (variable, field) pairs it selects
        self.references: frozenset[str] = frozenset(compiler.references)
        self.selections: frozenset[tuple[str, str]] = frozenset(compiler.selections)
        # the variables read other than through constant fields (`v[k]`, `has(v.f)`, `v`)
        self.opaque_references: frozenset[str] = frozenset(compiler.opaque)
        # the constant paths it reads from its variables, e.g. ("node", "status", "conditions")
        self.paths: frozenset[tuple[str, ...]] = frozenset(compiler.paths)
        self._fn = fn
        self._frame = compiler.uses_frame

    def evaluate(self, activation: Mapping[str, object], budget: int | None = None) -> object:
        """Evaluate with the given variables. Returns plain Python values for the JSON
        types; raises CELEvalError (CostLimitExceeded past the cost budget)."""
        if self._frame or type(activation) is not dict:
            frame = dict(activation)
            frame[COST] = [0, self.limits.cost_budget if budget is None else budget]  # type: ignore[index]
        else:
            frame = activation
        try:
            return self._fn(frame)  # type: ignore[operator]
        except CELError:
            raise
        except RecursionError:
            raise CELEvalError("value too deeply nested to evaluate") from None
        except Exception as e:  # a Python error inside a function is an evaluation error
            raise CELEvalError(f"evaluation failed: {e}") from None

    def run(self, frame: dict[object, object]) -> object:
        """Evaluate in a frame made by `new_frame`, without copying it: for callers that
        evaluate many programs over the same variables (the policy engine). The caller
        resets the cost meter (`frame[COST][0] = 0`) between evaluations if it wants."""
        try:
            return self._fn(frame)  # type: ignore[operator]
        except CELError:
            raise
        except RecursionError:
            raise CELEvalError("value too deeply nested to evaluate") from None
        except Exception as e:
            raise CELEvalError(f"evaluation failed: {e}") from None

    def __repr__(self) -> str:
        return f"Program({self.source!r})"


def new_frame(activation: Mapping[str, object], budget: int) -> dict[object, object]:
    """A frame for `Program.run`: the variables and a cost meter."""
    frame: dict[object, object] = {}
    frame.update(activation)
    frame[COST] = [0, budget]
    return frame


@lru_cache(maxsize=8)
def _table(libraries: tuple[Library, ...]) -> FunctionTable:
    return merge_libraries(libraries)


def compile(
    source: str,
    variables: Mapping[str, str | Type] | None = None,
    *,
    limits: Limits | None = None,
    check: bool = True,
    libraries: Sequence[Library] | None = None,
    homogeneous: bool = True,
    extensions: bool = False,
) -> Program:
    """Parse, check and compile a CEL expression.

    `variables` declares the names the expression may use, each with its type: a `Type` or
    a type name (`"dyn"` when unknown). With `check=False` (cel-spec's disable_check)
    undeclared names are not compile errors but evaluation errors. The environment is
    Kubernetes': `extensions=True` adds what cel-go has and Kubernetes does not (`math.*`,
    `base64.*`, `cel.bind`), which cel-spec's conformance tests use. Raises CELSyntaxError or
    CELCheckError, with the line and column of the problem.
    """
    limits = limits or DEFAULT_LIMITS
    if len(source) > limits.max_source_length:
        raise CELCheckError(
            f"expression is {len(source)} characters long; the limit is {limits.max_source_length}"
        )
    tree = parse(source, limits.max_nesting_depth)
    return compile_tree(
        tree,
        source,
        variables,
        limits=limits,
        check=check,
        libraries=libraries,
        homogeneous=homogeneous,
        extensions=extensions,
    )


def compile_tree(
    tree: ast.Node,
    source: str,
    variables: Mapping[str, str | Type] | None = None,
    *,
    limits: Limits | None = None,
    check: bool = True,
    libraries: Sequence[Library] | None = None,
    homogeneous: bool = True,
    extensions: bool = False,
) -> Program:
    """Compile a parsed (or rewritten, see `partial`) expression; `source` is the text its
    offsets point into, for error positions."""
    limits = limits or DEFAULT_LIMITS
    chosen = tuple(libraries) if libraries is not None else KUBERNETES_LIBRARIES
    table = _table(chosen + CEL_GO_EXTENSIONS if extensions else chosen)
    declared = variables or {}
    try:
        checker = Checker(
            source,
            declared,
            table,
            limits,
            check=check,
            homogeneous=homogeneous,
            bindings=extensions,
        )
        checked = checker.run(tree)
        planner = Planner(checked, declared, table, limits)
        code = planner.compile(tree)
    except RecursionError:
        raise CELCheckError("expression nested too deeply to compile") from None
    return Program(source, planner, code.fn, checked.type)
