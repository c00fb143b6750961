"""some() and every() answer as numpy's any() and all() do, empty masks included."""

from __future__ import annotations

import numpy as np
import pytest

from policyext.policy.masks import every, some

MASKS = {
    "empty": np.zeros(0, np.bool_),
    "none set": np.zeros(500, np.bool_),
    "one set, last": np.arange(500) == 499,
    "all set": np.ones(500, np.bool_),
    "all but one": np.arange(500) != 0,
    "a view with a step": (np.arange(10) % 2 == 0)[::2],
    "numbers, one not zero": np.array([0.0, 0.0, 2.5]),
    "numbers, all zero": np.zeros(3),
}


@pytest.mark.parametrize("mask", MASKS.values(), ids=list(MASKS))
def test_some_and_every_answer_as_any_and_all(mask: np.ndarray) -> None:  # type: ignore[type-arg]
    assert some(mask) is bool(mask.any())
    assert every(mask) is bool(mask.all())
