"""Reading policy files: YAML (or JSON) documents with the position of every value.

PyYAML's composer gives each node its start mark; the documents are built from the nodes
directly so that a schema error at `spec.filters[2].weight` or a CEL error inside an
expression can be reported at its line and column in the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from policyext.policy.model import Expression, Issue, Location

PathKey = tuple[str | int, ...]
# the link kubelet swaps to update a mounted ConfigMap atomically
KUBELET_DATA_LINK: Final = "..data"
SWAPPED_WHILE_READ: Final = "the folder was updated while it was read; it is read again"


_NO_TIMESTAMPS: Final = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


# Anchors and aliases let a few hundred bytes stand for gigabytes (a list of aliases of a
# list of aliases multiplies what is read: the "billion laughs"), or for a value that
# contains itself. JSON has neither, so no Kubernetes manifest needs them: they are refused
# where they are written.
ALIAS_REFUSED: Final = (
    "YAML {what} {name} is not accepted: anchors and aliases can make a few bytes stand for"
    " gigabytes (or for a value that contains itself); write the value out"
)
# deeper than any Kubernetes object; the composer and the checks after it recurse per level
MAX_YAML_DEPTH: Final = 100
TOO_DEEP: Final = f"YAML nested more than {MAX_YAML_DEPTH} levels deep"
# Read with positions, a YAML value takes about 1 kB until the file is checked: a bound on
# their number bounds that memory (a 1 MiB list of zeros would take 340 MB). The example
# policies and their tests hold at most 200 values a file.
MAX_YAML_VALUES: Final = 20_000
TOO_MANY: Final = (
    f"more than {MAX_YAML_VALUES:,} YAML values in one file: a policy needs far fewer (a"
    " PolicyTest's cluster belongs in a snapshot file)"
)
# what a ConfigMap holds at most; a policy file needs a small part of it
MAX_FILE_BYTES: Final = 1024 * 1024
TOO_BIG: Final = "larger than 1 MiB (what a ConfigMap holds at most): a policy needs far less"


class RefusedYAML(yaml.MarkedYAMLError):
    """Well-formed YAML that is refused (an alias, an anchor, nesting too deep, too many
    values)."""


class KubeYAMLLoader(yaml.SafeLoader):
    """YAML read as Kubernetes reads it (YAML to JSON): an unquoted timestamp such as
    `2026-03-14T12:00:00Z` stays a string instead of becoming a datetime. Anchors, aliases
    and nesting past MAX_YAML_DEPTH are refused where they are written."""

    yaml_implicit_resolvers = _NO_TIMESTAMPS

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._values = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            raise _refusal(_refused("alias", f"*{event.anchor}"), event.start_mark)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise _refusal(_refused("anchor", f"&{anchor}"), event.start_mark)
        if self._depth >= MAX_YAML_DEPTH:
            raise _refusal(TOO_DEEP, event.start_mark)
        self._values += 1
        if self._values > MAX_YAML_VALUES:
            raise _refusal(TOO_MANY, event.start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _refused(what: str, name: str) -> str:
    return ALIAS_REFUSED.format(what=what, name=name)


def _refusal(problem: str, mark: Any) -> RefusedYAML:
    return RefusedYAML(problem=problem, problem_mark=mark)


# libyaml's parser, when PyYAML was built with it: snapshots of thousands of nodes
_FastBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FastKubeYAMLLoader(_FastBase):  # type: ignore[misc]
    """KubeYAMLLoader on libyaml, for large files where positions are not needed. libyaml
    composes in C, so an alias is caught when its value is constructed a second time (and
    named at the anchored value); an anchor alone is harmless here: nothing is read twice."""

    yaml_implicit_resolvers = _NO_TIMESTAMPS

    def construct_object(self, node: yaml.Node, deep: bool = False) -> object:
        if node in self.constructed_objects or node in self.recursive_objects:
            raise _refusal(_refused("alias", "of this value"), node.start_mark)
        return super().construct_object(node, deep)


def load_yaml(text: str) -> object:
    return yaml.load(text, Loader=FastKubeYAMLLoader)


def load_yaml_all(text: str) -> list[object]:
    """Every document; JSON (the common form of big snapshots) is read as JSON."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return [json.loads(stripped)]
        except ValueError:
            pass  # YAML flow style, not JSON
    return list(yaml.load_all(text, Loader=FastKubeYAMLLoader))


POLICY_SUFFIXES: Final = (".yaml", ".yml", ".json")


@dataclass
class Document:
    """One YAML document: its data, and where each value (by JSON path) was written."""

    file: str
    index: int
    data: object
    source_lines: list[str]
    positions: dict[PathKey, yaml.Node] = field(default_factory=dict)
    key_positions: dict[PathKey, yaml.Node] = field(default_factory=dict)  # mapping keys

    def location(self, path: Iterable[str | int] = ()) -> Location:
        """The position of the value at `path`, or of its nearest enclosing value."""
        key = tuple(path)
        while key not in self.positions and key:
            key = key[:-1]
        node = self.positions.get(key)
        if node is None:
            return Location(self.file, 1, 1)
        return Location(self.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def key_location(self, path: PathKey) -> Location:
        """The position of the key that names the value at `path`."""
        node = self.key_positions.get(path)
        if node is None:
            return self.location(path)
        return Location(self.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def expression(self, path: PathKey) -> Expression:
        """The CEL expression at `path` (a string), with what is needed to map positions
        inside it back to the file."""
        node = self.positions[path]
        value = _get(self.data, path)
        style = getattr(node, "style", None) or ""
        indent = 0
        if style in ("|", ">"):
            line = node.start_mark.line + 1
            if line < len(self.source_lines):
                text = self.source_lines[line]
                indent = len(text) - len(text.lstrip(" "))
        return Expression(str(value), self.location(path), style, indent)


def expression_location(expr: Expression, line: int | None, column: int | None) -> Location:
    """The file position of a (1-based) line and column inside an expression."""
    start = expr.location
    if line is None or column is None:
        return start
    if expr.style in ("|", ">"):
        return Location(start.file, start.line + line, expr.indent + column)
    if line == 1:
        quote = 1 if expr.style in ("'", '"') else 0
        return Location(start.file, start.line, start.column + quote + column - 1)
    return Location(start.file, start.line + line - 1, column)


def _get(data: object, path: PathKey) -> object:
    for key in path:
        data = data[key]  # type: ignore[index]
    return data


class _Builder:
    """Turns composed YAML nodes into plain values, recording each node by its path."""

    def __init__(self, doc: Document, issues: list[Issue]) -> None:
        self.doc = doc
        self.issues = issues
        self.constructor = yaml.constructor.SafeConstructor()

    def build(self, node: yaml.Node, path: PathKey) -> object:
        self.doc.positions[path] = node
        if isinstance(node, yaml.MappingNode):
            out: dict[str, object] = {}
            for key_node, value_node in node.value:
                key = self.constructor.construct_object(key_node)
                if not isinstance(key, str):
                    key = str(key)
                if key in out:
                    self.issues.append(
                        Issue(self.location(key_node), f"duplicate key {key!r} in a mapping")
                    )
                    continue
                self.doc.key_positions[(*path, key)] = key_node
                out[key] = self.build(value_node, (*path, key))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        return self.constructor.construct_object(node)

    def location(self, node: yaml.Node) -> Location:
        return Location(self.doc.file, node.start_mark.line + 1, node.start_mark.column + 1)


def read_documents(path: Path, display: str | None = None) -> tuple[list[Document], list[Issue]]:
    """Every document of a YAML or JSON file; a syntax error is an issue, not an exception."""
    name = display or str(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return [], [Issue(Location(name, 1, 1), TOO_BIG)]
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return [], [Issue(Location(name, 1, 1), f"cannot read file: {e}")]
    return parse_documents(text, name)


def parse_documents(text: str, name: str) -> tuple[list[Document], list[Issue]]:
    issues: list[Issue] = []
    documents: list[Document] = []
    if len(text) > MAX_FILE_BYTES:  # characters: at least as many bytes
        return documents, [Issue(Location(name, 1, 1), TOO_BIG)]
    lines = text.splitlines()
    try:
        for index, root in enumerate(yaml.compose_all(text, Loader=KubeYAMLLoader)):
            if root is None:
                continue
            doc = Document(name, index, None, lines)
            doc.data = _Builder(doc, issues).build(root, ())
            documents.append(doc)
    except RefusedYAML as e:
        mark = e.problem_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        issues.append(Issue(Location(name, line, column), str(e.problem)))
    except RecursionError:  # a bound above should make this unreachable; never a crash
        issues.append(Issue(Location(name, 1, 1), TOO_DEEP))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(part for part in (e.context, e.problem) if part)
        issues.append(Issue(Location(name, line, column), f"YAML syntax error: {problem}"))
    except yaml.YAMLError as e:
        issues.append(Issue(Location(name, 1, 1), f"YAML error: {e}"))
    return documents, issues


def discover(paths: Iterable[str | Path]) -> tuple[list[Path], list[Issue]]:
    """The policy files under the given files and folders, in a stable order."""
    found, issues = discover_files(paths)
    return [read for read, _shown in found], issues


def discover_files(paths: Iterable[str | Path]) -> tuple[list[tuple[Path, str]], list[Issue]]:
    """The policy files under the given files and folders, in a stable order, each as (the
    path to read, the name to show).

    Folders are read recursively for *.yaml, *.yml and *.json; names starting with `.` are
    skipped. A folder that kubelet projects from a ConfigMap holds its files in a hidden
    timestamped folder that the `..data` link points at, swapped atomically on update: it is
    read through the resolved link, so one load sees one whole version of the ConfigMap
    even when an update lands in the middle, while errors still name the visible path."""
    found: list[tuple[Path, str]] = []
    issues: list[Issue] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            data = path / KUBELET_DATA_LINK
            if not data.is_symlink():
                found.extend((file, str(file)) for file in _walk(path))
                continue
            root = Path(os.path.realpath(data))
            files = list(_walk(root))
            # kubelet removes the old version right after the swap: a version that went
            # away while it was listed reads as empty, which must not pass for "no policies"
            if not root.is_dir() or os.path.realpath(data) != str(root):
                issues.append(Issue(Location(str(path), 1, 1), SWAPPED_WHILE_READ))
                continue
            found.extend((file, str(path / file.relative_to(root))) for file in files)
        elif path.is_file():
            found.append((path, str(path)))
        else:
            issues.append(Issue(Location(str(path), 1, 1), "no such file or directory"))
    return found, issues


def _walk(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and name.endswith(POLICY_SUFFIXES):
                yield Path(folder) / name


def yaml_error_line(error: yaml.YAMLError, name: str) -> str:
    """A YAML (or JSON) syntax error of the file `name` on one line, as every other error:
    `name:line:col: YAML syntax error: problem (while parsing X that starts at line:col)`,
    instead of PyYAML's several lines that name "<unicode string>"."""
    if isinstance(error, yaml.reader.ReaderError):  # a character YAML does not allow
        first = str(error).splitlines()[0]
        return f"{name}: YAML syntax error: {first} (character {error.position + 1})"
    if not isinstance(error, yaml.MarkedYAMLError) or error.problem_mark is None:
        return f"{name}: YAML syntax error: {' '.join(str(error).split())}"
    mark = error.problem_mark
    text = f"{name}:{mark.line + 1}:{mark.column + 1}: YAML syntax error: {error.problem}"
    start, where = error.context_mark, ""
    if start is not None and (start.line, start.column) != (mark.line, mark.column):
        where = f" that starts at {start.line + 1}:{start.column + 1}"
    if error.context:
        text += f" ({error.context}{where})"
    return text
