"""A small SSE client for tests (http.client, reads events as they arrive)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse


def sse_frames(base_url: str, method: str, path: str, token: str,
               body: dict[str, Any] | None = None, last_event_id: int | None = None,
               timeout: float = 60, stop_after: int | None = None,
               headers: dict[str, str] | None = None
               ) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """Yield (event id, frame) until the terminal frame (or stop_after frames)."""
    u = urlparse(base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream",
               **(headers or {})}
    data = None
    if body is not None:
        data = json.dumps(body)
        headers["Content-Type"] = "application/json"
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    if resp.status != 200:
        raise AssertionError(f"SSE status {resp.status}: {resp.read()[:300]!r}")
    event_id, data_lines, count = None, [], 0
    try:
        while True:
            line = resp.readline().decode()
            if not line:
                return
            line = line.rstrip("\n")
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("data: "):
                data_lines.append(line[6:])
            elif line == "" and data_lines:
                frame = json.loads("\n".join(data_lines))
                yield event_id, frame
                count += 1
                event_id, data_lines = None, []
                if frame.get("type") in ("done", "error") or (stop_after and count >= stop_after):
                    return
    finally:
        conn.close()
