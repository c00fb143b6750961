"""The list of what `make mutation` mutates stays true to the code: a module moved, a test
file renamed or a definition renamed would otherwise only show when someone runs it."""

from __future__ import annotations

import pytest

from tests.mutation.run import ROOT, definitions
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
