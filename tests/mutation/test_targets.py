"""The list of what `make mutation` mutates stays true to the code: a module moved, a test
file renamed or a definition renamed would otherwise only show when someone runs it. And
the runner tells a mutant it can test from one that is not Python or that cosmic-ray
cannot make."""

from __future__ import annotations

from pathlib import Path

import pytest
from cosmic_ray.work_item import MutationSpec

from tests.mutation.run import ROOT, compiles, definitions
from tests.mutation.targets import TARGETS, Target


@pytest.mark.parametrize("target", TARGETS, ids=lambda target: target.name)
def test_every_target_names_a_module_its_tests_and_definitions_that_exist(target: Target) -> None:
    source = ROOT / target.path
    assert source.is_file()
    for test in target.tests:
        assert (ROOT / test.split("::")[0]).is_file(), test
    spans = definitions(source.read_text())
    assert [name for name in target.within if name not in spans] == []


def test_the_definitions_are_functions_classes_their_methods_and_the_modules_names() -> None:
    source = (
        "TABLE = (\n    1,\n    2,\n)\n"  # lines 1-4
        "LIMIT: int = 3\n"  # 5
        "a, b = 1, 2\n"  # 6: not one name
        "def f():\n    return 1\n"  # 7-8
        "class C:\n    X = 1\n    def m(self):\n        return 2\n"  # 9-12
    )

    assert definitions(source) == {
        "TABLE": (1, 4),
        "LIMIT": (5, 5),
        "f": (7, 8),
        "C": (9, 12),
        "C.m": (11, 12),
    }


@pytest.mark.parametrize(
    ("source", "operator", "made"),
    [
        ("x = 1\n", "core/NumberReplacer", True),
        (
            "try:\n    pass\nexcept (os.error, KeyError):\n    pass\n",
            "core/ExceptionReplacer",
            None,
        ),
    ],
    ids=["a number changed", "an exception named by attribute, which cosmic-ray cannot replace"],
)
def test_a_mutant_is_made_and_compiled_or_said_to_be_one_cosmic_ray_cannot_make(
    source: str, operator: str, made: bool | None
) -> None:
    mutation = MutationSpec(Path("m.py"), operator, 0, (1, 0), (1, 1))
    assert compiles(source, mutation) is made
