"""The client's address: the socket's peer, or X-Forwarded-For only behind a trusted proxy."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Protocol

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# A proxy on the way adds one of these: with any of them the peer is not the client.
PROXY_HEADERS = ("X-Forwarded-For", "X-Real-IP", "Forwarded")


def parse_networks(spec: str) -> tuple[IPNetwork, ...]:
    """Comma-separated addresses or CIDR blocks of trusted proxies."""
    return tuple(ipaddress.ip_network(p.strip(), strict=False)
                 for p in spec.split(",") if p.strip())


class _Headers(Protocol):
    def get(self, key: str) -> str | None: ...


def forwarded(headers: _Headers) -> bool:
    """Whether a proxy says it forwarded the request (X-Forwarded-For, X-Real-IP, Forwarded)."""
    return any(headers.get(h) is not None for h in PROXY_HEADERS)


def hop_address(hop: str) -> str | None:
    """The address of one X-Forwarded-For entry, without a port ('203.0.113.9:4711',
    '[2001:db8::1]:443'); None when it is not an address."""
    hop = hop.strip()
    if hop.startswith("["):
        hop = hop[1:].partition("]")[0]
    elif hop.count(":") == 1:
        hop = hop.partition(":")[0]  # IPv4 with a port (a bare IPv6 has several colons)
    try:
        return str(ipaddress.ip_address(hop))
    except ValueError:
        return None


def _trusted(addr: str | None, proxies: Sequence[IPNetwork]) -> bool:
    try:
        ip = ipaddress.ip_address(addr or "")
    except ValueError:
        return False
    return any(ip in net for net in proxies)


def client_address(peer: str | None, forwarded_for: str | None,
                   proxies: Sequence[IPNetwork]) -> str:
    """The peer, unless it is a trusted proxy: then the right-most X-Forwarded-For entry that
    is not itself a trusted proxy (entries to its left are client-supplied and can be forged)."""
    peer = peer or "unknown"
    if not forwarded_for or not _trusted(peer, proxies):
        return peer
    hops = [h.strip() for h in forwarded_for.split(",") if h.strip()]
    for hop in reversed(hops):
        addr = hop_address(hop)
        if addr is None:
            return peer
        if not _trusted(addr, proxies):
            return addr
    first = hop_address(hops[0]) if hops else None
    return first or peer
