"""Check an AST against an environment: resolve every name, infer every type.

The checker walks the tree once. It reports what can never evaluate (an undeclared name or
function, an operator applied to types it does not accept, a field the schema does not
have) as a `CELCheckError` at its line and column, and returns a `Checked` tree: the type
of every node and what each name denotes. A problem does not stop the walk: the node is
typed `dyn`, which every operator accepts, so the problems of the other nodes are found
too (and a problem is not reported again by each call that encloses it), and the error
raised at the end carries them all (`CELError.issues`), as cel-go's Issues do. The planner
(planner.py) compiles that tree; it makes no decision of its own about names or types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from policyext.cel import ast, signatures
from policyext.cel import celtypes as t
from policyext.cel.celtypes import DYN, Type
from policyext.cel.errors import CELCheckError, CELEvalError
from policyext.cel.functions import FunctionTable
from policyext.cel.lexer import position
from policyext.cel.lib.format import check_format
from policyext.cel.lib.regex import compile_regex
from policyext.cel.limits import Limits
from policyext.cel.values import UInt, kind_of_class

TYPE_NAMES: Final = frozenset(
    (
        "bool",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "list",
        "map",
        "null_type",
        "type",
        "google.protobuf.Duration",
        "google.protobuf.Timestamp",
        "optional_type",
        # the types of the Kubernetes libraries
        "kubernetes.Quantity",
        "kubernetes.Semver",
        "kubernetes.URL",
        "kubernetes.NamedFormat",
        "net.IP",
        "net.CIDR",
    )
)

# what a name denotes (Checked.refs)
VARIABLE: Final = "variable"  # a declared variable (possibly dotted: `a.b` declared as such)
LOCAL: Final = "local"  # a macro's variable
TYPE_NAME: Final = "type"  # a type used as a value: `int`, `google.protobuf.Duration`
FUNCTION: Final = "function"  # a qualified global function: `math.greatest(...)`
UNDECLARED: Final = "undeclared"  # unchecked mode only: an evaluation error

_LITERAL_TYPES: Final = {
    type(None): t.NULL,
    bool: t.BOOL,
    int: t.INT,
    UInt: t.UINT,
    float: t.DOUBLE,
    str: t.STRING,
    bytes: t.BYTES,
}
# what a field is selected from (the rest are refused: a string, a list, a timestamp...)
_SELECTABLE: Final = frozenset(("map", "object", "dyn"))
_NOT_SELECTABLE: Final = frozenset(
    ("int", "uint", "double", "string", "bytes", "bool", "null_type", "list")
)
# the map keys of CEL, and double and null, which Kubernetes' checker accepts too (a map
# keyed by lists, maps, bytes, times or library values is refused: docs/cel.md says why)
_MAP_KEY_KINDS: Final = frozenset(("dyn", "string", "int", "uint", "bool", "double", "null_type"))
_LOOPS: Final = frozenset(
    (
        "all",
        "exists",
        "exists_one",
        "map",
        "filter",
        "transformList",
        "transformMap",
        "transformMapEntry",
        "sortBy",
    )
)
_BINDERS: Final = frozenset(("bind", "optMap", "optFlatMap"))
# the namespaces of cel-go libraries Kubernetes' environment does not declare, named in the
# error so that a rule written against cel-go's documentation is told why it is refused
_NOT_IN_KUBERNETES: Final = {"math": "math library", "base64": "encoders library"}
# the arguments of a macro that must be bool, by (macro, number of arguments)
_PREDICATES: Final = {
    ("all", 1): (0,),
    ("exists", 1): (0,),
    ("exists_one", 1): (0,),
    ("filter", 1): (0,),
    ("map", 2): (0,),
    ("transformList", 2): (0,),
    ("transformMap", 2): (0,),
    ("transformMapEntry", 2): (0,),
}
_REGEX_FUNCTIONS: Final = frozenset(("matches", "find", "findAll"))
# the conversions Kubernetes applies to a constant argument when it builds the program
_CONVERSIONS: Final = frozenset(
    ("bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint")
)


@dataclass
class Checked:
    """A checked tree: the type of each node, and what each resolved name denotes.

    Both maps are keyed by the nodes themselves (AST nodes compare by identity)."""

    tree: ast.Node
    source: str
    types: dict[ast.Node, Type] = field(default_factory=dict)
    refs: dict[ast.Node, tuple[str, str]] = field(default_factory=dict)

    @property
    def type(self) -> Type:
        return self.types[self.tree]

    def type_of(self, node: ast.Node) -> Type:
        return self.types.get(node, DYN)


def declared_type(declaration: str | Type) -> Type:
    return declaration if isinstance(declaration, Type) else t.named(declaration)


class Checker:
    def __init__(
        self,
        source: str,
        variables: Mapping[str, str | Type],
        functions: FunctionTable,
        limits: Limits,
        *,
        check: bool = True,
        homogeneous: bool = True,
        bindings: bool = False,
    ) -> None:
        self.source = source
        # cel-go's `cel.bind` macro, which Kubernetes' environment does not declare
        self.bindings = bindings
        # Kubernetes' rule that list and map literals hold one type (cel-go's
        # HomogeneousAggregateLiterals); cel-spec's conformance tests run without it
        self.homogeneous = homogeneous
        self.variables = {name: declared_type(d) for name, d in variables.items()}
        self.functions = functions
        self.limits = limits
        self.check = check
        self.locals: dict[str, list[Type]] = {}  # macro variables in scope, innermost last
        self.in_format = 0  # inside `format(...)`: its list may mix types, as in cel-go
        self.loop_depth = 0
        self.constants: dict[ast.Node, object] = {}  # the conversions of constants, done
        self.result: Checked

    def run(self, tree: ast.Node) -> Checked:
        self.result = Checked(tree, self.source)
        self.problems: list[CELCheckError] = []
        self.visit(tree)
        if self.problems:
            first, *others = self.problems
            raise first.with_issues(list(others))
        return self.result

    # -- errors ------------------------------------------------------------------------
    def error(self, message: str, node: ast.Node) -> CELCheckError:
        line, column = position(self.source, node.offset)
        return CELCheckError(message, line, column)

    def no_overload(
        self, function: str, types: list[Type], node: ast.Node, *, member: bool = False
    ) -> CELCheckError:
        """cel-go's message: the argument types in parentheses, a member's target first."""
        shown = ", ".join(str(x) for x in types[member:])
        applied = f"{types[0]}.({shown})" if member else f"({shown})"
        return self.error(
            f"found no matching overload for '{function}' applied to '{applied}'", node
        )

    # -- dispatch ----------------------------------------------------------------------
    def visit(self, node: ast.Node) -> Type:
        try:
            result = self.infer(node)
        except CELCheckError as e:  # recorded; the walk goes on (see the module's doc)
            self.problems.append(e)
            result = DYN
        self.result.types[node] = result
        return result

    def infer(self, node: ast.Node) -> Type:
        if isinstance(node, ast.Literal):
            return _LITERAL_TYPES.get(type(node.value), DYN)
        if isinstance(node, ast.Ident):
            return self.ident(node)
        if isinstance(node, ast.Select):
            return self.select(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.ListLit):
            return self.list_literal(node)
        if isinstance(node, ast.MapLit):
            return self.map_literal(node)
        if isinstance(node, ast.Comprehension):
            return self.comprehension(node)
        if isinstance(node, ast.StructLit):
            raise self.error(f"message construction is not supported: {node.type_name}", node)
        raise self.error(f"unsupported expression {type(node).__name__}", node)

    # -- names -------------------------------------------------------------------------
    def ident(self, node: ast.Ident) -> Type:
        name = node.name
        refs = self.result.refs
        if name in self.locals:
            refs[node] = (LOCAL, name)
            return self.locals[name][-1]
        if name in self.variables:
            refs[node] = (VARIABLE, name)
            return self.variables[name]
        if name in TYPE_NAMES:
            refs[node] = (TYPE_NAME, name)
            return t.type_type(t.named(name))
        if self.check:
            raise self.error(f"undeclared reference to '{name}'", node)
        refs[node] = (UNDECLARED, name)
        return DYN

    def qualified(self, node: ast.Node) -> str | None:
        """The dotted name of `a.b.c` when `a` is not a macro variable in scope."""
        parts: list[str] = []
        while isinstance(node, ast.Select) and not node.test_only and not node.optional:
            parts.append(node.field)
            node = node.operand
        if not isinstance(node, ast.Ident) or node.name in self.locals:
            return None
        parts.append(node.name)
        return ".".join(reversed(parts))

    def resolve_dotted(self, node: ast.Select) -> Type | None:
        """Dotted names that denote a declared variable (`a.b` declared as such) or a type."""
        name = self.qualified(node)
        if name is None:
            return None
        if name in self.variables:
            self.result.refs[node] = (VARIABLE, name)
            return self.variables[name]
        if name.split(".", 1)[0] not in self.variables and name in TYPE_NAMES:
            self.result.refs[node] = (TYPE_NAME, name)
            return t.type_type(t.named(name))
        return None

    # -- selection ---------------------------------------------------------------------
    def select(self, node: ast.Select) -> Type:
        if not node.test_only and not node.optional:
            resolved = self.resolve_dotted(node)
            if resolved is not None:
                return resolved
        operand = self.visit(node.operand)
        field_type = self.field_type(operand, node)
        inner = operand.element if operand.kind == "optional_type" else operand
        if self.check and inner.kind not in _SELECTABLE:
            # an optional's value too: `{'a': 1}.?a.b` selects from an int
            raise self.error(f"type '{inner}' does not support field selection", node.operand)
        if node.test_only:
            return t.BOOL
        if node.optional or operand.kind == "optional_type":
            return t.optional_of(field_type)
        return field_type

    def is_chain_base(self, node: ast.Node) -> bool:
        """Whether an access chain starts at this node (the planner reads a chain as one:
        only its base is checked for selection)."""
        return not ast.is_chain_step(node) or node in self.result.refs

    def field_type(self, operand: Type, node: ast.Select) -> Type:
        """The type of `operand.field`; a field its object type does not have is an error."""
        if operand.kind == "optional_type":
            operand = operand.element
        if operand.kind == "map":
            return operand.value
        if operand.kind != "object":
            return DYN
        fields = operand.fields
        found = fields.get(node.field)
        if found is not None:
            return found
        if not self.check:
            return DYN
        message = f"no field '{node.field}' in {operand.name}"
        near = t.suggestion(node.field, sorted(fields))
        if near is not None:
            message += f"; did you mean '{near}'?"
        raise self.error(message, _field_position(node, self.source))

    # -- calls -------------------------------------------------------------------------
    def call(self, node: ast.Call) -> Type:
        name = node.function
        if node.target is None:
            special = _OPERATORS.get(name)
            if special is not None:
                return special(self, node)
            result = self.global_call(name, node.args, node)
            if name in _CONVERSIONS and len(node.args) == 1:
                self.fold_conversion(node)
            return result
        dotted = self.qualified(node.target)
        if dotted is not None and dotted.split(".", 1)[0] not in self.variables:
            qualified_name = f"{dotted}.{name}"
            if qualified_name in self.functions.global_names():
                self.result.refs[node] = (FUNCTION, qualified_name)
                # positions point at the start of the qualified name, as for any global call
                return self.global_call(qualified_name, node.args, _chain_root(node.target))
            library = _NOT_IN_KUBERNETES.get(dotted)
            if library is not None and self.check:
                raise self.error(
                    f"undeclared reference to '{qualified_name}'"
                    f" (Kubernetes' CEL environment has no {library})",
                    _chain_root(node.target),
                )
        return self.member_call(node)

    def global_call(self, name: str, args: list[ast.Node], node: ast.Node) -> Type:
        overload = self.functions.find_global(name, len(args))
        arg_types = [self.visit(a) for a in args]
        if overload is None:
            self.unknown_function(name, name in self.functions.global_names(), len(args), node)
            return DYN
        self.check_params(name, overload.params, arg_types, arg_types, node)
        self.check_constant_pattern(name, args, 1 if name == "matches" else -1, node)
        if signatures.overloads(name, len(args)) is not None:
            return self.overloaded(name, node, arg_types)
        if name == "dyn":
            return t.EXACT_DYN
        return t.named(overload.result)

    def member_call(self, node: ast.Call) -> Type:
        assert node.target is not None
        name = node.function
        target = self.visit(node.target)
        self.in_format += name == "format"
        try:
            arg_types = [self.visit(a) for a in node.args]
        finally:
            self.in_format -= name == "format"
        table = self.functions.find_member(name, len(node.args))
        if table is None:
            known = name in self.functions.member_names()
            self.unknown_function(name, known, len(node.args) + 1, node)
            return DYN
        self.check_constant_pattern(name, node.args, 0, node)
        if name == "format":
            self.check_constant_format(node)
        if signatures.overloads(name, len(node.args) + 1) is not None:
            return self.overloaded(name, node, [target, *arg_types], member=True)
        if table.fallback is not None:
            return t.named(table.result)
        by_kind = {kind_of_class(cls): o for cls, o in table.by_type.items()}
        if target.kind in ("dyn", "null_type"):
            # any overload may be meant (null stands for an object, a timestamp, a library
            # value); one that takes these arguments must exist
            candidates = [
                o
                for kind, o in by_kind.items()
                if target.kind == "dyn" or kind in signatures.NULLABLE
            ]
            meant = [o for o in candidates if _takes(o.params, arg_types)]
            if not meant and self.check:
                raise self.no_overload(name, [target, *arg_types], node, member=True)
            results = {o.result for o in meant}
            return t.named(results.pop()) if len(results) == 1 else DYN
        overload = by_kind.get(target.kind)
        if overload is None:
            if self.check:
                raise self.no_overload(name, [target, *arg_types], node, member=True)
            return DYN
        self.check_params(name, overload.params, arg_types, [target, *arg_types], node, True)
        return t.named(overload.result)

    def check_params(
        self,
        name: str,
        params: tuple[str, ...] | None,
        args: list[Type],
        shown: list[Type],
        node: ast.Node,
        member: bool = False,
    ) -> None:
        """Arguments of a kind the function never accepts (known statically) are an error."""
        if not self.check or params is None:
            return
        for param, arg in zip(params, args, strict=False):
            if not _fits(arg, param):
                raise self.no_overload(name, shown, node, member=member)

    def unknown_function(self, name: str, known: bool, arity: int, node: ast.Node) -> None:
        """A check error; unchecked (cel-spec's disable_check), the planner makes the call
        an evaluation error."""
        if not self.check:
            return
        if known:
            message = f"found no matching overload for '{name}' applied to {arity} argument(s)"
        else:
            message = f"undeclared reference to function '{name}'"
        raise self.error(message, node)

    def fold_conversion(self, node: ast.Call) -> None:
        """A conversion of a constant (`int(' 42')`, `duration('1d')`, `uint(-1)`) is done
        now, as Kubernetes does it when it builds the program: one that fails can never
        succeed, and is refused when the rule is written."""
        if not self.check:
            return
        known, value = self.constant(node.args[0])
        overload = self.functions.find_global(node.function, 1)
        if not known or overload is None:
            return
        try:
            self.constants[node] = overload.impl(value)
        except CELEvalError as e:
            if node.function in ("timestamp", "duration"):
                raise self.error(f"invalid {node.function} argument", node.args[0]) from None
            raise self.error(e.message, node) from None

    def constant(self, node: ast.Node) -> tuple[bool, object]:
        """Whether a node is constant (a literal, or a conversion of a constant), and its
        value."""
        if isinstance(node, ast.Literal):
            return True, node.value
        if node in self.constants:
            return True, self.constants[node]
        return False, None

    def check_constant_format(self, node: ast.Call) -> None:
        """A constant format string with a list literal: its clauses against the list's
        elements, as Kubernetes checks them when the expression is compiled."""
        template = node.target
        if not self.check or not isinstance(template, ast.Literal) or len(node.args) != 1:
            return
        elements = node.args[0]
        if type(template.value) is not str or not isinstance(elements, ast.ListLit):
            return
        kinds = [self.result.type_of(e).kind for e in elements.elements]
        problem = check_format(template.value, kinds)
        if problem is not None:
            raise self.error(problem, node)

    def check_constant_pattern(
        self, name: str, args: list[ast.Node], index: int, node: ast.Node
    ) -> None:
        """An invalid constant regex is a load-time error, as in Kubernetes."""
        if name not in _REGEX_FUNCTIONS or index < 0 or index >= len(args):
            return
        pattern = args[index]
        if isinstance(pattern, ast.Literal) and type(pattern.value) is str:
            try:
                compile_regex(pattern.value)
            except CELEvalError as e:
                raise self.error(e.message, node) from None

    # -- operators ---------------------------------------------------------------------
    def overloaded(
        self, name: str, node: ast.Node, args: list[Type], *, member: bool = False
    ) -> Type:
        """The result of a call whose overloads signatures.py declares; a call none of them
        takes is refused (checked mode), as Kubernetes refuses it."""
        candidates = signatures.overloads(name, len(args))
        assert candidates is not None, name
        result = signatures.resolve(candidates, args)
        if result is not None:
            return result
        if self.check:
            raise self.no_overload(name, args, node, member=member)
        return DYN

    def logical(self, node: ast.Call) -> Type:
        operands: list[ast.Node] = []
        _flatten(node, node.function, operands)
        for operand in operands:
            found = self.visit(operand)
            if self.check and found.kind not in ("bool", "dyn"):
                raise self.no_overload(node.function, [found], operand)
        return t.BOOL

    def conditional(self, node: ast.Call) -> Type:
        cond, then, otherwise = (self.visit(a) for a in node.args)
        if self.check and cond.kind not in ("bool", "dyn"):
            raise self.error(f"conditional expression must be bool, not '{cond}'", node)
        return self.overloaded(node.function, node, [cond, then, otherwise])

    def operator(self, node: ast.Call) -> Type:
        """A unary or binary operator: its typed overloads decide."""
        return self.overloaded(node.function, node, [self.visit(a) for a in node.args])

    def index(self, node: ast.Call) -> Type:
        container, key = (self.visit(a) for a in node.args)
        base = node.args[0]
        selects = self.check and ast.is_chain_step(node) and self.is_chain_base(base)
        inner = container.element if container.kind == "optional_type" else container
        if selects and inner.kind in _NOT_SELECTABLE:
            raise self.error(f"type '{inner.kind}' does not support field selection", base)
        function = "_[?_]" if container.kind == "optional_type" else node.function
        # indexing an optional is optional: `opt[k]` is `opt[?k]`
        result = self.overloaded(function, node, [container, key])
        if self.check and key.kind == "null_type":
            # a map keyed by null (or dyn) takes a null key in the overloads, but
            # Kubernetes refuses it when it builds the program
            raise self.error("invalid qualifier type: null", node.args[1])
        return result

    # -- literals ----------------------------------------------------------------------
    def list_literal(self, node: ast.ListLit) -> Type:
        element: Type | None = None
        for i, e in enumerate(node.elements):
            et = self.visit(e)
            if i in node.optional_indices:
                et = self.optional_entry(et, e)
            mixed = element is not None and not _equivalent(element, et)
            if mixed and self.homogeneous and not self.in_format:
                raise self.error(f"expected type '{element}' but found '{et}'", e)
            element = et if element is None else self.joined(element, et)
        return t.list_of(element or DYN)

    def joined(self, a: Type, b: Type) -> Type:
        """The element type of a literal from two of its elements' types."""
        if self.homogeneous and not self.in_format:
            return _element_join(a, b)
        return t.join(a, b)

    def optional_entry(self, found: Type, node: ast.Node) -> Type:
        """The value of an optional element or entry (`[?x]`, `{?k: x}`): x is optional."""
        if found.kind == "optional_type":
            return found.element
        if self.check and found.kind != "dyn":
            raise self.error(f"expected type 'optional_type({found})' but found '{found}'", node)
        return DYN

    def map_literal(self, node: ast.MapLit) -> Type:
        key: Type | None = None
        value: Type | None = None
        for entry in node.entries:
            kt = self.visit(entry.key)
            vt = self.visit(entry.value)
            if entry.optional:
                vt = self.optional_entry(vt, entry.value)
            if self.check and kt.kind not in _MAP_KEY_KINDS:
                raise self.error(f"unsupported map key type '{kt.kind}'", entry.key)
            if key is not None and value is not None and self.homogeneous and not self.in_format:
                if not _equivalent(key, kt):
                    raise self.error(f"expected type '{key}' but found '{kt}'", entry.key)
                if not _equivalent(value, vt):
                    raise self.error(f"expected type '{value}' but found '{vt}'", entry.value)
            key = kt if key is None else self.joined(key, kt)
            value = vt if value is None else self.joined(value, vt)
        return t.map_of(key or DYN, value or DYN)

    # -- comprehensions ----------------------------------------------------------------
    def comprehension(self, node: ast.Comprehension) -> Type:
        target = self.visit(node.target)
        kind = node.kind
        if kind not in _LOOPS and kind not in _BINDERS:
            raise self.error(f"unknown macro {kind}", node)
        if kind == "bind" and not self.bindings:
            # refused checked or not (no policy is unchecked); the macro's offset is its
            # '(', the error points at `cel`
            at = ast.Node(max(self.source.rfind("cel", 0, node.offset), 0))
            raise self.error(
                "undeclared reference to 'cel.bind'"
                " (Kubernetes' CEL environment has no bindings library)",
                at,
            )
        first, second = _loop_variables(kind, target, node.var2 is not None)
        scope = {node.var: first}
        if node.var2:
            scope[node.var2] = second
        loop = node if kind in _LOOPS else None
        bodies = [self.with_locals(scope, arg, loop) for arg in node.args]
        for index in _PREDICATES.get((kind, len(node.args)), ()):
            found = bodies[index]
            if self.check and found.kind not in ("bool", "dyn"):
                raise self.error(f"expected type 'bool' but found '{found}'", node.args[index])
        return _macro_result(kind, target, first, bodies)

    def with_locals(self, scope: dict[str, Type], body: ast.Node, loop: ast.Node | None) -> Type:
        """Check a macro's body with its variables in scope; `loop` is the macro when it
        iterates (chained macros are not nested; a loop in a loop body is)."""
        if loop is not None:
            self.loop_depth += 1
            if self.loop_depth > self.limits.max_comprehension_nesting:
                self.loop_depth -= 1
                raise self.error(
                    f"comprehensions nested more than {self.limits.max_comprehension_nesting} deep",
                    loop,
                )
        for name, type_ in scope.items():
            self.locals.setdefault(name, []).append(type_)
        try:
            return self.visit(body)
        finally:
            if loop is not None:
                self.loop_depth -= 1
            for name in scope:
                self.locals[name].pop()
                if not self.locals[name]:
                    del self.locals[name]


def _equivalent(a: Type, b: Type) -> bool:
    """The same type, as cel-go's check of homogeneous literals wants it (`int` and `dyn`
    differ), as far as this checker knows: a DYN it could not type is never a mismatch, so
    a literal Kubernetes accepts is never refused."""
    if DYN in (a, b):
        return True
    if a.kind != b.kind:
        return False
    if a.kind == "object":
        return a.name == b.name
    if not a.params or not b.params:
        return True
    return all(_equivalent(x, y) for x, y in zip(a.params, b.params, strict=False))


def _element_join(a: Type, b: Type) -> Type:
    """The element type of a literal from two of its elements' types: the one known where
    the other is not typed here (Kubernetes, which types both, accepts only the same type)."""
    if DYN in (a, b):
        return b if a == DYN else a
    return t.join(a, b)


def _takes(params: tuple[str, ...] | None, args: list[Type]) -> bool:
    """Whether an overload with these declared parameter kinds may take the arguments."""
    if params is None:
        return True
    return all(_fits(a, p) for p, a in zip(params, args, strict=False))


def _fits(arg: Type, param: str) -> bool:
    """Whether an argument may stand for a parameter of these kinds (`string|bytes`): dyn
    anywhere, null where a nullable kind (a timestamp, a library type) is taken."""
    kinds = param.split("|")
    if arg.kind == "null_type":
        return any(k in signatures.NULLABLE for k in kinds)
    return arg.kind == "dyn" or arg.kind in kinds


def _field_position(node: ast.Select, source: str) -> ast.Node:
    """Where to point at an unknown field: its name (the node's offset is the dot)."""
    at = source.find(node.field, node.offset)
    return ast.Node(at) if at >= 0 else node


def _loop_variables(kind: str, target: Type, two: bool) -> tuple[Type, Type]:
    """The types of a macro's variables over its target."""
    if kind == "bind":
        return target, DYN
    if kind in ("optMap", "optFlatMap"):
        return (target.element if target.kind == "optional_type" else DYN), DYN
    if target.kind == "list":
        return (t.INT, target.element) if two else (target.element, DYN)
    if target.kind == "map":
        return (target.element, target.value) if two else (target.element, DYN)
    return DYN, DYN


def _macro_result(kind: str, target: Type, first: Type, bodies: list[Type]) -> Type:
    if kind in ("all", "exists", "exists_one"):
        return t.BOOL
    if kind in ("map", "transformList"):
        return t.list_of(bodies[-1])
    if kind == "filter":
        return t.list_of(first)
    if kind == "sortBy":
        return target if target.kind == "list" else t.LIST
    if kind == "transformMap":
        return t.map_of(target.element if target.kind == "map" else t.INT, bodies[-1])
    if kind == "transformMapEntry":
        return t.MAP
    if kind == "bind":
        return bodies[0]
    if kind == "optMap":
        return t.optional_of(bodies[0])
    return bodies[0] if bodies[0].kind == "optional_type" else t.OPTIONAL  # optFlatMap


def _chain_root(node: ast.Node) -> ast.Node:
    while ast.is_chain_step(node):
        node = node.operand if isinstance(node, ast.Select) else node.args[0]  # type: ignore[attr-defined]
    return node


def _flatten(node: ast.Node, function: str, out: list[ast.Node]) -> None:
    if isinstance(node, ast.Call) and node.function == function and node.target is None:
        for arg in node.args:
            _flatten(arg, function, out)
    else:
        out.append(node)


_OPERATORS: Final = {
    "_&&_": Checker.logical,
    "_||_": Checker.logical,
    "_?_:_": Checker.conditional,
    "!_": Checker.operator,
    "-_": Checker.operator,
    "_==_": Checker.operator,
    "_!=_": Checker.operator,
    "_<_": Checker.operator,
    "_<=_": Checker.operator,
    "_>_": Checker.operator,
    "_>=_": Checker.operator,
    "_+_": Checker.operator,
    "_-_": Checker.operator,
    "_*_": Checker.operator,
    "_/_": Checker.operator,
    "_%_": Checker.operator,
    "@in": Checker.operator,
    "_[_]": Checker.index,
    "_[?_]": Checker.index,
}
