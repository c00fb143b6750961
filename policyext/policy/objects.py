"""A SchedulingPolicy as the API server holds it: the text its author wrote, and an issue
of that text said by field path.

The SchedulingPolicy watch (cluster/rules_crd.py) loads each object as `authored_text`,
the admission webhook (server/admission.py) checks an object in review as the same text,
and both say a problem with `field_problem` (`spec.filters[1].expression: 1:14: no field
'labelz' in ObjectMeta; ...`): what the object's status says of a generation refused and
what `kubectl apply` prints of the same object refused are one formatting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import yaml

from policyext.policy.model import API_VERSION, POLICY_KIND, Issue

# how an object's text is named in issues (`schedulingpolicy/NAME:3:7: ...`)
TEXT_PREFIX: Final = "schedulingpolicy/"
# what the CEL checker appends to a message: the position inside the expression
_EXPRESSION_POSITION = re.compile(r"^(?P<message>.*) \(expression (?P<at>\d+:\d+)\)$", re.S)
# what a duplicate name's message says of the first one: a position in a file
_FIRST_DEFINED = re.compile(r"\(first defined at (?P<file>.+):(?P<line>\d+):(?P<column>\d+)\)$")


class _Dumper(yaml.SafeDumper):
    """Never an anchor and alias: the loader refuses them (policy/loader.py)."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def authored_text(obj: Mapping[str, Any]) -> str:
    """The part of the object its author wrote (apiVersion, kind, its name, its spec; not
    what the API server added, nor the status), as YAML with sorted keys."""
    meta = obj.get("metadata") or {}
    authored = {
        "apiVersion": obj.get("apiVersion", API_VERSION),
        "kind": obj.get("kind", POLICY_KIND),
        "metadata": {"name": meta.get("name", "") if isinstance(meta, Mapping) else ""},
        "spec": obj.get("spec"),
    }
    return yaml.dump(authored, Dumper=_Dumper, sort_keys=True)


def field_problem(issue: Issue, text: str) -> str:
    """One issue of the object's `text` as its field path in the object, the position
    inside the expression when the issue is about one, and the message."""
    found = _EXPRESSION_POSITION.match(issue.message)
    message = issue.message
    if found is not None:
        message = f"{found['at']}: {found['message']}"
    first = _FIRST_DEFINED.search(message)
    if first is not None and first["file"] == issue.location.file:
        # the text is made from the object: its lines mean nothing to the object's author
        where = field_path(text, int(first["line"]), int(first["column"]))
        message = f"{message[: first.start()]}(first defined at {where or 'the start'})"
    path = field_path(text, issue.location.line, issue.location.column)
    return f"{path}: {message}" if path else message


def field_path(text: str, line: int, column: int) -> str:
    """The path (`spec.filters[1].expression`) of the innermost field of the YAML `text`
    written at the 1-based `line` and `column`; "" when it is none (the document's start,
    a text that does not parse)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return ""
    at = (line - 1, column - 1)
    path = ""
    while node is not None:
        found: tuple[str, yaml.Node] | None = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if _within(value, at) or (_within(key, at) and at != _start(node)):
                    found = (f"{path}.{key.value}" if path else str(key.value), value)
                    break
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                if _within(item, at):
                    found = (f"{path}[{index}]", item)
                    break
        if found is None:
            return path
        path, node = found
    return path


def _start(node: yaml.Node) -> tuple[int, int]:
    return (node.start_mark.line, node.start_mark.column)


def _within(node: yaml.Node, at: tuple[int, int]) -> bool:
    return _start(node) <= at < (node.end_mark.line, node.end_mark.column)
