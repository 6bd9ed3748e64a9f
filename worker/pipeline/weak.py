"""Weak matches: passages whose fused score says the search found nothing close (issue 24).

A fused score is a share of the best possible reciprocal-rank sum (fusion.fuse): 1.0 when every
ranking put the passage first. Only hybrid retrieval fuses; one ranking alone gives raw scores
that are not shares, and labels nothing weak.
"""

from __future__ import annotations

from worker.pipeline.types import Retrieval

# Measured on dev + held-out, with and without an answer (bench/weak_matches.py,
# docs/benchmarks.md): the highest threshold that labels at most 5% of the expected passages.
WEAK_BELOW = 0.5


def is_weak(score: float, mode: str = "hybrid") -> bool:
    """Whether a passage's fused score is below the weak-match threshold."""
    return mode == "hybrid" and score < WEAK_BELOW


def all_weak(retrieval: Retrieval, mode: str = "hybrid") -> bool:
    """Whether every passage given is a weak match (none at all counts too)."""
    return all(is_weak(p.score, mode) for p in retrieval.passages)
