"""What the benchmark pages say about the machine and the interpreter they ran on."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

from bench.report import describe_machine, describe_python
from bench.targets import POLICYEXT, LaunchSpec


def test_the_interpreter_is_named_with_its_version_and_how_libpython_is_linked() -> None:
    described = describe_python()
    assert described.startswith(f"{platform.python_implementation()} {platform.python_version()} (")
    assert described.endswith(("shared libpython)", "libpython linked in)"))


def test_the_machine_description_carries_the_interpreter() -> None:
    assert describe_machine()["python"] == describe_python()


def test_policyext_is_served_by_the_interpreter_the_benchmark_runs_on() -> None:
    spec = LaunchSpec(1234, Path("snapshot.json"), Path("policy.json"), Path("log"))
    argv = POLICYEXT.argv(spec)
    assert argv[:4] == [sys.executable, "-m", "policyext.cli", "serve"]
    assert "127.0.0.1:1234" in argv
