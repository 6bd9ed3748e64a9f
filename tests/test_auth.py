"""App JWT verification, as the BeCoMe app signs them."""

from __future__ import annotations

import time

import jwt
import pytest

from shared.auth import mint_access_token, verify_access_token
from shared.errors import Unauthorized

SECRET = "s" * 40


def test_valid_access_token() -> None:
    assert verify_access_token(mint_access_token("user-1", SECRET), SECRET) == "user-1"


@pytest.mark.parametrize("claims, secret", [
    ({"sub": "u", "exp": int(time.time()) - 10, "type": "access"}, SECRET),  # expired
    ({"sub": "u", "exp": int(time.time()) + 60, "type": "refresh"}, SECRET),  # wrong type
    ({"sub": "u", "exp": int(time.time()) + 60}, SECRET),  # no type
    ({"exp": int(time.time()) + 60, "type": "access"}, SECRET),  # no sub
    ({"sub": "u", "type": "access"}, SECRET),  # no exp
    ({"sub": "u", "exp": int(time.time()) + 60, "type": "access"}, "other" * 10),  # bad key
])
def test_invalid_tokens_are_refused(claims: dict, secret: str) -> None:
    token = jwt.encode(claims, secret, algorithm="HS256")
    with pytest.raises(Unauthorized):
        verify_access_token(token, SECRET)


def test_none_algorithm_is_refused() -> None:
    token = jwt.encode({"sub": "u", "exp": int(time.time()) + 60, "type": "access"}, None,
                       algorithm="none")
    with pytest.raises(Unauthorized):
        verify_access_token(token, SECRET)
