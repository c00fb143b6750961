"""A recursive-descent parser for CEL, with the syntax Kubernetes CEL accepts.

Beyond the core grammar of cel-spec `langdef.md`: optional selection (`a.?b`, `a[?k]`),
optional entries in list and map literals (`[?x]`, `{?k: v}`), trailing commas, and the
macros of the standard library and of the extensions Kubernetes enables (two-variable
comprehensions, `cel.bind`, `optMap`, `optFlatMap`, `sortBy`).
"""

from __future__ import annotations

from typing import Final

from policyext.cel import ast
from policyext.cel.errors import CELSyntaxError
from policyext.cel.lexer import RESERVED, Lexer, Token, position

_RELATIONS: Final = {
    "<": "_<_",
    "<=": "_<=_",
    ">": "_>_",
    ">=": "_>=_",
    "==": "_==_",
    "!=": "_!=_",
}
_ADDITIVE: Final = {"+": "_+_", "-": "_-_"}
_MULTIPLICATIVE: Final = {"*": "_*_", "/": "_/_", "%": "_%_"}

# member macros: name -> accepted argument counts (variables included)
_MEMBER_MACROS: Final = {
    "all": (2, 3),
    "exists": (2, 3),
    "exists_one": (2, 3),
    "existsOne": (3,),  # two variables only: the one-variable spelling is exists_one
    "map": (2, 3),
    "filter": (2,),
    "transformList": (3, 4),
    "transformMap": (3, 4),
    "transformMapEntry": (3, 4),
    "sortBy": (2,),
    "optMap": (2,),
    "optFlatMap": (2,),
}
# macros whose 3-argument form has two variables (the 3-argument map has one, plus a filter)
_TWO_VARIABLE_AT: Final = {
    "all": 3,
    "exists": 3,
    "exists_one": 3,
    "existsOne": 3,
    "transformList": 3,
    "transformMap": 3,
    "transformMapEntry": 3,
}

DEFAULT_MAX_DEPTH: Final = 100
# words the lexer reads as names but the grammar reserves as tokens of their own
_LITERAL_WORDS: Final = frozenset(("true", "false", "null", "in"))


class Parser:
    def __init__(self, source: str, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.source = source
        self.tokens = Lexer(source).tokens()
        self.index = 0
        self.depth = 0
        self.max_depth = max_depth

    # -- helpers -------------------------------------------------------------------------
    def error(self, message: str, offset: int | None = None) -> CELSyntaxError:
        if offset is None:
            offset = self.peek().offset
        line, column = position(self.source, offset)
        return CELSyntaxError(message, line, column)

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.index + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.tokens[self.index]
        if token.kind != "EOF":
            self.index += 1
        return token

    def at(self, text: str) -> bool:
        token = self.tokens[self.index]
        return token.kind == "OP" and token.text == text

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.index += 1
            return True
        return False

    def expect(self, text: str) -> Token:
        token = self.peek()
        if token.kind != "OP" or token.text != text:
            found = "end of input" if token.kind == "EOF" else repr(token.text)
            raise self.error(f"expected {text!r}, found {found}", token.offset)
        return self.next()

    # -- grammar -------------------------------------------------------------------------
    def parse(self) -> ast.Node:
        node = self.expr()
        token = self.peek()
        if token.kind != "EOF":
            raise self.error(f"unexpected {token.text!r}", token.offset)
        return node

    def expr(self) -> ast.Node:
        self.depth += 1
        if self.depth > self.max_depth:
            raise self.error(f"expression nested more than {self.max_depth} levels deep")
        try:
            condition = self.logical_or()
            if self.at("?"):
                offset = self.next().offset
                then = self.logical_or()
                self.expect(":")
                otherwise = self.expr()
                return ast.Call(offset, "_?_:_", [condition, then, otherwise])
            return condition
        finally:
            self.depth -= 1

    def logical_or(self) -> ast.Node:
        node = self.logical_and()
        while self.at("||"):
            offset = self.next().offset
            node = ast.Call(offset, "_||_", [node, self.logical_and()])
        return node

    def logical_and(self) -> ast.Node:
        node = self.relation()
        while self.at("&&"):
            offset = self.next().offset
            node = ast.Call(offset, "_&&_", [node, self.relation()])
        return node

    def relation(self) -> ast.Node:
        node = self.addition()
        while True:
            token = self.peek()
            if token.kind == "OP" and token.text in _RELATIONS:
                self.next()
                node = ast.Call(token.offset, _RELATIONS[token.text], [node, self.addition()])
            elif token.kind == "IDENT" and token.text == "in":
                self.next()
                node = ast.Call(token.offset, "@in", [node, self.addition()])
            else:
                return node

    def addition(self) -> ast.Node:
        node = self.multiplication()
        while True:
            token = self.peek()
            if token.kind == "OP" and token.text in _ADDITIVE:
                self.next()
                node = ast.Call(token.offset, _ADDITIVE[token.text], [node, self.multiplication()])
            else:
                return node

    def multiplication(self) -> ast.Node:
        node = self.unary()
        while True:
            token = self.peek()
            if token.kind == "OP" and token.text in _MULTIPLICATIVE:
                self.next()
                node = ast.Call(token.offset, _MULTIPLICATIVE[token.text], [node, self.unary()])
            else:
                return node

    def unary(self) -> ast.Node:
        token = self.peek()
        if token.kind == "OP" and token.text == "!":
            offsets = []
            while self.at("!"):
                offsets.append(self.next().offset)
            self._check_depth(len(offsets))
            node = self.member()
            for offset in reversed(offsets):
                node = ast.Call(offset, "!_", [node])
            return node
        if token.kind == "OP" and token.text == "-":
            offsets = []
            while self.at("-"):
                offsets.append(self.next().offset)
            self._check_depth(len(offsets))
            literal = self.peek()
            node = self.member()
            folds = literal.kind in ("INT", "DOUBLE") and isinstance(node, ast.Literal)
            if folds and node.offset == literal.offset:
                # `-9223372036854775808` is a literal, not the negation of an overflow
                node = ast.Literal(offsets.pop(), -literal.value)  # type: ignore[operator]
            for offset in reversed(offsets):
                node = ast.Call(offset, "-_", [node])
            self._check_int_range(node)
            return node
        node = self.member()
        self._check_int_range(node)
        return node

    def _check_depth(self, operators: int) -> None:
        """Each unary operator nests the expression one level deeper."""
        if self.depth + operators > self.max_depth:
            raise self.error(f"expression nested more than {self.max_depth} levels deep")

    def _check_int_range(self, node: ast.Node) -> None:
        if isinstance(node, ast.Literal) and type(node.value) is int and node.value == 2**63:
            raise self.error("integer literal out of range", node.offset)

    def member(self) -> ast.Node:
        node = self.primary()
        while True:
            token = self.peek()
            if token.kind != "OP":
                return node
            if token.text == ".":
                self.next()
                optional = self.accept("?")
                name_token = self.next()
                if name_token.kind == "IDENT" and name_token.text in _LITERAL_WORDS:
                    raise self.error(
                        f"{name_token.text!r} cannot be a field or method name",
                        name_token.offset,
                    )
                if name_token.kind == "QUOTED":
                    node = ast.Select(
                        name_token.offset, node, str(name_token.value), False, optional
                    )
                    continue
                if name_token.kind != "IDENT":
                    raise self.error("expected a field or method name after '.'", name_token.offset)
                name = name_token.text
                if self.at("(") and not optional:
                    self.next()
                    args = self.arguments(")")
                    node = self.member_call(node, name, args, name_token.offset)
                elif self.at("{") and not optional and _qualified_name(node) is not None:
                    node = self.struct(f"{_qualified_name(node)}.{name}", name_token.offset)
                else:
                    node = ast.Select(name_token.offset, node, name, optional=optional)
            elif token.text == "[":
                self.next()
                optional = self.accept("?")
                index = self.expr()
                self.expect("]")
                node = ast.Call(token.offset, "_[?_]" if optional else "_[_]", [node, index])
            else:
                return node

    def primary(self) -> ast.Node:
        token = self.next()
        kind = token.kind
        if kind in ("INT", "UINT", "DOUBLE", "STRING", "BYTES"):
            return ast.Literal(token.offset, token.value)
        if kind == "IDENT":
            return self.identifier(token)
        if kind == "OP":
            if token.text == ".":
                name = self.next()
                if name.kind != "IDENT" or name.text in _LITERAL_WORDS:
                    raise self.error("expected a name after a leading '.'", name.offset)
                return self.identifier(name)
            if token.text == "(":
                node = self.expr()
                self.expect(")")
                return node
            number = self.peek()
            if token.text == "-" and number.kind in ("INT", "DOUBLE"):
                # a signed literal is a primary in CEL's grammar: `!-1` parses (and fails the
                # check, as it should)
                self.next()
                return ast.Literal(token.offset, -number.value)  # type: ignore[operator]
            if token.text == "[":
                return self.list_literal(token.offset)
            if token.text == "{":
                return self.map_literal(token.offset)
        if kind == "EOF":
            raise self.error("unexpected end of input", token.offset)
        raise self.error(f"unexpected {token.text!r}", token.offset)

    def identifier(self, token: Token) -> ast.Node:
        name = token.text
        if name == "true":
            return ast.Literal(token.offset, True)
        if name == "false":
            return ast.Literal(token.offset, False)
        if name == "null":
            return ast.Literal(token.offset, None)
        if name in RESERVED or name == "in":
            raise self.error(f"reserved identifier {name!r}", token.offset)
        if self.at("("):
            self.next()
            args = self.arguments(")")
            return self.global_call(name, args, token.offset)
        if self.at("{"):
            return self.struct(name, token.offset)
        return ast.Ident(token.offset, name)

    def arguments(self, closer: str) -> list[ast.Node]:
        args: list[ast.Node] = []
        if self.accept(closer):
            return args
        while True:  # no trailing comma in calls (only in list, map and message literals)
            args.append(self.expr())
            if self.accept(closer):
                return args
            self.expect(",")

    def list_literal(self, offset: int) -> ast.Node:
        elements: list[ast.Node] = []
        optional: set[int] = set()
        if self.at(",") and self.peek(1).text == "]":  # `[,]`: the grammar allows it
            self.next()
        while not self.accept("]"):
            if self.accept("?"):
                optional.add(len(elements))
            elements.append(self.expr())
            if not self.at("]"):
                self.expect(",")
        return ast.ListLit(offset, elements, frozenset(optional))

    def map_literal(self, offset: int) -> ast.Node:
        entries: list[ast.MapEntry] = []
        if self.at(",") and self.peek(1).text == "}":  # `{,}`
            self.next()
        while not self.accept("}"):
            optional = self.accept("?")
            key = self.expr()
            self.expect(":")
            entries.append(ast.MapEntry(key, self.expr(), optional))
            if not self.at("}"):
                self.expect(",")
        return ast.MapLit(offset, entries)

    def struct(self, type_name: str, offset: int) -> ast.Node:
        self.expect("{")
        fields: list[tuple[str, ast.Node, bool]] = []
        while not self.accept("}"):
            optional = self.accept("?")
            name = self.next()
            if name.kind not in ("IDENT", "QUOTED"):
                raise self.error("expected a field name", name.offset)
            self.expect(":")
            fields.append((str(name.value), self.expr(), optional))
            if not self.at("}"):
                self.expect(",")
        return ast.StructLit(offset, type_name, fields)

    # -- macros --------------------------------------------------------------------------
    def global_call(self, name: str, args: list[ast.Node], offset: int) -> ast.Node:
        if name == "has" and len(args) == 1:
            arg = args[0]
            if not isinstance(arg, ast.Select) or arg.optional:
                raise self.error("invalid argument to has() macro", arg.offset)
            return ast.Select(arg.offset, arg.operand, arg.field, test_only=True)
        return ast.Call(offset, name, args)

    def member_call(
        self, target: ast.Node, name: str, args: list[ast.Node], offset: int
    ) -> ast.Node:
        is_bind = name == "bind" and len(args) == 3
        if is_bind and isinstance(target, ast.Ident) and target.name == "cel":
            var = self._macro_variable(args[0])
            return ast.Comprehension(offset, "bind", args[1], var, None, [args[2]])
        counts = _MEMBER_MACROS.get(name)
        if counts is None or len(args) not in counts:
            return ast.Call(offset, name, args, target)
        kind = "exists_one" if name == "existsOne" else name
        if _TWO_VARIABLE_AT.get(name) == len(args) or len(args) == 4:
            var = self._macro_variable(args[0])
            var2 = self._macro_variable(args[1])
            if var == var2:
                raise self.error(f"duplicate variable name {var!r}", args[1].offset)
            return ast.Comprehension(offset, kind, target, var, var2, args[2:])
        var = self._macro_variable(args[0])
        return ast.Comprehension(offset, kind, target, var, None, args[1:])

    def _macro_variable(self, node: ast.Node) -> str:
        if not isinstance(node, ast.Ident):
            raise self.error("argument must be a simple name", node.offset)
        return node.name


def _qualified_name(node: ast.Node) -> str | None:
    """`a.b.c` as a dotted name, when the expression is nothing but identifiers."""
    if isinstance(node, ast.Ident):
        return node.name
    if isinstance(node, ast.Select) and not node.optional and not node.test_only:
        prefix = _qualified_name(node.operand)
        return None if prefix is None else f"{prefix}.{node.field}"
    return None


def parse(source: str, max_depth: int = DEFAULT_MAX_DEPTH) -> ast.Node:
    """Parse CEL source text into an AST; raises CELSyntaxError with line and column."""
    try:
        return Parser(source, max_depth).parse()
    except RecursionError:  # only with a nesting limit raised far above the default
        raise CELSyntaxError("expression nested too deeply to parse") from None
