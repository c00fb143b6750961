"""Mutation testing of the modules that decide what kube-scheduler is told (`make mutation`).

    python -m tests.mutation                     # every target of targets.py
    python -m tests.mutation store statuses      # some of them
    python -m tests.mutation --again store       # only the last run's survivors, tested anew

For each target, cosmic-ray writes one mutant at a time into the source file itself (so the
servers the tests start as processes of their own run the mutant too), runs the target's
test selection, and puts the file back. A mutant the tests fail on is killed; one they pass
on survived: either a test is missing, or the mutant behaves as the original (equivalent),
which docs/testing.md then explains. The sessions (`.mutation/NAME.sqlite`) are resumed when
a run is stopped and started again on the same source; a changed source or filter starts
anew. Each target's survivors, with their diffs, are written to
`.mutation/NAME.survivors.txt`.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cosmic_ray.commands.init import init
from cosmic_ray.mutating import mutate_and_test, mutate_code
from cosmic_ray.plugins import get_operator
from cosmic_ray.work_db import WorkDB, WorkResultStorage, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

from tests.mutation.targets import TARGETS, Target

ROOT: Final = Path(__file__).resolve().parents[2]
WORK: Final = ROOT / ".mutation"

# Operators left out of every run: a mutant of each kind of change, not of every operator.
# An arithmetic or bitwise operator is replaced by + - * / | & (not also by **, //, %, <<,
# >>, ^: more of the same, each a full test run); `is`/`is not` only by each other (`is None`
# as `== None` is the same test); a decorator removed breaks every use, which the tests
# kill without telling anything (the variable operators make nothing without arguments,
# and are named here so that a configuration giving them some does not bring them in).
EXCLUDED: Final = (
    r"core/ReplaceBinaryOperator_\w+_(Pow|FloorDiv|Mod|LShift|RShift|BitXor)$",
    r"core/ReplaceComparisonOperator_(Eq|NotEq|Lt|LtE|Gt|GtE)_(Is|IsNot)$",
    r"core/ReplaceComparisonOperator_(Is|IsNot)_(Eq|NotEq|Lt|LtE|Gt|GtE)$",
    r"core/VariableReplacer$",
    r"core/VariableInserter$",
    r"core/RemoveDecorator$",
)


# set in the environment of every test run (and so of the servers it starts, which get the
# test's environment less POLICYEXT_*): a process still holding it once its run has ended
# is a leftover, e.g. a server started by a test that the time limit stopped
MARK: Final = "MUTATION_RUN"


def stop_leftovers(token: str) -> None:
    """Kill every process of this run still alive after its test command ended."""
    needle = f"{MARK}={token}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):  # gone meanwhile, or not ours to read
            continue


@dataclass(frozen=True)
class Tally:
    generated: int
    killed: int
    survived: int
    timed_out: int
    incompetent: int
    pending: int


def tests_of(target: Target) -> list[str]:
    """The tests of one target: stop at the first failure, no e2e, no cache written."""
    return [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "not e2e",
        *target.tests,
    ]


def fingerprint(target: Target) -> str:
    """What a session's mutants depend on: the source and the filters. Not the tests: a test
    added kills more, never fewer (`--again` tests the survivors with it)."""
    digest = hashlib.sha256((ROOT / target.path).read_bytes())
    digest.update(repr((target.within, target.operators, EXCLUDED)).encode())
    return digest.hexdigest()


def definitions(source: str) -> dict[str, tuple[int, int]]:
    """The line span of every function and class by qualified name (`Class.method`), and
    of every name the module assigns (a table such as statuses' `_MALFORMED`)."""
    spans: dict[str, tuple[int, int]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                spans[name] = (child.lineno, child.end_lineno or child.lineno)
                visit(child, f"{name}.")

    tree = ast.parse(source)
    visit(tree, "")
    for statement in tree.body:
        assigned = (
            statement.targets
            if isinstance(statement, ast.Assign)
            else [statement.target]
            if isinstance(statement, ast.AnnAssign)
            else []
        )
        for target in assigned:
            if isinstance(target, ast.Name):
                spans[target.id] = (statement.lineno, statement.end_lineno or statement.lineno)
    return spans


def skip(db: WorkDB, job_id: str, why: str) -> None:
    db.set_result(job_id, WorkResult(output=why, worker_outcome=WorkerOutcome.SKIPPED))


def annotations(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the type annotations are (from, to as line and column): with `from __future__
    import annotations` they are never evaluated, so a mutant of one (`str | None` as
    `str & None`) cannot change what the module does."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        found: list[ast.expr | None] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.returns)
        elif isinstance(node, ast.arg | ast.AnnAssign):
            found.append(node.annotation)
        for a in found:
            if a is not None and a.end_lineno is not None and a.end_col_offset is not None:
                spans.append(((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset)))
    return spans


def start(target: Target, db: WorkDB) -> None:
    """A new session: every mutant of the module."""
    init([Path(target.path)], db, {})


def leave_out(target: Target, db: WorkDB) -> None:
    """Mark skipped the mutants the filters leave out (the same each time it runs)."""
    source = (ROOT / target.path).read_text()
    spans = definitions(source)
    unknown = [name for name in target.within if name not in spans]
    if unknown:
        raise SystemExit(f"{target.name}: {target.path} defines no {', '.join(unknown)}")
    within = [spans[name] for name in target.within]
    typed = annotations(source)
    excluded = re.compile("|".join(EXCLUDED))
    only = re.compile(target.operators) if target.operators else None
    pending = {item.job_id for item in db.pending_work_items}
    for item in db.work_items:
        (mutation,) = item.mutations
        line = mutation.start_pos[0]
        if excluded.match(mutation.operator_name):
            skip(db, item.job_id, "operator left out of every run")
        elif only is not None and not only.match(mutation.operator_name):
            skip(db, item.job_id, "operator left out of this target")
        elif within and not any(first <= line <= last for first, last in within):
            skip(db, item.job_id, "outside the definitions of this target")
        elif any(a <= tuple(mutation.start_pos) < b for a, b in typed):
            skip(db, item.job_id, "inside a type annotation")
        elif item.job_id in pending:
            made = compiles(source, mutation)
            if made is None:
                skip(db, item.job_id, "cosmic-ray cannot make it (its operator fails on this code)")
            elif not made:
                skip(db, item.job_id, "not Python (e.g. the * of keyword-only arguments as -)")


def compiles(source: str, mutation: Any) -> bool | None:
    """Whether the mutant is Python at all: one that is not would fail every test. None
    when cosmic-ray cannot make it: its exception replacer fails on a clause that names
    an exception by attribute (`except (msgspec.DecodeError, KeyError)`), as of 8.7."""
    operator = get_operator(mutation.operator_name)(**mutation.operator_args)
    try:
        mutated = mutate_code(source, operator, mutation.occurrence)
    except AttributeError:
        return None
    try:
        compile(mutated or source, "<mutant>", "exec")
    except SyntaxError:
        return False
    return True


def baseline(target: Target) -> float:
    """Run the selection on the unchanged source: it must pass, or no mutant means anything.
    Returns how long it took, from which each mutant's time limit is set."""
    began = time.monotonic()
    run = subprocess.run(tests_of(target), check=False, cwd=ROOT, capture_output=True, text=True)
    if run.returncode != 0:
        sys.stdout.write(run.stdout[-4000:])
        raise SystemExit(f"{target.name}: the tests fail on the unchanged source")
    return time.monotonic() - began


def tally(db: WorkDB) -> Tally:
    counts = {"killed": 0, "survived": 0, "timed_out": 0, "incompetent": 0}
    skipped = 0
    for _, result in db.completed_work_items:
        if result.worker_outcome == WorkerOutcome.SKIPPED:
            skipped += 1
        elif result.test_outcome == TestOutcome.SURVIVED:
            counts["survived"] += 1
        elif result.output == "timeout":
            counts["timed_out"] += 1
        elif result.test_outcome == TestOutcome.KILLED:
            counts["killed"] += 1
        else:  # no mutation possible, or the mutation itself failed
            counts["incompetent"] += 1
    generated = db.num_work_items - skipped
    return Tally(generated=generated, pending=db.num_work_items - db.num_results, **counts)


def survivors(db: WorkDB) -> Iterator[tuple[Any, WorkResult]]:
    found = [
        (item, result)
        for item, result in db.completed_work_items
        if result.worker_outcome == WorkerOutcome.NORMAL
        and result.test_outcome == TestOutcome.SURVIVED
    ]
    yield from sorted(found, key=lambda pair: (pair[0].mutations[0].start_pos, pair[0].job_id))


def write_survivors(target: Target, db: WorkDB) -> Path:
    out = WORK / f"{target.name}.survivors.txt"
    parts = []
    for item, result in survivors(db):
        (mutation,) = item.mutations
        line, column = mutation.start_pos
        parts.append(
            f"## {target.path}:{line}:{column} {mutation.operator_name} "
            f"(occurrence {mutation.occurrence}, in {mutation.definition_name})\n{result.diff}\n"
        )
    out.write_text("".join(parts))
    return out


def forget_survivors(db: WorkDB) -> int:
    """Mark the survivors pending again (after tests were added for them)."""
    again = [item.job_id for item, _ in survivors(db)]
    if again:
        with db._session_maker.begin() as session:  # cosmic-ray has no public call for it
            session.query(WorkResultStorage).where(WorkResultStorage.job_id.in_(again)).delete()
    return len(again)


def run_target(target: Target, again: bool) -> Tally:
    WORK.mkdir(exist_ok=True)
    session = WORK / f"{target.name}.sqlite"
    stamp = WORK / f"{target.name}.fingerprint"
    current = fingerprint(target)
    if session.exists() and (not stamp.exists() or stamp.read_text() != current):
        session.unlink()  # another source or filter: the old results say nothing
    fresh = not session.exists()
    path = ROOT / target.path
    original = path.read_bytes()
    with use_db(str(session)) as db:
        if fresh:
            start(target, db)
            stamp.write_text(current)
        elif again:
            print(f"{target.name}: {forget_survivors(db)} survivors to test again", flush=True)
        leave_out(target, db)
        pending = sorted(db.pending_work_items, key=lambda item: item.mutations[0].start_pos)
        if pending:
            took = baseline(target)
            limit = max(60.0, took * 3)
            command = shlex.join(tests_of(target))
            token = os.environ[MARK] = uuid.uuid4().hex
            print(f"{target.name}: {len(pending)} mutants to test, {took:.0f} s each")
            try:
                for done, item in enumerate(pending, 1):
                    result = mutate_and_test(item.mutations, command, limit)
                    stop_leftovers(token)
                    db.set_result(item.job_id, result)
                    (mutation,) = item.mutations
                    print(
                        f"  {done}/{len(pending)} line {mutation.start_pos[0]} "
                        f"{mutation.operator_name.removeprefix('core/')}: "
                        f"{(result.test_outcome or result.worker_outcome).value}",
                        flush=True,
                    )
            finally:  # whatever stopped the run, the source is the one it found
                if path.read_bytes() != original:
                    path.write_bytes(original)
                stop_leftovers(token)
        counts = tally(db)
        report = write_survivors(target, db)
    print(f"{target.name}: {counts} -> {report.relative_to(ROOT)}", flush=True)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__)
    parser.add_argument("names", nargs="*", help="targets to run (default: all)")
    parser.add_argument("--again", action="store_true", help="test the survivors anew")
    args = parser.parse_args(argv)
    by_name = {target.name: target for target in TARGETS}
    unknown = [name for name in args.names if name not in by_name]
    if unknown:
        parser.error(f"no target {', '.join(unknown)} (known: {', '.join(by_name)})")
    # a stop asked for by a signal unwinds like Ctrl-C: the mutated file is put back
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    results = {name: run_target(by_name[name], args.again) for name in args.names or by_name}
    print("\n| target | generated | killed | survived | timed out | incompetent | pending |")
    print("|---|---|---|---|---|---|---|")
    for name, t in results.items():
        print(
            f"| {name} | {t.generated} | {t.killed} | {t.survived} | {t.timed_out} "
            f"| {t.incompetent} | {t.pending} |"
        )
    return 0
