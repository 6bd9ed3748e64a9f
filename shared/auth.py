"""App JWTs: verified exactly as the BeCoMe app issues them (HS256, sub, exp, iat, jti,
type=access), with a bounded lifetime and, when configured, the issuer."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

import jwt

from shared.errors import Unauthorized

# The app's access tokens live 15 minutes by default (docs/spec/become-app-api.md): a token that
# claims to live longer than this was not minted for a browser session.
# ASSISTANT_APP_JWT_MAX_LIFETIME_S.
MAX_LIFETIME_S = 24 * 3600


@dataclass(frozen=True)
class AccessToken:
    """The claims of a verified access token that we act on."""

    user: str
    expires_at: int  # `exp`, seconds since the epoch: a socket opened with it closes then


def verify_access(token: str, secret: str, *, max_lifetime_s: int = MAX_LIFETIME_S,
                  issuer: str = "") -> AccessToken:
    """The user id and expiry of a valid access token, else raise Unauthorized."""
    if not secret:
        # A process started without the app secret (production workers) verifies nothing.
        raise Unauthorized("no app secret configured")
    required = ["sub", "exp", "iat", "jti", *(["iss"] if issuer else [])]
    try:
        # The app always sets iat and jti: a token without them was not minted by the app.
        # PyJWT refuses an iat in the future; iss is compared only when one is configured.
        claims = jwt.decode(token, secret, algorithms=["HS256"], issuer=issuer or None,
                            options={"require": required, "verify_iss": bool(issuer)})
    except jwt.PyJWTError:
        raise Unauthorized("invalid app token") from None
    sub = claims.get("sub")
    if claims.get("type") != "access" or not isinstance(sub, str) or not sub.strip():
        raise Unauthorized("not an access token")
    exp, iat = int(claims["exp"]), int(claims["iat"])
    if exp - iat > max_lifetime_s or exp - time.time() > max_lifetime_s:
        raise Unauthorized("access token lives too long")
    # A socket opened with it closes at exp, which the check above keeps within the bound.
    return AccessToken(sub, min(exp, iat + max_lifetime_s))


def verify_access_token(token: str, secret: str, *, max_lifetime_s: int = MAX_LIFETIME_S,
                        issuer: str = "") -> str:
    """Return the user id (`sub`) of a valid access token, else raise Unauthorized."""
    return verify_access(token, secret, max_lifetime_s=max_lifetime_s, issuer=issuer).user


def mint_access_token(user: str, secret: str, ttl_s: int = 900) -> str:
    """Sign an access token the way the BeCoMe app does (dev tooling and the demo app)."""
    now = int(time.time())
    claims = {"sub": user, "iat": now, "exp": now + ttl_s, "type": "access",
              "jti": secrets.token_hex(16)}
    return jwt.encode(claims, secret, algorithm="HS256")


def user_hash(user: str) -> str:
    """A stable pseudonym for a user id, for traces and ownership keys."""
    return hashlib.sha256(f"become-assistant:{user}".encode()).hexdigest()[:32]
