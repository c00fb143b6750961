"""Access chains: `node.metadata.labels['zone']`, `node.metadata.?labels.?lifecycle`.

Policies mostly read Kubernetes objects through chains of field selections and constant
keys. A chain compiles into one closure that indexes the decoded JSON dicts directly; only
when that fails (a missing key, a list, an optional value) does it replay the chain step by
step with the exact CEL semantics, to produce the right error or optional.

From the first optional step (`.?f`, `[?k]`) on, the chain is optional: a missing key makes
the whole chain an empty optional, as cel-go treats the qualifiers after an optional one.
"""

from __future__ import annotations

from typing import Final

from policyext.cel import operators as ops
from policyext.cel.code import ABSENT, Activation, Code, Fn, constant
from policyext.cel.errors import CELEvalError
from policyext.cel.values import OPTIONAL_NONE, Optional

# one step of a chain: (is a field selection, the field or key, is optional)
Step = tuple[bool, str, bool]

_FAST_ERRORS: Final = (KeyError, TypeError, IndexError)


def compile_chain(base: Code, steps: list[Step]) -> Code:
    """The chain of `steps` (innermost first) over `base`."""
    cost = base.cost + len(steps)
    first_optional = next((i for i, step in enumerate(steps) if step[2]), None)
    slow = _replay(base.fn, steps)
    if first_optional is None:
        keys = tuple(k for _, k, _ in steps)
        path = None if base.path is None else (base.path[0], base.path[1] + keys)
        code = Code(_strict(base, list(keys), slow), cost=cost, path=path)
    else:
        walk = _optional_walk(base.fn, steps, first_optional, slow)

        def wrap(a: Activation) -> object:
            v = walk(a)
            return OPTIONAL_NONE if v is ABSENT else Optional(v)

        code = Code(wrap, cost=cost, walk=walk)
    if base.const:
        try:  # a chain over a constant map is a constant (errors stay runtime errors)
            return constant(code.fn({}))
        except CELEvalError:
            pass
    return code


def _replay(base: Fn, steps: list[Step]) -> Fn:
    """The chain with the exact CEL semantics, step by step."""

    def slow(a: Activation) -> object:
        v = base(a)
        for is_field, key, optional in steps:
            if is_field:
                v = ops.optional_select(v, key) if optional else ops.select(v, key)
            else:
                v = ops.optional_index(v, key) if optional else ops.index(v, key)
        return v

    return slow


def _strict(base_code: Code, keys: list[str], slow: Fn) -> Fn:
    """A chain without optional steps. Chains that start at a variable (nearly all of a
    policy's) index it inline, unrolled; a chain over a computed value (`f(x).a`) loops."""
    if base_code.path is not None and not base_code.path[1]:
        return _strict_from_root(base_code.path[0], keys, slow)
    base = base_code.fn

    def chain(a: Activation) -> object:
        try:
            v = base(a)
            for k in keys:
                v = v[k]
            return v
        except _FAST_ERRORS:
            return slow(a)

    return chain


def _strict_from_root(root: str, keys: list[str], slow: Fn) -> Fn:
    """A chain that starts at an activation variable: the variable is indexed inline too."""
    if len(keys) == 1:
        (k0,) = keys

        def chain1(a: Activation) -> object:
            try:
                return a[root][k0]
            except _FAST_ERRORS:
                return slow(a)

        return chain1
    if len(keys) == 2:
        k0, k1 = keys

        def chain2(a: Activation) -> object:
            try:
                return a[root][k0][k1]
            except _FAST_ERRORS:
                return slow(a)

        return chain2
    if len(keys) == 3:
        k0, k1, k2 = keys

        def chain3(a: Activation) -> object:
            try:
                return a[root][k0][k1][k2]
            except _FAST_ERRORS:
                return slow(a)

        return chain3

    def chain(a: Activation) -> object:
        try:
            v = a[root]
            for k in keys:
                v = v[k]
            return v
        except _FAST_ERRORS:
            return slow(a)

    return chain


def _optional_walk(base: Fn, steps: list[Step], first_optional: int, slow: Fn) -> Fn:
    strict_keys = [k for _, k, _ in steps[:first_optional]]
    optional_keys = [k for _, k, _ in steps[first_optional:]]

    def replay(a: Activation) -> object:
        v = slow(a)
        if type(v) is Optional:
            return v.value if v.has_value() else ABSENT
        return v

    def walk(a: Activation) -> object:
        v = base(a)
        try:
            for k in strict_keys:
                v = v[k]
        except _FAST_ERRORS:
            return replay(a)
        for k in optional_keys:
            if type(v) is not dict:
                return replay(a)
            v = v.get(k, ABSENT)
            if v is ABSENT:
                return ABSENT
        return v

    return walk
