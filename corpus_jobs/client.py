"""A protocol v1 client: ticket over HTTP, then the turn over the WebSocket (CLI and tests)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

from simple_websocket import Client, ConnectionClosed


class ClientError(RuntimeError):
    """The server refused or the connection failed; carries the server's plain message."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def http_json(method: str, url: str, body: dict[str, Any] | None = None,
              headers: dict[str, str] | None = None, timeout: float = 10) -> tuple[int, Any]:
    """One JSON request; returns (status, decoded body) for 2xx and 4xx/5xx alike."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - our server
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"null")
        except ValueError:
            return exc.code, None
    except urllib.error.URLError as exc:
        raise ClientError(f"cannot reach {url}: {exc.reason}") from None


def get_ticket(base_url: str, app_token: str) -> str:
    """Exchange an app JWT for a WebSocket ticket."""
    status, body = http_json("POST", f"{base_url}/api/v1/assistant/tickets",
                             headers={"Authorization": f"Bearer {app_token}"})
    if status != 201:
        message = (body or {}).get("error", {}).get("message", "refused")
        raise ClientError(message, status)
    return str(body["ticket"])


def ws_url(base_url: str, ticket: str) -> str:
    """The WebSocket URL for a ticket."""
    scheme = "wss" if base_url.startswith("https") else "ws"
    return f"{scheme}://{base_url.split('://', 1)[1]}/api/v1/assistant/ws?ticket={ticket}"


def stream_turn(base_url: str, app_token: str, message: str,
                history: list[dict[str, str]] | None = None, project_id: str | None = None,
                timeout_s: float = 300, headers: dict[str, str] | None = None
                ) -> Iterator[dict[str, Any]]:
    """Yield every frame of one turn, ending with its terminal frame."""
    ws = Client.connect(ws_url(base_url, get_ticket(base_url, app_token)), headers=headers)
    try:
        ws.send(json.dumps({"type": "ask", "message": message, "history": history or [],
                            "project_id": project_id}))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            raw = ws.receive(timeout=max(0.1, deadline - time.monotonic()))
            if raw is None:
                continue
            frame = json.loads(raw)
            yield frame
            if frame.get("type") in ("done", "error"):
                return
        raise ClientError("no answer in time")
    except ConnectionClosed:
        raise ClientError("the connection closed before the answer ended") from None
    finally:
        ws.close()


def ask(base_url: str, app_token: str, message: str,
        on_frame: Callable[[dict[str, Any]], None] | None = None, **kwargs: Any
        ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run a turn; returns (all frames, terminal frame)."""
    frames = []
    for frame in stream_turn(base_url, app_token, message, **kwargs):
        frames.append(frame)
        if on_frame:
            on_frame(frame)
    return frames, frames[-1]
