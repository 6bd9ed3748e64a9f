"""App JWT verification, as the BeCoMe app signs them (docs/spec/become-app-api.md 1.3).

Every refused token differs from a valid one in exactly one thing (a claim, the key or the
algorithm), so each case is refused for its own reason and a check removed from
shared/auth.py fails its case.
"""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest

from shared.auth import mint_access_token, verify_access, verify_access_token
from shared.errors import Unauthorized

SECRET = "s" * 40
NOW = int(time.time())


def valid_claims(**change: Any) -> dict[str, Any]:
    """The claims the app puts in an access token; `change` edits one (None deletes it)."""
    claims: dict[str, Any] = {"sub": "user-1", "iat": NOW, "exp": NOW + 900, "type": "access",
                              "jti": "a" * 32}
    for name, value in change.items():
        if value is None:
            claims.pop(name)
        else:
            claims[name] = value
    return claims


def test_valid_access_token() -> None:
    assert verify_access_token(mint_access_token("user-1", SECRET), SECRET) == "user-1"
    # The control for every case below: the unchanged claims are accepted.
    access = verify_access(jwt.encode(valid_claims(), SECRET, algorithm="HS256"), SECRET)
    assert (access.user, access.expires_at) == ("user-1", NOW + 900)


@pytest.mark.parametrize("change", [
    {"exp": NOW - 10},  # expired 10 s ago (no leeway beyond the app's own)
    {"exp": NOW - 3600},  # expired an hour ago
    {"type": "refresh"},  # a refresh token is not an access token
    {"type": None},  # no type
    {"sub": None},  # no sub
    {"sub": ""},  # empty sub
    {"sub": "   "},  # blank sub
    {"sub": 42},  # not a string
    {"exp": None},  # no exp
    {"iat": None},  # no iat
    {"jti": None},  # no jti
    {"iat": NOW + 3600, "exp": NOW + 4000},  # issued in the future
    {"exp": NOW + 100 * 365 * 86400},  # lives a hundred years
    {"exp": NOW + 86400 + 60},  # lives just over the 24 h bound
], ids=lambda change: ",".join(f"{k}={v}" for k, v in change.items()))
def test_one_changed_claim_is_refused(change: dict[str, Any]) -> None:
    token = jwt.encode(valid_claims(**change), SECRET, algorithm="HS256")
    with pytest.raises(Unauthorized):
        verify_access_token(token, SECRET)


def test_another_key_is_refused() -> None:
    token = jwt.encode(valid_claims(), "other" * 10, algorithm="HS256")
    with pytest.raises(Unauthorized):
        verify_access_token(token, SECRET)


def test_a_tampered_payload_is_refused() -> None:
    """The signature covers the claims: the user swapped in a valid token's payload."""
    head, _, sig = jwt.encode(valid_claims(), SECRET, algorithm="HS256").split(".")
    other = jwt.encode(valid_claims(sub="user-2"), SECRET, algorithm="HS256").split(".")[1]
    with pytest.raises(Unauthorized):
        verify_access_token(f"{head}.{other}.{sig}", SECRET)


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
@pytest.mark.parametrize("algorithm", ["none", "HS512"])
def test_another_algorithm_is_refused(algorithm: str) -> None:
    key = None if algorithm == "none" else SECRET
    token = jwt.encode(valid_claims(), key, algorithm=algorithm)
    with pytest.raises(Unauthorized):
        verify_access_token(token, SECRET)


def test_the_lifetime_bound_and_the_issuer_are_settings() -> None:
    long_lived = jwt.encode(valid_claims(exp=NOW + 7 * 86400), SECRET, algorithm="HS256")
    assert verify_access(long_lived, SECRET, max_lifetime_s=8 * 86400).user == "user-1"
    with pytest.raises(Unauthorized):
        verify_access(long_lived, SECRET, max_lifetime_s=6 * 86400)
    # An issuer is checked only when one is configured; then it must be there and match.
    plain = jwt.encode(valid_claims(), SECRET, algorithm="HS256")
    mine = jwt.encode(valid_claims(iss="https://become.example"), SECRET, algorithm="HS256")
    theirs = jwt.encode(valid_claims(iss="https://other.example"), SECRET, algorithm="HS256")
    assert verify_access(theirs, SECRET).user == "user-1"
    assert verify_access(mine, SECRET, issuer="https://become.example").user == "user-1"
    for token in (plain, theirs):
        with pytest.raises(Unauthorized):
            verify_access(token, SECRET, issuer="https://become.example")


def test_a_socket_lives_until_the_bound_at_the_latest() -> None:
    """expires_at (when a socket closes) is exp, never more than the bound after iat."""
    token = jwt.encode(valid_claims(exp=NOW + 3000), SECRET, algorithm="HS256")
    assert verify_access(token, SECRET, max_lifetime_s=3600).expires_at == NOW + 3000
    assert verify_access(token, SECRET, max_lifetime_s=3000).expires_at == NOW + 3000
