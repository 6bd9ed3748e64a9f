"""Forwarded headers count only from configured trusted proxies."""

from __future__ import annotations

import pytest

from web.client_addr import client_address, parse_networks

PROXIES = parse_networks("10.0.0.0/8, 127.0.0.1")


@pytest.mark.parametrize("peer, xff, expected, why", [
    ("203.0.113.5", None, "203.0.113.5", "no proxy: the peer"),
    ("203.0.113.5", "1.2.3.4", "203.0.113.5", "untrusted peer: its header is ignored"),
    ("10.1.2.3", "198.51.100.7", "198.51.100.7", "trusted proxy: the forwarded client"),
    ("10.1.2.3", "6.6.6.6, 198.51.100.7", "198.51.100.7", "forged left entries ignored"),
    ("127.0.0.1", "198.51.100.7, 10.9.9.9", "198.51.100.7", "chain of trusted proxies"),
    ("10.1.2.3", "not-an-ip", "10.1.2.3", "garbage header: the peer"),
    ("10.1.2.3", "2001:db8::1", "2001:db8::1", "IPv6 client"),
    (None, None, "unknown", "no peer at all"),
])
def test_client_address(peer: str | None, xff: str | None, expected: str, why: str) -> None:
    assert client_address(peer, xff, PROXIES) == expected, why
