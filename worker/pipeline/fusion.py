"""Merging rankings: reciprocal rank fusion, English slots, Czech twins, sections spread."""

from __future__ import annotations

from shared.passage import Passage


def to_czech_twins(ranked: list[tuple[str, float]], twins: dict[str, str]
                   ) -> list[tuple[str, float]]:
    """The ranking with each English interface text replaced by its Czech twin, at the
    better of the two places (a passage is listed once)."""
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for pid, score in ranked:
        pid = twins.get(pid, pid)
        if pid not in seen:
            seen.add(pid)
            out.append((pid, score))
    return out


def interleave(main: list[tuple[str, float]], side: list[tuple[str, float]], top_k: int,
               slots: int) -> list[tuple[str, float]]:
    """Language-aware fusion: in every run of top_k places, the last `slots` go to the best
    not yet placed passages of `side` (English pages found across languages), the others to
    `main` (the ranking of the question's own wording), so neither crowds the other out."""
    per = max(1, top_k - slots)
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    lists, pos = (main, side), [0, 0]
    while pos[0] < len(main) or pos[1] < len(side):
        for which, count in ((0, per), (1, slots)):
            taken = 0
            while taken < count and pos[which] < len(lists[which]):
                pid, score = lists[which][pos[which]]
                pos[which] += 1
                if pid not in seen:
                    seen.add(pid)
                    out.append((pid, score))
                    taken += 1
    return out


def spread_sections(ranked: list[tuple[str, float]], by_id: dict[str, Passage], per: int
                    ) -> list[tuple[str, float]]:
    """The ranking with each section's pieces beyond the first `per` moved after every
    section's first `per` pieces, order otherwise kept."""
    head: list[tuple[str, float]] = []
    tail: list[tuple[str, float]] = []
    seen: dict[tuple[str, str], int] = {}
    for pid, score in ranked:
        p = by_id.get(pid)
        key = (p.source, p.section) if p is not None else (pid, "")
        seen[key] = seen.get(key, 0) + 1
        (head if seen[key] <= per else tail).append((pid, score))
    return head + tail


def fuse(rankings: list[list[tuple[str, float]]], k: int = 60,
         weights: list[float] | None = None, order_k: int | None = None
         ) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: sum of weight/(k + rank) over the rankings, best first, as a
    share of the best possible sum (first in every ranking = 1.0), so that a score means the
    same whatever number of rankings a question's language and translation bring. With
    `order_k`, the list is ordered by the same sum at that k instead (a small k lets one
    ranking's first place count), the scores staying the shares at `k`."""
    ordering = k if order_k is None else order_k
    scores: dict[str, float] = {}
    order: dict[str, float] = {}
    total = 0.0
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[n]
        total += weight / (k + 1)
        for rank, (pid, _score) in enumerate(ranking, start=1):
            scores[pid] = scores.get(pid, 0.0) + weight / (k + rank)
            order[pid] = order.get(pid, 0.0) + weight / (ordering + rank)
    return sorted(((pid, s / total) for pid, s in scores.items()),
                  key=lambda kv: (-order[kv[0]], kv[0]))
