"""Forwarded headers count only from configured trusted proxies."""

from __future__ import annotations

import pytest

from web.client_addr import client_address, forwarded, hop_address, parse_networks

PROXIES = parse_networks("10.0.0.0/8, 127.0.0.1")


@pytest.mark.parametrize("peer, xff, expected, why", [
    ("203.0.113.5", None, "203.0.113.5", "no proxy: the peer"),
    ("203.0.113.5", "1.2.3.4", "203.0.113.5", "untrusted peer: its header is ignored"),
    ("10.1.2.3", "198.51.100.7", "198.51.100.7", "trusted proxy: the forwarded client"),
    ("10.1.2.3", "6.6.6.6, 198.51.100.7", "198.51.100.7", "forged left entries ignored"),
    ("127.0.0.1", "198.51.100.7, 10.9.9.9", "198.51.100.7", "chain of trusted proxies"),
    ("10.1.2.3", "not-an-ip", "10.1.2.3", "garbage header: the peer"),
    ("10.1.2.3", "2001:db8::1", "2001:db8::1", "IPv6 client"),
    ("10.1.2.3", "198.51.100.7:4711", "198.51.100.7", "IPv4 client with a port"),
    ("10.1.2.3", "[2001:db8::7]:443", "2001:db8::7", "IPv6 client with a port"),
    ("10.1.2.3", "198.51.100.7:4711, 10.9.9.9:80", "198.51.100.7",
     "a trusted proxy with a port is still a trusted proxy"),
    (None, None, "unknown", "no peer at all"),
])
def test_client_address(peer: str | None, xff: str | None, expected: str, why: str) -> None:
    assert client_address(peer, xff, PROXIES) == expected, why


@pytest.mark.parametrize("hop, expected", [
    ("203.0.113.9", "203.0.113.9"), (" 203.0.113.9:80 ", "203.0.113.9"),
    ("[::1]:8080", "::1"), ("2001:db8::1", "2001:db8::1"), ("[2001:db8::1]", "2001:db8::1"),
    ("unknown", None), ("203.0.113.9:80:1", None), ("", None),
])
def test_hop_address(hop: str, expected: str | None) -> None:
    assert hop_address(hop) == expected


@pytest.mark.parametrize("headers, expected", [
    ({}, False), ({"X-Forwarded-For": "198.51.100.7"}, True),
    ({"X-Real-IP": "198.51.100.7"}, True), ({"Forwarded": "for=198.51.100.7"}, True),
])
def test_any_proxy_header_means_forwarded(headers: dict[str, str], expected: bool) -> None:
    assert forwarded(headers) is expected


@pytest.mark.parametrize("headers, trusted, why", [
    ({}, True, "a direct loopback caller is trusted"),
    ({"X-Forwarded-For": "203.0.113.9"}, False, "forwarded by an untrusted local proxy"),
    ({"X-Real-IP": "203.0.113.9"}, False, "X-Real-IP alone is forwarded too"),
    ({"Forwarded": "for=203.0.113.9"}, False, "so is Forwarded"),
])
def test_health_detail_only_for_direct_trusted_callers(headers: dict[str, str], trusted: bool,
                                                       why: str) -> None:
    from shared.config import Settings
    from web import create_app
    from web.guard import trusted_health_caller

    s = Settings()  # health_trusted: loopback; no trusted proxies
    app = create_app({"SETTINGS": s, "TESTING": True})
    with app.test_request_context("/healthz", headers=headers,
                                  environ_base={"REMOTE_ADDR": "127.0.0.1"}):
        assert trusted_health_caller(s) is trusted, why


def test_health_detail_through_a_trusted_proxy_needs_x_forwarded_for() -> None:
    import dataclasses

    from shared.config import Settings
    from web import create_app
    from web.guard import trusted_health_caller

    s = dataclasses.replace(Settings(), trusted_proxies="127.0.0.1",
                            health_trusted="198.51.100.0/24")
    app = create_app({"SETTINGS": s, "TESTING": True})
    for headers, trusted in (({"X-Forwarded-For": "198.51.100.7:5000"}, True),
                             ({"X-Forwarded-For": "203.0.113.9"}, False),
                             # The proxy names the client in a header we do not read: the
                             # caller is unknown, not the proxy.
                             ({"X-Real-IP": "198.51.100.7"}, False)):
        with app.test_request_context("/healthz", headers=headers,
                                      environ_base={"REMOTE_ADDR": "127.0.0.1"}):
            assert trusted_health_caller(s) is trusted, headers
