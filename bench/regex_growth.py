"""Find super-linear inputs for the project-context cleaner: double each input, compare CPU.

    .venv/bin/python -m bench.regex_growth

Each cleaning step gets repeats of every unit in tests/bad_inputs.SLOW_REGEX_UNITS (built from
the patterns' own literals) at 8 KB and 16 KB; a step whose CPU time grows ~4x is quadratic.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from shared.project_grounding import project_grounding
from tests.bad_inputs import SLOW_REGEX_UNITS
from web.project import cleaning as pc

STEPS: dict[str, Callable[[str], object]] = {
    "controls": pc._strip_controls,
    "markup": pc._strip_markup,
    "fence word": lambda t: pc._FENCE_WORD.sub("x", t),
    "e-mail": lambda t: pc._EMAIL.sub("x", t),
    "uuid": lambda t: pc._UUID.sub("x", t),
    "whitespace": lambda t: pc._WHITESPACE.sub(" ", t),
    "clean_text": lambda t: pc.clean_text(t, pc.LIMIT_DESCRIPTION),
    "grounding": project_grounding,
}


def cpu(step: Callable[[str], object], text: str) -> float:
    """CPU seconds one call takes in this process."""
    start = time.process_time()
    step(text)
    return time.process_time() - start


def main() -> None:
    """Print each step and unit with its time at 8 KB and 16 KB and the growth ratio."""
    for step_name, step in STEPS.items():
        for unit_name, unit in SLOW_REGEX_UNITS.items():
            small, large = (cpu(step, unit * (n // len(unit))) for n in (8_000, 16_000))
            flag = "  QUADRATIC?" if large > 0.02 and large > 2.5 * small else ""
            print(f"{step_name:11} {unit_name:34} {small:.4f}s -> {large:.4f}s "
                  f"x{large / max(small, 1e-6):.1f}{flag}")


if __name__ == "__main__":
    main()
