"""The quick start's two commands install what each needs: `make run` the runtime
dependencies alone, `make test` the test, dev and bench extras on top (once), and
`make venv` everything. Read from `make -n` (what make would run) on a fresh directory."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tests.cli.run import REPO

EXTRAS = "-e '.[test,dev,bench]'"


def _planned(target: str, venv: Path) -> list[str]:
    done = subprocess.run(
        ["make", "-n", target, f"VENV={venv}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if "pip install" in line]


def _stamp(venv: Path, name: str) -> None:
    """A stamp newer than setup.cfg and pyproject.toml, as an install leaves it."""
    venv.mkdir(exist_ok=True)
    stamp = venv / name
    stamp.touch()
    later = time.time() + 3600
    os.utime(stamp, (later, later))


def test_make_run_installs_the_runtime_dependencies_without_the_extras(tmp_path: Path) -> None:
    installs = _planned("run", tmp_path / "venv")
    assert any(line.endswith("pip install --quiet -c constraints.txt -e .") for line in installs), (
        installs
    )
    assert not any("[" in line for line in installs), installs


def test_make_test_after_make_run_installs_only_the_extras(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _stamp(venv, ".installed-run")
    installs = _planned("test", venv)
    assert installs == [f"{venv}/bin/pip install --quiet -c constraints.txt {EXTRAS}"]


def test_make_run_after_make_test_installs_nothing(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _stamp(venv, ".installed-run")
    _stamp(venv, ".installed-test")
    assert _planned("run", venv) == []
    assert _planned("test", venv) == []


def test_make_venv_installs_everything(tmp_path: Path) -> None:
    installs = _planned("venv", tmp_path / "venv")
    assert any(line.endswith(EXTRAS) for line in installs), installs
