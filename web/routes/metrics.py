"""GET /metrics: Prometheus text of the web tier (all gunicorn workers summed) plus queue depth
and in-flight slots. In the production profile only a scrape from this host's loopback that
came through no proxy gets it; everyone else gets 404."""

from __future__ import annotations

from flask import Blueprint, Response, request

from shared import metrics
from shared.celery_config import QUEUES
from shared.errors import NotFound
from shared.redis_client import redis_client
from web.auth import settings
from web.client_addr import forwarded

bp = Blueprint("metrics", __name__)
LOOPBACK = frozenset({"127.0.0.1", "::1"})


def local_scrape() -> bool:
    """A request from loopback that no proxy forwarded (a proxy on the host adds headers)."""
    return request.remote_addr in LOOPBACK and not forwarded(request.headers)


@bp.get("/metrics")
def metrics_text() -> Response:
    """The text exposition format."""
    s = settings()
    if s.production and not local_scrape():
        raise NotFound("metrics are local only")
    body, content_type = metrics.render(
        metrics.RedisStateCollector(redis_client(s), QUEUES))
    return Response(body, content_type=content_type)
