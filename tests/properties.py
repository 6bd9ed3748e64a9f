"""Seeded property checks reported as what they are: one test per property, many seeds inside."""

from __future__ import annotations

from collections.abc import Callable


def for_each_seed(seeds: int, check: Callable[[int], None]) -> None:
    """Run check(seed) for seeds 0..seeds-1; the first failure names its seed, so it can be
    replayed with random.Random(seed)."""
    for seed in range(seeds):
        try:
            check(seed)
        except AssertionError as exc:
            raise AssertionError(f"fails at seed {seed} of {seeds}: {exc}") from exc
