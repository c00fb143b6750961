"""A folder laid out as kubelet projects a ConfigMap volume, and updated as kubelet does.

kubelet writes each version into a new hidden folder `..<timestamp>`, points a temporary
link at it, renames that link over `..data` (the one atomic step), and shows every key as
a link `KEY -> ..data/KEY`; then it removes the old folder.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from pathlib import Path

_versions = itertools.count(1)


def project(folder: Path, files: Mapping[str, str]) -> Path:
    """Make `folder` show exactly `files` (name -> content), as one atomic update."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "..data"
    old = Path(os.path.realpath(data)) if data.is_symlink() else None
    version = folder / f"..2026_11_30_00_00_00.{next(_versions)}"
    version.mkdir()
    for name, content in files.items():
        (version / name).write_text(content, encoding="utf-8")
    staging = folder / "..data_tmp"
    staging.symlink_to(version.name)
    staging.rename(data)
    for name in files:
        if not (folder / name).is_symlink():
            (folder / name).symlink_to(f"..data/{name}")
    for shown in folder.iterdir():
        if shown.is_symlink() and not shown.name.startswith("..") and shown.name not in files:
            shown.unlink()
    if old is not None:
        for leftover in old.iterdir():
            leftover.unlink()
        old.rmdir()
    return folder
