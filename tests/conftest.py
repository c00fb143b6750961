"""Hypothesis profiles: `make test` and CI run the same examples every time (derandomized),
so a red build always means a change broke something; set HYPOTHESIS_PROFILE=explore (or
`long`, `soak`, which also scale the example counts) to search new random examples.

No profile has a per-example deadline: how long an example takes depends on how busy the
machine is, and speed is measured in bench/, never in a test."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("default", derandomize=True, print_blob=True, deadline=None)
for name in ("quick", "ci", "dev"):
    settings.register_profile(name, derandomize=True, print_blob=True, deadline=None)
for name in ("explore", "long", "soak"):
    settings.register_profile(name, derandomize=False, print_blob=True, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
