"""Hypothesis profiles.

- ``gate`` (the default, what ``make test`` and CI run): derandomized, so a given commit passes or
  fails the same way on every machine and every run; a red CI always names a change, never luck.
- ``explore`` (``make explore``): random seeds, to hunt for the cases the fixed seeds miss; run
  it (several times) before a change lands: a failure prints the example's blob to reproduce it,
  and Hypothesis's local example database replays it in later runs.
"""

import os

from hypothesis import settings

settings.register_profile("gate", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("VIGIL_HYPOTHESIS", "gate"))

