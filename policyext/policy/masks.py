"""Questions asked of a bool mask several times per rule on every request.

`ndarray.any()` and `.all()` go through numpy's Python-level reduction wrapper (about 1.8
µs each on this project's machine); counting the set elements is one C loop, and a filter
over 500 nodes asks these about thirty times. `np.count_nonzero` itself is a Python wrapper
(its dispatch for array-likes) around that loop: 0.5 µs against 0.14 µs for the loop alone,
which every numpy 2 release exports from `numpy._core.multiarray` (the public name stays the
fallback).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

try:
    from numpy._core.multiarray import count_nonzero as _count
except ImportError:  # pragma: no cover - a numpy that moved it: the public wrapper
    _count = np.count_nonzero

Mask = npt.NDArray[np.bool_]


def count(mask: npt.NDArray[Any]) -> int:
    """How many elements are set (not zero)."""
    return int(_count(mask))


def some(mask: npt.NDArray[Any]) -> bool:
    """Whether any element is set (not zero, for an array of numbers)."""
    return bool(_count(mask))


def every(mask: Mask) -> bool:
    """Whether every element is set (an empty mask: True, as `all()` says)."""
    return int(_count(mask)) == mask.size
