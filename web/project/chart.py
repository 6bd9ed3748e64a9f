"""The panel's project chart, from the same app data and rules as the model's project
block."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared.method import (
    Fuzzy,
)
from web.project.cleaning import (
    LIMIT_PROJECT_NAME,
    LIMIT_UNIT,
    clean_text,
    hidden_user_ids,
    number,
    opinion_values,
    person_name,
    stored_triangle,
)
from web.project.context import MAX_LISTED, recompute


def _triangle_json(f: Fuzzy | None) -> dict[str, float] | None:
    return None if f is None else {"lower": f.lower, "peak": f.peak, "upper": f.upper,
                                   "centroid": f.centroid}


def chart_data(project: Mapping[str, Any], opinions: Sequence[Mapping[str, Any]],
               result: Mapping[str, Any] | None,
               members: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The panel's project chart, from the same app data and rules as the model's project block:
    visible experts' triangles, mean, median, best compromise and maximum error."""
    hidden_ids = hidden_user_ids(members)
    visible = [o for o in opinions if str(o.get("user_id")) not in hidden_ids]
    # Only what is shown is cleaned (names of the first MAX_LISTED; positions are not shown),
    # and a stored result needs no recomputation: 2,000 opinions cost what 50 do.
    experts = []
    for opinion in visible[:MAX_LISTED]:
        values = opinion_values(opinion)
        if values is not None:
            experts.append({"name": person_name(opinion), **(_triangle_json(values) or {})})
    result_map = result if isinstance(result, Mapping) else None
    if result_map is not None:
        figures = {name: stored_triangle(result_map, name)
                   for name in ("best_compromise", "arithmetic_mean", "median")}
        max_error = number(result_map.get("max_error"))
        origin = "stored"
    else:
        computed = recompute(opinions)
        figures = {"best_compromise": computed.best_compromise if computed else None,
                   "arithmetic_mean": computed.mean if computed else None,
                   "median": computed.median if computed else None}
        max_error = computed.max_error if computed else None
        origin = "computed" if computed else "none"
    return {
        "name": clean_text(project.get("name"), LIMIT_PROJECT_NAME),
        "scale": {"min": number(project.get("scale_min")), "max": number(project.get("scale_max")),
                  "unit": clean_text(project.get("scale_unit"), LIMIT_UNIT)},
        "experts": experts,
        "more_experts": max(0, len(visible) - MAX_LISTED),
        "hidden": len(opinions) - len(visible),
        "best_compromise": _triangle_json(figures["best_compromise"]),
        "mean": _triangle_json(figures["arithmetic_mean"]),
        "median": _triangle_json(figures["median"]),
        "max_error": max_error,
        "result": origin,
    }
