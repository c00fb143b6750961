"""JSON Schema validation of SchedulingPolicy and PolicyTest documents.

The schemas ship inside the package (`policyext/policy/schemas/`; `schemas/` at the top of
the repository links to them for editors). Each violation becomes an issue at the line and
column of the offending value, with its JSON path.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Final

import jsonschema

from policyext.policy.loader import Document
from policyext.policy.model import POLICY_KIND, TEST_KIND, Issue

SCHEMA_FILES: Final = {
    POLICY_KIND: "schedulingpolicy.schema.json",
    TEST_KIND: "policytest.schema.json",
}


@cache
def load_schema(kind: str) -> dict[str, Any]:
    text = resources.files("policyext.policy").joinpath("schemas", SCHEMA_FILES[kind]).read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator(kind: str) -> jsonschema.Draft202012Validator:
    schema = load_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def json_path(path: tuple[str | int, ...] | list[str | int]) -> str:
    """`spec.filters[2].weight`"""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(document)"


def validate(document: Document, kind: str) -> list[Issue]:
    """Every schema violation of the document, each at the position of the bad value."""
    issues: list[Issue] = []
    errors = sorted(_validator(kind).iter_errors(document.data), key=lambda e: list(e.path))
    name = _name_of(document)
    for error in errors:
        path = list(error.absolute_path)
        location = document.location(path)
        unknown = _unknown_fields(error)
        if unknown:  # point at the misspelt key itself
            location = document.key_location((*path, unknown[0]))
        issues.append(Issue(location, f"{json_path(path)}: {_explain(error)}", policy=name))
    return issues


def _unknown_fields(error: jsonschema.ValidationError) -> list[str]:
    schema = error.schema
    if error.validator != "additionalProperties" or not isinstance(schema, dict):
        return []
    if not isinstance(error.instance, dict):
        return []
    allowed = set(schema.get("properties", {}))
    return sorted(k for k in error.instance if k not in allowed)


def _name_of(document: Document) -> str:
    data = document.data
    if isinstance(data, dict):
        metadata = data.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if isinstance(name, str):
            return name
    return ""


def _explain(error: jsonschema.ValidationError) -> str:
    """jsonschema's message, made shorter for the common cases."""
    unknown = _unknown_fields(error)
    if unknown:
        return f"unknown field {', '.join(repr(k) for k in unknown)}"
    if error.validator == "not" and error.validator_value == {
        "required": ["message", "messageExpression"]
    }:
        return "give either message or messageExpression, not both"
    if error.validator == "anyOf" and error.validator_value == [
        {"required": ["filters"]},
        {"required": ["scores"]},
    ]:
        return "a policy needs at least one filter or score"
    if error.validator == "pattern":
        return f"{error.instance!r} does not match {error.validator_value!r}"
    return error.message
