"""A project chart kept for a few seconds per token and project, in this web process.

The chart reads four app endpoints (up to 4 MB each) and recomputes nothing it can reuse: a
panel that redraws, or a person clicking again, gets the same chart without reading the app
again. Keyed by a hash of the token (never the token itself): the app answered with that
token's access, so nobody else's token is served from it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

CHART_CACHE_S = 10.0
MAX_CHARTS = 256

_charts: OrderedDict[tuple[str, str], tuple[float, dict[str, Any]]] = OrderedDict()
_lock = threading.Lock()


def cached_chart(token: str, project_id: str, build: Callable[[], dict[str, Any]]
                 ) -> dict[str, Any]:
    """build()'s chart, reused for CHART_CACHE_S for the same token and project."""
    key = (hashlib.sha256(token.encode()).hexdigest(), project_id)
    now = time.monotonic()
    with _lock:
        hit = _charts.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
    chart = build()  # outside the lock: one slow app read must not hold up other charts
    with _lock:
        _charts[key] = (now + CHART_CACHE_S, chart)
        _charts.move_to_end(key)
        while len(_charts) > MAX_CHARTS:
            _charts.popitem(last=False)
    return chart
