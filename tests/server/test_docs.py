"""docs/extender-api.md shows the bytes the server really sends."""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import re
from pathlib import Path

import pytest

from policyext.cli import main
from tests.server.harness import REPO
from tests.server.kube import fixture_bytes

DOC = (REPO / "docs" / "extender-api.md").read_text(encoding="utf-8")
SHOWN_VERBATIM = [
    "filter-names.reply.json",
    "prioritize-names.reply.json",
    "bind.reply.json",
    "preempt-meta-victims.reply.json",
    "preempt-victims.reply.json",
]


@pytest.mark.parametrize("name", SHOWN_VERBATIM)
def test_the_api_document_shows_each_reply_fixture_byte_for_byte(name: str) -> None:
    assert fixture_bytes(name).decode().strip() in DOC


def test_the_api_document_shows_the_filter_request_fixture_whole() -> None:
    assert fixture_bytes("filter-names.request.json").decode().strip() in DOC


def _serve_flags() -> list[str]:
    """The flags `policyext serve --help` lists, so that a new one needs its documentation."""
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
        main(["serve", "--help"])
    return sorted(set(re.findall(r"^\s+(--[a-z][a-z-]+)", out.getvalue(), re.M)) - {"--help"})


def test_serve_has_the_flags_the_document_expects() -> None:
    assert len(_serve_flags()) >= 11


@pytest.mark.parametrize("flag", _serve_flags())
def test_the_api_document_describes_every_serve_flag_and_its_variable(flag: str) -> None:
    variable = "POLICYEXT_" + flag.removeprefix("--").upper().replace("-", "_")
    assert f"`{flag} " in DOC or f"`{flag}`" in DOC  # with its value, or a switch
    assert f"`{variable}`" in DOC


# --- the policy examples of the docs -------------------------------------------------------

POLICIES_DOC = (REPO / "docs" / "policies.md").read_text(encoding="utf-8")
# the examples that show mistakes on purpose, by the file the text saves each as
SHOWN_WRONG = {"rules/zone-spread.yaml", "rules/more.yaml", "rules/spot.yaml"}
_SAVED_AS = re.compile(r"`(rules/[^`]+\.yaml)`[^`\n]*:\s*\n\s*```yaml\n", re.S)


def _policy_examples() -> list[tuple[str, str | None, str]]:
    """(document, the file the text saves it as, the YAML) for every ```yaml block of the
    docs that holds a SchedulingPolicy."""
    found = []
    for path in [REPO / "README.md", REPO / "charts/policyext/README.md", *REPO.glob("docs/*.md")]:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"```yaml\n(.*?)```", text, re.S):
            if not re.search(r"^kind: SchedulingPolicy$", match.group(1), re.M):
                continue
            saved = _SAVED_AS.search(text, max(0, match.start() - 200), match.start() + 8)
            name = saved.group(1) if saved and saved.end() == match.start() + 8 else None
            found.append((str(path.relative_to(REPO)), name, match.group(1)))
    return found


def _run(argv: list[str]) -> tuple[int, str]:
    """`policyext ARGV` in this process: the status, and what it prints (stderr, then
    stdout, as a terminal shows a run that writes one, then the other)."""
    with (
        contextlib.redirect_stdout(io.StringIO()) as out,
        contextlib.redirect_stderr(io.StringIO()) as err,
    ):
        code = main(argv)
    return code, err.getvalue() + out.getvalue()


def test_the_docs_show_policy_examples_and_name_those_that_are_wrong_on_purpose() -> None:
    examples = _policy_examples()
    assert len(examples) >= 5
    assert {name for _, name, _ in examples if name in SHOWN_WRONG} == SHOWN_WRONG


@pytest.mark.parametrize(
    "example",
    [e for e in _policy_examples() if e[1] not in SHOWN_WRONG],
    ids=lambda e: f"{e[0]}:{e[1] or 'unnamed'}",
)
def test_every_policy_the_docs_show_loads_without_a_problem_or_a_warning(
    tmp_path: Path, example: tuple[str, str | None, str]
) -> None:
    path = tmp_path / "example.yaml"
    path.write_text(example[2])
    code, printed = _run(["validate", "--strict", str(path)])
    assert code == 0, printed
    assert "warning" not in printed


def _section(start: str, end: str) -> str:
    return POLICIES_DOC.split(start, 1)[1].split(end, 1)[0]


def _saved_files(text: str) -> dict[str, str]:
    return {
        name: POLICIES_DOC[m.end() :].split("```", 1)[0]
        for m in _SAVED_AS.finditer(POLICIES_DOC)
        if (name := m.group(1)) in text
    }


def _consoles_and_fixes(text: str) -> list[tuple[str, str]]:
    """The console blocks and the tables of fixes of a passage, in order: ("console", the
    output shown) or ("fix", the table)."""
    found = []
    pattern = (
        r"```console\n\$ policyext validate rules/\n(.*?)```|(\| file \| was \| now \|.*?)\n\n"
    )
    for match in re.finditer(pattern, text, re.S):
        found.append(("console", match.group(1)) if match.group(1) else ("fix", match.group(2)))
    return found


def _apply(folder: Path, table: str) -> None:
    """Each row of a table of fixes: `was` replaced by `now` in the file (it must be there
    once), or, for a `now` of "(deleted...)", the file cut from `was` on."""
    for row in table.splitlines()[2:]:
        file, was, now = (cell.strip().strip("`") for cell in row.strip("|").split(" | "))
        path = folder / file
        text = path.read_text()
        assert text.count(was) == 1, f"{was!r} is not once in {file}"
        if now.startswith("(deleted"):
            path.write_text(text[: text.index(was)])
        else:
            path.write_text(text.replace(was, now))


def _follow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passage: str) -> int:
    """Saves a passage's files, then runs each `validate` it shows and applies each table of
    fixes, in order; returns how many runs it checked."""
    monkeypatch.chdir(tmp_path)
    for name, content in _saved_files(passage).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    runs = 0
    for kind, shown in _consoles_and_fixes(passage):
        if kind == "fix":
            _apply(tmp_path, shown)
            continue
        code, printed = _run(["validate", "rules/"])
        assert printed == shown
        assert code == (1 if "found" in shown.splitlines()[-1] else 0)
        runs += 1
    return runs


def test_the_worked_example_of_fixing_errors_prints_what_it_shows_at_each_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passage = _section("Two files with mistakes of every kind:", "Duplicate rule names")
    assert _follow(tmp_path, monkeypatch, passage) == 4
    # the last run is clean: every fix is in the tables, none is left to the reader
    code, printed = _run(["validate", "--strict", "rules/"])
    assert code == 0 and "warning" not in printed


def test_the_warnings_example_prints_what_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passage = _section("## Warnings:", "## Errors")
    assert _follow(tmp_path, monkeypatch, passage) == 1


# --- claims of the docs that the code or the text can check --------------------------------

ALL_DOCS = [REPO / "README.md", REPO / "charts/policyext/README.md", *REPO.glob("docs/*.md")]


@pytest.mark.parametrize("doc", ALL_DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_table_ends_before_the_text_that_follows_it(doc: Path) -> None:
    # a line of text right after a table's last row is read as part of that row
    lines = doc.read_text(encoding="utf-8").splitlines()
    fence = False
    for number, (line, after) in enumerate(itertools.pairwise(lines), start=1):
        fence ^= line.startswith("```")
        if not fence and line.startswith("|") and after.strip() and not after.startswith("|"):
            pytest.fail(f"{doc.name}:{number + 1}: text right after a table row: {after!r}")


def test_the_chart_readme_gives_the_reload_times_the_api_document_gives() -> None:
    chart = (REPO / "charts/policyext/README.md").read_text(encoding="utf-8")
    api = DOC.split("## Reloading policies", 1)[1].split("\n## ", 1)[0]
    files, configmap = api.split("- **A ConfigMap**", 1)
    for figure, where in (("within about 1 s", files), ("within about 50 ms", configmap)):
        assert figure in " ".join(where.split())
        assert " ".join(chart.split()).count(figure) == 1


def _policy_path_flags() -> dict[str, list[argparse.Action]]:
    """For each command, the options that take policy files (`--rules`, `--current`) and its
    positional paths."""
    from policyext.cli.command import parser

    [commands] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    found: dict[str, list[argparse.Action]] = {}
    for name, sub in commands.choices.items():
        for action in sub._actions:
            if {"--rules", "--current"} & set(action.option_strings) or action.dest == "paths":
                found.setdefault(name, []).append(action)
    return found


def test_every_command_that_reads_policy_files_takes_them_comma_separated() -> None:
    # README.md and policies.md: "as a repeated flag or comma-separated, in any mix"
    flags = _policy_path_flags()
    assert sorted(flags) == ["explain", "serve", "simulate", "test", "validate", "webhook"]
    for command, actions in flags.items():
        for action in actions:
            namespace = argparse.Namespace()
            if action.type is not None:  # `extend` with a type that splits
                assert action.type("a.yaml,more/") == ["a.yaml", "more/"], command  # type: ignore[operator]
                continue
            action(argparse.ArgumentParser(), namespace, ["a.yaml,more/", "b.yaml"])
            assert getattr(namespace, action.dest) == ["a.yaml", "more/", "b.yaml"], command
