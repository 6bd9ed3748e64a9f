"""Weak matches: passages whose fused score says the search found nothing close
(docs/benchmarks.md, "Weak matches").

A fused score is a share of the best possible reciprocal-rank sum (fusion.fuse): 1.0 when every
ranking put the passage first. Only hybrid retrieval fuses; one ranking alone gives raw scores
that are not shares, and labels nothing weak.
"""

from __future__ import annotations

from worker.pipeline.types import Retrieval

# Measured on dev + held-out, with and without an answer (bench/weak_matches.py,
# docs/benchmarks.md): the highest threshold per question language that labels at most 5% of
# the expected passages weak. An English question has two rankings: a passage only one of them
# found scores 0.5 at best, one both found 0.75 or more, and unanswerable questions often get
# only the first kind. A Czech question's four to six rankings spread the scores out.
WEAK_BELOW = {"en": 0.6, "cs": 0.425}


def is_weak(score: float, language: str = "en", mode: str = "hybrid") -> bool:
    """Whether a passage's fused score is below the weak-match threshold of the question's
    language (any language but Czech is searched as English is)."""
    return mode == "hybrid" and score < WEAK_BELOW["cs" if language == "cs" else "en"]


def all_weak(retrieval: Retrieval, language: str = "en", mode: str = "hybrid") -> bool:
    """Whether every passage given is a weak match (none at all counts too)."""
    return all(is_weak(p.score, language, mode) for p in retrieval.passages)
