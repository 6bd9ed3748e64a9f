"""The one place errors become HTTP responses (their frames: shared.frame_types.error_of); no
internal text leaks."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from shared.errors import AssistantError, RateLimited

log = logging.getLogger(__name__)

HTTP_MESSAGES = {
    400: "The request is not valid.",
    401: "Please sign in again.",
    403: "You do not have access to this.",
    404: "Not found.",
    405: "This method is not allowed here.",
    413: "The request is too large.",
}


def error_body(exc: AssistantError) -> dict[str, Any]:
    """The JSON body of an error response."""
    body: dict[str, Any] = {"code": exc.code, "message": exc.public_message}
    if isinstance(exc, RateLimited):
        body["retry_after"] = exc.retry_after
    return {"error": body}


def init_app(app: Flask) -> None:
    """Register the handlers that turn every failure into a plain JSON error."""

    @app.errorhandler(AssistantError)
    def _assistant_error(exc: AssistantError) -> tuple[Response, int]:
        if exc.code >= 500:
            log.warning("request failed: %s: %s", type(exc).__name__, exc)
        resp = jsonify(error_body(exc))
        if isinstance(exc, RateLimited):
            resp.headers["Retry-After"] = str(exc.retry_after)
        return resp, exc.code

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> tuple[Response, int]:
        code = exc.code or 500
        message = HTTP_MESSAGES.get(code, "The request could not be served.")
        return jsonify({"error": {"code": code, "message": message}}), code

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> tuple[Response, int]:
        log.exception("unhandled error")
        return jsonify({"error": {"code": 500, "message": AssistantError.public_message}}), 500
