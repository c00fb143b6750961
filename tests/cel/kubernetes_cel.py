"""Kubernetes' own CEL, as an oracle: the Go program in tests/cel/k8scel (cel-go with the
CEL environment of k8s.io/apiserver, `pod` and `node` typed as ValidatingAdmissionPolicy
types them), built once with the machine's Go from the module proxy and cached outside the
repository, keyed by its source: `$POLICYEXT_K8SCEL_CACHE`, or `~/.cache/policyext/k8scel`.

    python -m tests.cel.kubernetes_cel 'pod.metadata.name'   # one expression, for a look
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.cel.kubernetes_schema import SWAGGER, module_folder

SOURCE = Path(__file__).resolve().parent / "k8scel"
CACHE_ENV = "POLICYEXT_K8SCEL_CACHE"


class BuildError(RuntimeError):
    """The Go program could not be built; the message says why."""


def go_available() -> bool:
    return shutil.which("go") is not None


def _cache_root() -> Path:
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "policyext" / "k8scel"


def _source_key() -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update((SOURCE / name).read_bytes())
    return digest.hexdigest()[:16]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_binary() -> Path:
    """The built program (built first if the cache lacks it; builds wait on a lock)."""
    if not go_available():
        raise BuildError("the `go` command is not on PATH")
    root = _cache_root()
    binary = root / _source_key() / "k8scel"
    if binary.exists():
        return binary
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / "build.lock"):
        if binary.exists():
            return binary
        staging = Path(tempfile.mkdtemp(prefix=".build.", dir=root))
        try:
            result = subprocess.run(
                ["go", "build", "-o", str(staging / "k8scel"), "."],
                cwd=SOURCE,
                capture_output=True,
                text=True,
                env={**os.environ, "CGO_ENABLED": "0"},
                check=False,
            )
            if result.returncode != 0:
                raise BuildError(f"go build failed:\n{result.stderr[-4000:]}")
            binary.parent.mkdir(parents=True, exist_ok=True)
            os.rename(staging / "k8scel", binary)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return binary


def swagger_path() -> Path:
    """Kubernetes' OpenAPI description, from the release the schema file was made from."""
    return module_folder() / SWAGGER


def evaluate(cases: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case ({"expr", "pod", "node"}) as Kubernetes compiles and evaluates it."""
    lines = "".join(json.dumps(c) + "\n" for c in cases)
    result = subprocess.run(
        [str(ensure_binary()), str(swagger_path())],
        input=lines,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise BuildError(f"k8scel failed:\n{result.stderr[-4000:]}")
    return [json.loads(line) for line in result.stdout.splitlines()]


if __name__ == "__main__":
    for answer in evaluate({"expr": e} for e in sys.argv[1:]):
        print(json.dumps(answer))
