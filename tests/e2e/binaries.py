"""Builds etcd, kube-apiserver and kube-scheduler from their published Go modules, once.

Nothing here downloads a prebuilt binary: the Go toolchain of the machine compiles the
pinned releases from the module proxy into a cache outside the repository, keyed by the
versions, so later runs (and other worktrees) reuse them: `$POLICYEXT_E2E_CACHE/<versions>/`,
or `~/.cache/policyext/e2e/<versions>/`. The first build is slow (about 15 minutes on two
cores with a cold Go build cache); `python -m tests.e2e.binaries` does it ahead of the tests.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

log = logging.getLogger("policyext.e2e.binaries")

# The newest release the module proxy served that builds with the machine's Go 1.26
# toolchain (its go.mod asks for go 1.26.0). Bumping it rebuilds into a fresh cache folder.
KUBERNETES_VERSION = "v1.37.2"
# The etcd release Kubernetes v1.37 is tested with (build/dependencies.yaml, "etcd").
ETCD_VERSION = "v3.7.0"

CACHE_ENV = "POLICYEXT_E2E_CACHE"
COMPONENTS = ("etcd", "kube-apiserver", "kube-scheduler")
# The etcd server module holds the `etcd` main package; its own go.mod has replace
# directives too, which a consuming module ignores, so it is built the same way as Kubernetes.
ETCD_PACKAGE = "go.etcd.io/etcd/server/v3"
_STAGING_REPLACE = re.compile(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", re.MULTILINE)


class BuildError(RuntimeError):
    """A step of the build failed; the message names the step and its log file."""


@dataclasses.dataclass(frozen=True)
class Binaries:
    etcd: Path
    kube_apiserver: Path
    kube_scheduler: Path


def go_available() -> str | None:
    """The path of the `go` command, or None when the machine has no Go toolchain."""
    return shutil.which("go")


def cache_root() -> Path:
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "policyext" / "e2e"


def version_key() -> str:
    return f"kubernetes-{KUBERNETES_VERSION}_etcd-{ETCD_VERSION}"


def _binaries_in(folder: Path) -> Binaries:
    return Binaries(
        etcd=folder / "etcd",
        kube_apiserver=folder / "kube-apiserver",
        kube_scheduler=folder / "kube-scheduler",
    )


def _complete(folder: Path) -> bool:
    return all(os.access(folder / name, os.X_OK) for name in COMPONENTS)


def ensure_binaries() -> Binaries:
    """Returns the three binaries, building them first if the cache lacks them.

    Builds are serialised by a lock file, so concurrent test processes wait for one build
    instead of racing; the result appears under its final name only when complete.
    """
    root = cache_root()
    final = root / version_key()
    if _complete(final):
        return _binaries_in(final)
    if go_available() is None:
        raise BuildError("the `go` command is not on PATH: cannot build the e2e binaries")
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{version_key()}.lock"):
        if _complete(final):  # another process built them while this one waited
            return _binaries_in(final)
        _build_into(root, final)
    return _binaries_in(final)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("another process is building the e2e binaries; waiting for %s", path)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build_into(root: Path, final: Path) -> None:
    started = time.monotonic()
    staging = Path(tempfile.mkdtemp(prefix=f".{version_key()}.", dir=root))
    build_log = root / f"{version_key()}.build.log"
    log.info(
        "building Kubernetes %s and etcd %s into %s (log: %s); the first build takes a while",
        KUBERNETES_VERSION,
        ETCD_VERSION,
        final,
        build_log,
    )
    try:
        with build_log.open("w") as sink:
            builder = _Builder(staging, sink)
            builder.build_etcd()
            builder.build_kubernetes()
            builder.smoke_test()
        if final.exists():  # incomplete (a binary was deleted by hand): replace it whole
            shutil.rmtree(final)
        os.rename(staging / "bin", final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("e2e binaries ready in %s after %.0f s", final, time.monotonic() - started)


class _Builder:
    """Runs the go commands of one build in a scratch folder, logging to one file."""

    def __init__(self, workdir: Path, sink: TextIO) -> None:
        self.workdir = workdir
        self.bin = workdir / "bin"
        self.bin.mkdir()
        self.sink = sink
        self.env = _go_env()

    def build_etcd(self) -> None:
        module = self._module("etcd", {ETCD_PACKAGE: ETCD_VERSION}, {})
        self._go(module, "fetch modules for etcd", *_fetch_args(ETCD_PACKAGE))
        self._go(module, "build etcd", *_build_args(self.bin / "etcd", ETCD_PACKAGE))

    def build_kubernetes(self) -> None:
        replaces = _staging_replacements(self._kubernetes_gomod())
        module = self._module("kubernetes", {"k8s.io/kubernetes": KUBERNETES_VERSION}, replaces)
        ldflags = _version_ldflags(KUBERNETES_VERSION)
        for name in ("kube-apiserver", "kube-scheduler"):
            package = f"k8s.io/kubernetes/cmd/{name}"
            self._go(module, f"fetch modules for {name}", *_fetch_args(package))
            args = _build_args(self.bin / name, package, ldflags)
            self._go(module, f"build {name}", *args)

    def smoke_test(self) -> None:
        for name in COMPONENTS:
            result = subprocess.run(
                [str(self.bin / name), "--version"],
                capture_output=True,
                text=True,
                check=False,
                timeout=60,
            )
            if result.returncode != 0:
                raise BuildError(f"{name} --version failed: {result.stderr.strip()}")
            log.info("built %s", result.stdout.strip().splitlines()[0])

    def _kubernetes_gomod(self) -> str:
        scratch = self.workdir / "probe"
        scratch.mkdir()
        self._go(scratch, "init probe module", "mod", "init", "policyext.invalid/probe")
        output = self._go(
            scratch,
            "download Kubernetes go.mod",
            "mod",
            "download",
            "-json",
            f"k8s.io/kubernetes@{KUBERNETES_VERSION}",
        )
        gomod = Path(json.loads(output)["GoMod"])
        return gomod.read_text()

    def _module(self, name: str, requires: Mapping[str, str], replaces: Mapping[str, str]) -> Path:
        """A throwaway main module that only requires (and maybe replaces) the build's inputs."""
        folder = self.workdir / name
        folder.mkdir()
        self._go(folder, f"init {name} module", "mod", "init", f"policyext.invalid/{name}")
        edits = [f"-require={path}@{version}" for path, version in requires.items()]
        edits += [f"-replace={path}={path}@{version}" for path, version in replaces.items()]
        self._go(folder, f"pin {name} module", "mod", "edit", *edits)
        return folder

    def _go(self, folder: Path, step: str, *args: str) -> str:
        started = time.monotonic()
        log.info("e2e build: %s", step)
        print(f"\n### {step}: go {' '.join(args)}", file=self.sink, flush=True)
        with tempfile.TemporaryFile("w+") as stdout:
            process = subprocess.Popen(
                ["go", *args],
                cwd=folder,
                env=self.env,
                stdout=stdout,
                stderr=self.sink,
                stdin=subprocess.DEVNULL,
            )
            while True:
                try:
                    code = process.wait(timeout=60)
                    break
                except subprocess.TimeoutExpired:
                    log.info("e2e build: %s (%.0f s so far)", step, time.monotonic() - started)
                except BaseException:
                    process.kill()
                    process.wait()
                    raise
            stdout.seek(0)
            output = stdout.read()
        print(output, file=self.sink, flush=True)
        if code != 0:
            log_name = getattr(self.sink, "name", "the build log")
            raise BuildError(f"{step} failed (go exited {code}); see {log_name}")
        log.info("e2e build: %s done in %.0f s", step, time.monotonic() - started)
        return output


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GOTOOLCHAIN="local",  # the machine's Go; a toolchain download is not possible here
        GOFLAGS="-mod=mod",  # the scratch modules have no go.sum yet
        CGO_ENABLED="0",  # static binaries, and no C compiler in the loop
        GOWORK="off",
    )
    return env


def _fetch_args(package: str) -> list[str]:
    """Listing the dependencies downloads every module the build needs, timed on its own."""
    return ["list", "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", package]


def _build_args(output: Path, package: str, ldflags: Sequence[str] = ()) -> list[str]:
    flags = ["-s", "-w", *ldflags]  # no symbol tables: about a third smaller
    return ["build", "-trimpath", f"-ldflags={' '.join(flags)}", "-o", str(output), package]


def _staging_replacements(gomod: str) -> dict[str, str]:
    """Maps each staging module of Kubernetes vX.Y.Z to its published v0.Y.Z twin."""
    major, minor, patch = KUBERNETES_VERSION.lstrip("v").split(".")
    if major != "1":
        raise BuildError(f"staging modules are published as v0.Y.Z only for v1.Y.Z, not {major}")
    twin = f"v0.{minor}.{patch}"
    modules = _STAGING_REPLACE.findall(gomod)
    if not modules:
        raise BuildError("no staging replace directives found in the Kubernetes go.mod")
    return dict.fromkeys(modules, twin)


def _version_ldflags(version: str) -> list[str]:
    """What Kubernetes' own build stamps, so `--version` and the discovery API tell the truth."""
    major, minor, _ = version.lstrip("v").split(".")
    values = {
        "gitVersion": version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
    }
    return [
        f"-X {package}.{name}={value}"
        for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for name, value in values.items()
    ]


CONTROLLER_MANAGER = "kube-controller-manager"


def ensure_controller_manager() -> Path:
    """kube-controller-manager of the same release (the reports' test runs its garbage
    collector), built once beside the three binaries: the cached folder gains a file and
    nothing in it is replaced, so the others never rebuild for it."""
    folder = cache_root() / version_key()
    binary = folder / CONTROLLER_MANAGER
    if os.access(binary, os.X_OK):
        return binary
    ensure_binaries()
    if go_available() is None:
        raise BuildError("the `go` command is not on PATH: cannot build kube-controller-manager")
    with _locked(cache_root() / f"{version_key()}-{CONTROLLER_MANAGER}.lock"):
        if os.access(binary, os.X_OK):
            return binary
        staging = Path(tempfile.mkdtemp(prefix=f".{CONTROLLER_MANAGER}.", dir=cache_root()))
        try:
            log_path = cache_root() / f"{version_key()}-{CONTROLLER_MANAGER}.build.log"
            with log_path.open("w") as sink:
                builder = _Builder(staging, sink)
                replaces = _staging_replacements(builder._kubernetes_gomod())
                module = builder._module(
                    "kubernetes", {"k8s.io/kubernetes": KUBERNETES_VERSION}, replaces
                )
                package = f"k8s.io/kubernetes/cmd/{CONTROLLER_MANAGER}"
                builder._go(
                    module, f"fetch modules for {CONTROLLER_MANAGER}", *_fetch_args(package)
                )
                built = builder.bin / CONTROLLER_MANAGER
                ldflags = _version_ldflags(KUBERNETES_VERSION)
                builder._go(
                    module, f"build {CONTROLLER_MANAGER}", *_build_args(built, package, ldflags)
                )
            os.rename(built, binary)  # whole, or not there at all
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return binary


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tests.e2e.binaries`: build (or find) the binaries and print their folder."""
    del argv
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    binaries = ensure_binaries()
    print(binaries.etcd.parent)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
