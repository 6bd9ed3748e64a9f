"""Who is asking: the app's bearer JWT for HTTP, a ticket (and Origin) for the WebSocket."""

from __future__ import annotations

import json
from typing import Any

from flask import current_app, request

from shared.auth import AccessToken, verify_access
from shared.config import Settings
from shared.errors import BadRequest, Forbidden, Unauthorized


def settings() -> Settings:
    """The app's Settings."""
    s: Settings = current_app.config["SETTINGS"]
    return s


def bearer_token() -> str:
    """The request's app JWT (`Authorization: Bearer ...`), not yet verified."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("missing bearer token")
    return token.strip()


def verify(token: str) -> AccessToken:
    """An app token checked as the settings say (secret, lifetime bound, issuer): the one
    place the web tier verifies a token."""
    s = settings()
    return verify_access(token, s.app_jwt_secret, max_lifetime_s=s.app_jwt_max_lifetime_s,
                         issuer=s.app_jwt_issuer)


def bearer_user() -> str:
    """The user id of the request's `Authorization: Bearer <app JWT>`."""
    return verify(bearer_token()).user


def check_origin() -> None:
    """Browsers always send Origin: it must be allowed. Non-browser clients send none."""
    origin = request.headers.get("Origin")
    if origin is None:
        return
    if origin.rstrip("/") not in settings().allowed_origins:
        raise Forbidden("origin not allowed")


def json_body() -> Any:
    """The request's JSON body (None when there is none); a body that is not valid JSON,
    or is nested too deeply to parse, is refused with 422."""
    if not request.get_data(cache=True):
        return None
    try:
        return json.loads(request.get_data(cache=True))
    except (ValueError, RecursionError):
        raise BadRequest("bad json body",
                         public_message="The request body is not valid JSON.") from None
