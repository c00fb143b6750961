"""Every Markdown table of the docs ends where it is meant to: a table's last row followed
by a paragraph without a blank line swallows that paragraph into the row (the chart
README's alert table once did)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    REPO / "README.md",
    REPO / "charts" / "policyext" / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
]


def _glued(row: str, following: str) -> bool:
    """A row that is not closed, or that a line of text follows directly."""
    unclosed = not row.rstrip().endswith("|")
    return unclosed or bool(following.strip() and not following.startswith("|"))


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_each_table_is_followed_by_a_blank_line(page: Path) -> None:
    lines = page.read_text(encoding="utf-8").splitlines()
    fenced = False
    glued = []
    for number, (line, following) in enumerate(pairwise(lines), start=1):
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("|") and _glued(line, following):
            glued.append(f"{page.name}:{number}: {line[-60:]}")
    assert glued == []
