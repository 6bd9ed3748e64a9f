"""ASSISTANT_REDIS_URL: one Redis server, or a primary found through Redis Sentinel.

One server: `redis://[[user]:password@]host:port/db` (or rediss://, unix://), as redis-py reads
it. Sentinel: `sentinel://[[user]:password@]host:port[,host:port...]/service[/db]`, e.g.
`sentinel://10.0.0.5:26379,10.0.0.6:26379,10.0.0.7:26379/mymaster/0`: the addresses of the
Sentinels, the name they monitor the primary by, and the database number (default 0). The user
and password are the primary's (and its replicas'); the Sentinels are asked without one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from shared.errors import ConfigError

SCHEME = "sentinel://"
FORM = "sentinel://[[user]:password@]host:port[,host:port...]/service[/db]"
_ADDRESS = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9.\-_]+)):(?P<port>[0-9]{1,5})")
_SERVICE = re.compile(r"[A-Za-z0-9._\-]{1,64}")


@dataclass(frozen=True)
class SentinelTarget:
    """Where the Sentinels are, which primary they watch, and how to sign in to it."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None

    def kombu_url(self) -> str:
        """The form Celery's broker (kombu's sentinel transport) reads: one URL per Sentinel,
        joined by ';' (the primary's name goes in the transport options: master_name)."""
        auth = ""
        if self.password is not None:
            auth = f"{quote(self.username or '', safe='')}:{quote(self.password, safe='')}@"
        return ";".join(f"sentinel://{auth}{_netloc(h, p)}/{self.db}" for h, p in self.sentinels)

    def describe(self) -> str:
        """The target without its password (for logs and start messages)."""
        hosts = ",".join(_netloc(h, p) for h, p in self.sentinels)
        return f"sentinel://{hosts}/{self.service}/{self.db}"


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_sentinel(url: str) -> bool:
    """Whether the URL names Sentinels rather than one server."""
    return url.strip().lower().startswith(SCHEME)


def sentinel_target(url: str) -> SentinelTarget | None:
    """The Sentinel target of a sentinel:// URL, None for any other URL; a malformed one
    raises ConfigError naming the form (never echoing a password)."""
    if not is_sentinel(url):
        return None
    rest = url.strip()[len(SCHEME):]

    def bad(why: str) -> ConfigError:
        return ConfigError(f"ASSISTANT_REDIS_URL: {why}; Sentinels are written {FORM}, e.g. "
                           "sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster/0")

    if "?" in rest or "#" in rest:
        raise bad("no query or fragment is read")
    username = password = None
    if "@" in rest:
        auth, rest = rest.rsplit("@", 1)
        if ":" not in auth:
            raise bad("the part before @ must be user:password (or :password)")
        user, pw = auth.split(":", 1)
        username, password = (unquote(user) or None), unquote(pw)
    hosts, _, path = rest.partition("/")
    sentinels = []
    for part in hosts.split(","):
        match = _ADDRESS.fullmatch(part.strip())
        if match is None:
            raise bad(f"{part.strip()!r} is not a host:port")
        port = int(match.group("port"))
        if not 0 < port < 65536:
            raise bad(f"port {port} is out of range")
        sentinels.append((match.group("v6") or match.group("host"), port))
    segments = path.split("/") if path else []
    if not segments or not segments[0]:
        raise bad("the primary's service name is missing")
    if len(segments) > 2:
        raise bad("only a service name and a database number follow the addresses")
    if not _SERVICE.fullmatch(segments[0]):
        raise bad("the service name may hold letters, digits, '.', '_' and '-' only")
    db = 0
    if len(segments) == 2 and segments[1] != "":
        if not segments[1].isdigit() or len(segments[1]) > 5:
            raise bad("the database must be a whole number (0 by default)")
        db = int(segments[1])
    return SentinelTarget(tuple(sentinels), segments[0], db, username, password)
