"""The Flask front end: checks who asks, hands turns to Celery, relays frames back."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask

from shared.config import Settings, get_settings, require_app_secret


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """The application factory."""
    from web import errors
    from web.headers import add_security_headers
    from web.queue import turn_queue
    from web.routes import api, metrics, panel, sse, ws
    from web.sock import sock

    app = Flask(__name__)
    settings: Settings = (config or {}).get("SETTINGS") or get_settings()
    require_app_secret(settings)
    app.config.update(SETTINGS=settings, MAX_CONTENT_LENGTH=settings.ws_max_frame_bytes,
                      JSON_SORT_KEYS=False,
                      # Larger frames close the socket with 1009 (simple-websocket does it).
                      SOCK_SERVER_OPTIONS={"max_message_size": settings.ws_max_frame_bytes,
                                           "ping_interval": None})
    app.config.update({k: v for k, v in (config or {}).items() if k != "SETTINGS"})
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    errors.init_app(app)
    turn_queue.init_app(app)
    sock.init_app(app)
    app.register_blueprint(api.bp)
    app.register_blueprint(ws.bp)
    app.register_blueprint(sse.bp)
    app.register_blueprint(panel.bp)
    app.register_blueprint(metrics.bp)

    @app.after_request
    def _security_headers(resp: Any) -> Any:
        return add_security_headers(resp, settings)

    return app
