"""App JWTs: verified exactly as the BeCoMe app issues them (HS256, sub, exp, type=access)."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

import jwt

from shared.errors import Unauthorized


@dataclass(frozen=True)
class AccessToken:
    """The claims of a verified access token that we act on."""

    user: str
    expires_at: int  # `exp`, seconds since the epoch: a socket opened with it closes then


def verify_access(token: str, secret: str) -> AccessToken:
    """The user id and expiry of a valid access token, else raise Unauthorized."""
    try:
        # The app always sets iat and jti: a token without them was not minted by the app.
        claims = jwt.decode(token, secret, algorithms=["HS256"],
                            options={"require": ["sub", "exp", "iat", "jti"]})
    except jwt.PyJWTError:
        raise Unauthorized("invalid app token") from None
    if claims.get("type") != "access" or not isinstance(claims.get("sub"), str):
        raise Unauthorized("not an access token")
    return AccessToken(str(claims["sub"]), int(claims["exp"]))


def verify_access_token(token: str, secret: str) -> str:
    """Return the user id (`sub`) of a valid access token, else raise Unauthorized."""
    return verify_access(token, secret).user


def mint_access_token(user: str, secret: str, ttl_s: int = 900) -> str:
    """Sign an access token the way the BeCoMe app does (dev tooling and the demo app)."""
    now = int(time.time())
    claims = {"sub": user, "iat": now, "exp": now + ttl_s, "type": "access",
              "jti": secrets.token_hex(16)}
    return jwt.encode(claims, secret, algorithm="HS256")


def user_hash(user: str) -> str:
    """A stable pseudonym for a user id, for traces and ownership keys."""
    return hashlib.sha256(f"become-assistant:{user}".encode()).hexdigest()[:32]
