"""Regenerates policyext/cel/schemas/kubernetes.json, the types of `pod` and `node`, from
the OpenAPI description Kubernetes publishes (api/openapi-spec/swagger.json in the
k8s.io/kubernetes Go module of the pinned release).

    python -m tests.cel.kubernetes_schema          # or: make cel-schema

The Go module proxy serves the release's source; `go mod download` puts it in the Go
module cache (the e2e control-plane build fetches the same module). The conversion follows
the one Kubernetes applies to give CEL expressions their types (k8s.io/apiserver
pkg/cel/common SchemaDeclType): objects with properties become object types, objects with
additionalProperties maps from string, `int-or-string` is dyn, `date-time` strings are
timestamps, `byte` strings bytes, integers int, numbers double. The output holds only the
definitions that Pod and Node reach, with short names (`PodSpec`) where they are unique, and
under `required` the fields each of them lists as required (the rest are optional: `validate`
warns of an expression that reads one of those without `?` or `has()`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# the release whose OpenAPI types the policies are checked against (the e2e harness's)
KUBERNETES_MODULE = "k8s.io/kubernetes@v1.37.2"
SWAGGER = Path("api/openapi-spec/swagger.json")
ROOTS = {"pod": "io.k8s.api.core.v1.Pod", "node": "io.k8s.api.core.v1.Node"}
OUTPUT = Path(__file__).resolve().parents[2] / "policyext" / "cel" / "schemas" / "kubernetes.json"


def module_folder(module: str = KUBERNETES_MODULE) -> Path:
    """The module's source in the Go module cache (downloaded through the proxy if needed)."""
    with tempfile.TemporaryDirectory() as scratch:
        # outside any module, so that the download does not touch a go.mod
        result = subprocess.run(
            ["go", "mod", "download", "-json", module],
            cwd=scratch,
            capture_output=True,
            text=True,
            check=True,
        )
    return Path(json.loads(result.stdout)["Dir"])


def convert(definitions: dict[str, Any], roots: dict[str, str], version: str) -> dict[str, Any]:
    """The types of the roots and of every definition they reach."""
    reached: list[str] = []
    pending = list(roots.values())
    while pending:
        name = pending.pop()
        if name in reached:
            continue
        reached.append(name)
        pending.extend(_refs(definitions[name]))
    objects = [n for n in reached if _is_object(definitions[n])]
    short = _short_names(objects)
    types = {
        short[name]: {
            field: _type(prop, definitions, short)
            for field, prop in sorted(definitions[name].get("properties", {}).items())
        }
        for name in sorted(objects, key=lambda n: short[n])
    }
    required = {
        short[name]: sorted(definitions[name]["required"])
        for name in sorted(objects, key=lambda n: short[n])
        if definitions[name].get("required")
    }
    return {
        "source": f"{KUBERNETES_MODULE.split('@', maxsplit=1)[0]} {version} {SWAGGER}",
        "roots": {variable: short[name] for variable, name in roots.items()},
        "types": types,
        "required": required,
    }


def _refs(schema: dict[str, Any]) -> list[str]:
    out: list[str] = []
    ref = schema.get("$ref")
    if ref:
        out.append(ref.rsplit("/", 1)[-1])
    for prop in schema.get("properties", {}).values():
        out.extend(_refs(prop))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out.extend(_refs(schema[key]))
    return out


def _is_object(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" and bool(schema.get("properties"))


def _short_names(names: list[str]) -> dict[str, str]:
    last = [n.rsplit(".", 1)[-1] for n in names]
    return {n: s if last.count(s) == 1 else n for n, s in zip(names, last, strict=True)}


def _type(schema: dict[str, Any], definitions: dict[str, Any], short: dict[str, str]) -> str:
    """A type expression: `string`, `int`, `[T]` (list), `{T}` (map from string), a name."""
    ref = schema.get("$ref")
    if ref:
        name = ref.rsplit("/", 1)[-1]
        if name in short:
            return short[name]
        return _type(definitions[name], definitions, short)
    if schema.get("format") == "int-or-string" or schema.get("x-kubernetes-int-or-string"):
        return "dyn"
    kind = schema.get("type")
    if kind == "array":
        return f"[{_type(schema['items'], definitions, short)}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            return "{" + _type(extra, definitions, short) + "}"
        return "dyn"  # an object without properties (FieldsV1, RawExtension)
    if kind == "string":
        return {"byte": "bytes", "date-time": "timestamp", "date": "timestamp"}.get(
            schema.get("format", ""), "string"
        )
    return {"boolean": "bool", "integer": "int", "number": "double"}.get(kind or "", "dyn")


def main() -> None:
    folder = module_folder()
    swagger = json.loads((folder / SWAGGER).read_text())
    version = KUBERNETES_MODULE.split("@")[1]
    out = convert(swagger["definitions"], ROOTS, version)
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUTPUT} ({len(out['types'])} types) from {folder / SWAGGER}", file=sys.stderr)


if __name__ == "__main__":
    main()
