"""The public face of the engine: `compile(source) -> Program`, `Program.evaluate`.

`compile` is `check_expression` (parse, then resolve names and infer types: a `CheckedExpression`)
and `plan` (closures). A caller that evaluates parts of an expression apart (the policy
engine: the pod side once per request, the rest per node) checks the expression once and
plans its parts from the same checked tree: `split_checked` cuts it into pod-side parts
and a residual typed as the whole was, `plan(checked, node)` compiles any subtree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from policyext.cel import ast
from policyext.cel.celtypes import Type
from policyext.cel.checker import VARIABLE, Checked, Checker
from policyext.cel.code import COST
from policyext.cel.errors import CELCheckError, CELError, CELEvalError
from policyext.cel.functions import FunctionTable, Library, merge_libraries
from policyext.cel.lib import CEL_GO_EXTENSIONS, KUBERNETES_LIBRARIES
from policyext.cel.limits import Limits
from policyext.cel.parser import parse
from policyext.cel.partial import Read, placeholder, split
from policyext.cel.planner import Planner

DEFAULT_LIMITS: Final = Limits()

__all__ = [
    "COST",
    "DEFAULT_LIMITS",
    "CheckedExpression",
    "CheckedSplit",
    "Program",
    "check_expression",
    "compile",
    "compile_tree",
    "new_frame",
    "plan",
    "split_checked",
]


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


@dataclass(frozen=True, slots=True)
class CheckedExpression:
    """An expression parsed and checked, with what planning any part of it needs: the
    declarations and functions it was checked against, and the limits."""

    source: str
    tree: ast.Node
    typed: Checked  # the type of every node, what each name denotes
    variables: Mapping[str, str | Type]
    functions: FunctionTable
    limits: Limits

    @property
    def type(self) -> Type:
        return self.typed.type


@dataclass(frozen=True, slots=True)
class CheckedSplit:
    """An expression cut into pod-side `parts` (subtrees of it) and a `residual` that reads
    their values as `@p0`, `@p1`... (see `partial`), typed from the checked expression."""

    residual: CheckedExpression
    parts: tuple[ast.Node, ...]

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(placeholder(i) for i in range(len(self.parts)))


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
    CELCheckError, with the line and column of the problem; a CELCheckError's `issues` are
    every problem the checker found, each with its own position.
    """
    checked = check_expression(
        source,
        variables,
        limits=limits,
        check=check,
        libraries=libraries,
        homogeneous=homogeneous,
        extensions=extensions,
    )
    return plan(checked)


def check_expression(
    source: str,
    variables: Mapping[str, str | Type] | None = None,
    *,
    limits: Limits | None = None,
    check: bool = True,
    libraries: Sequence[Library] | None = None,
    homogeneous: bool = True,
    extensions: bool = False,
) -> CheckedExpression:
    """Parse and check a CEL expression (`compile`'s arguments), without planning it."""
    limits = limits or DEFAULT_LIMITS
    if len(source) > limits.max_source_length:
        raise CELCheckError(
            f"expression is {len(source)} characters long; the limit is {limits.max_source_length}"
        )
    tree = parse(source, limits.max_nesting_depth)
    return _checked(tree, source, variables, limits, check, libraries, homogeneous, extensions)


def plan(checked: CheckedExpression, node: ast.Node | None = None) -> Program:
    """The program of a checked expression, or of one of its subtrees (`node`: one that
    reads no variable of a macro around it), planned from the types already checked."""
    node = checked.tree if node is None else node
    try:
        planner = Planner(checked.typed, checked.variables, checked.functions, checked.limits)
        code = planner.compile(node)
    except RecursionError:
        raise CELCheckError("expression nested too deeply to compile") from None
    return Program(checked.source, planner, code.fn, checked.typed.type_of(node))


def split_checked(checked: CheckedExpression, known: Callable[[Read], bool]) -> CheckedSplit | None:
    """The expression cut into the maximal subexpressions that read only known inputs and
    a residual (`partial.split`; None when nothing splits off). The residual is typed as
    the expression was: each node made for it as the node it stands for, each placeholder
    as its part, so neither the parts nor the residual are checked again."""
    pieces = split(checked.tree, known)
    if pieces is None:
        return None
    typed = checked.typed
    types = dict(typed.types)
    refs = dict(typed.refs)
    variables = dict(checked.variables)
    for made, origin in pieces.origins.items():
        types[made] = typed.type_of(origin)
        if isinstance(made, ast.Ident):  # a placeholder: a variable holding its part's value
            refs[made] = (VARIABLE, made.name)
            variables[made.name] = typed.type_of(origin)
        elif origin in typed.refs:
            refs[made] = typed.refs[origin]
    residual = Checked(pieces.residual, checked.source, types, refs)
    return CheckedSplit(
        CheckedExpression(
            checked.source,
            pieces.residual,
            residual,
            variables,
            checked.functions,
            checked.limits,
        ),
        pieces.parts,
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
    checked = _checked(tree, source, variables, limits, check, libraries, homogeneous, extensions)
    return plan(checked)


def _checked(
    tree: ast.Node,
    source: str,
    variables: Mapping[str, str | Type] | None,
    limits: Limits,
    check: bool,
    libraries: Sequence[Library] | None,
    homogeneous: bool,
    extensions: bool,
) -> CheckedExpression:
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
        typed = checker.run(tree)
    except RecursionError:
        raise CELCheckError("expression nested too deeply to compile") from None
    return CheckedExpression(source, tree, typed, declared, table, limits)
