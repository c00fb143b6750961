"""Lists of objects, as kubectl and the API server print them: each item read as a document.

`kubectl get schedpol -o yaml` (or `-o json`) prints a `kind: List` of apiVersion v1 whose
items are the objects, each with what the API server set (uid, resourceVersion, generation,
creationTimestamp, managedFields in `metadata`, and a `status`: the schema lets these pass
and nothing reads them); the API server's own answer to a list is a SchedulingPolicyList.
Either is opened into its items, each a Document of its own that keeps the positions of its
values in the file, so that an error in the third item is reported at its line and column.

A `kind: List` may hold PolicyTests too, as a file of several documents may; a
SchedulingPolicyList holds SchedulingPolicies only, and a List inside a List is refused
(kubectl never prints one).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from policyext.policy.loader import Document, PathKey
from policyext.policy.model import API_VERSION, POLICY_KIND, Issue

# each kind of list, and the apiVersion it is written with
LIST_KINDS: Final = {"List": "v1", f"{POLICY_KIND}List": API_VERSION}


def open_lists(documents: Iterable[Document]) -> tuple[list[Document], list[Issue]]:
    """The documents, each List among them replaced by its items."""
    opened: list[Document] = []
    issues: list[Issue] = []
    for doc in documents:
        data = doc.data
        if isinstance(data, dict) and data.get("kind") in LIST_KINDS:
            opened.extend(_items(doc, data, issues))
        else:
            opened.append(doc)
    return opened, issues


def _items(doc: Document, data: dict[str, object], issues: list[Issue]) -> list[Document]:
    kind = str(data["kind"])
    version = LIST_KINDS[kind]
    if data.get("apiVersion") != version:
        got = data.get("apiVersion")
        issues.append(
            Issue(doc.location(("apiVersion",)), f"a {kind} has apiVersion {version}, not {got!r}")
        )
        return []
    items = data.get("items")
    if not isinstance(items, list):
        where = doc.location(("items",)) if "items" in data else doc.location()
        issues.append(Issue(where, f"a {kind} needs `items`, a list of objects"))
        return []
    found: list[Document] = []
    for index, written in enumerate(items):
        path: PathKey = ("items", index)
        item = written
        if not isinstance(item, dict):
            issues.append(Issue(doc.location(path), "an item of a List must be an object"))
            continue
        if item.get("kind") in LIST_KINDS:
            issues.append(Issue(doc.location((*path, "kind")), "a List inside a List is not read"))
            continue
        if kind != "List":
            # the API server's list: its items may leave out what the list says
            item = {"apiVersion": version, "kind": POLICY_KIND} | item
            if item["kind"] != POLICY_KIND or item["apiVersion"] != version:
                issues.append(
                    Issue(
                        doc.location(path),
                        f"a {kind} holds {POLICY_KIND} objects of {version} only, not"
                        f" {item['kind']!r} of {item['apiVersion']!r}",
                    )
                )
                continue
        found.append(_item(doc, path, item))
    return found


def _item(doc: Document, path: PathKey, data: dict[str, object]) -> Document:
    """The item at `path` as a document of its own, its positions those of the file."""
    depth = len(path)
    item = Document(doc.file, doc.index, data, doc.source_lines)
    item.positions = {k[depth:]: v for k, v in doc.positions.items() if k[:depth] == path}
    item.key_positions = {k[depth:]: v for k, v in doc.key_positions.items() if k[:depth] == path}
    return item
