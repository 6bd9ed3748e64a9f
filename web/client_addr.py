"""The client's address: the socket's peer, or X-Forwarded-For only behind a trusted proxy."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(spec: str) -> tuple[IPNetwork, ...]:
    """Comma-separated addresses or CIDR blocks of trusted proxies."""
    return tuple(ipaddress.ip_network(p.strip(), strict=False)
                 for p in spec.split(",") if p.strip())


def _trusted(addr: str, proxies: Sequence[IPNetwork]) -> bool:
    try:
        ip = ipaddress.ip_address(addr)
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
        if not _trusted(hop, proxies):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer
    return hops[0] if hops else peer
