"""Issue 11 (security review): one test per finding, named after its item."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from shared import project_context as pc
from tests.bad_inputs import SLOW_REGEX_UNITS

# CPU seconds per megabyte a cleaning step may take; linear code stays far below it.
CPU_PER_MB = 1.5
MB = 1_000_000
CLEANING_STEPS: dict[str, Callable[[str], object]] = {
    "controls": pc._strip_controls,
    "markup": pc._strip_markup,
    "fence word": lambda t: pc._FENCE_WORD.sub("project data", t),
    "e-mail": lambda t: pc._EMAIL.sub("(e-mail removed)", t),
    "uuid": lambda t: pc._UUID.sub("(id removed)", t),
    "whitespace": lambda t: pc._WHITESPACE.sub(" ", t),
    "clean_text": lambda t: pc.clean_text(t, pc.LIMIT_DESCRIPTION),
    "grounding": pc.grounding_numbers,
}


@pytest.mark.parametrize("step_name", CLEANING_STEPS)
def test_item1_slow_regexes_every_cleaning_step_is_linear_on_1mb(step_name: str) -> None:
    step = CLEANING_STEPS[step_name]
    for unit_name, unit in SLOW_REGEX_UNITS.items():
        # Grow to 1 MB so a quadratic step fails at a small size instead of running for hours.
        for size in (16_000, 128_000, MB):
            text = unit * (size // len(unit))
            start = time.process_time()
            step(text)
            spent = time.process_time() - start
            budget = 0.02 + CPU_PER_MB * size / MB
            assert spent < budget, (f"{step_name} on {size} chars of {unit_name!r}: "
                                    f"{spent:.3f}s CPU, budget {budget:.3f}s")


def test_item1_slow_regexes_clean_text_truncates_before_cleaning() -> None:
    # A 1 MB description costs no more CPU than the 600 characters that can survive it.
    text = "<script>" * (MB // 8)
    start = time.process_time()
    cleaned = pc.clean_text(text, pc.LIMIT_DESCRIPTION)
    assert time.process_time() - start < 0.05
    assert "<" not in cleaned and "script" not in cleaned
    assert pc.clean_text("a" * MB + "@example.org", 50) == "a" * 49 + pc.ELLIPSIS
