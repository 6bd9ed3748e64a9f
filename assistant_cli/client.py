"""A protocol v1 client: ticket over HTTP, then the turn over the WebSocket (CLI and tests)."""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from simple_websocket import Client, ConnectionClosed
from simple_websocket import ConnectionError as HandshakeRefused


class ClientError(RuntimeError):
    """The server refused or the connection failed; carries the server's plain message."""

    def __init__(self, message: str, code: int | None = None,
                 retry_after: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        # A limit's refusal (429): when the server says a slot frees, in seconds.
        self.retry_after = retry_after


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
        error = (body or {}).get("error", {})
        wait = error.get("retry_after") if status == 429 else None
        raise ClientError(error.get("message", "refused"), status,
                          wait if isinstance(wait, int) and wait > 0 else None)
    return str(body["ticket"])


def ws_url(base_url: str, ticket: str) -> str:
    """The WebSocket URL for a ticket."""
    scheme = "wss" if base_url.startswith("https") else "ws"
    return f"{scheme}://{base_url.split('://', 1)[1]}/api/v1/assistant/ws?ticket={ticket}"


RESTART_CLOSE = 1012  # the server process is stopping (web/drain.py): resume at once
MAX_RESUMES = 5


def stream_turn(base_url: str, app_token: str, message: str,
                history: list[dict[str, str]] | None = None, project_id: str | None = None,
                timeout_s: float = 300, headers: dict[str, str] | None = None
                ) -> Iterator[dict[str, Any]]:
    """Yield every frame of one turn, ending with its terminal frame.

    When the server closes the socket because its process stops (close code 1012), a new
    socket resumes the turn after the last seq seen, at once (behind a proxy it reaches
    another web process); each frame is yielded once. Closed with 1012 before the turn's
    `accepted` frame, the question was never taken (the server sends a turn's `accepted`
    before that close, web/routes/ws.py): it is asked again on the new socket.
    """
    deadline = time.monotonic() + timeout_s
    ask: dict[str, Any] = {"type": "ask", "message": message, "history": history or [],
                           "project_id": project_id}
    first = ask
    retrying = False  # after a restart's close: the next socket is tried for a few seconds
    turn: str | None = None
    last = -1
    for _ in range(MAX_RESUMES + 1):
        ws = _connect(base_url, app_token, headers, deadline, retrying)
        try:
            ws.send(json.dumps(first))
            while time.monotonic() < deadline:
                raw = ws.receive(timeout=max(0.1, deadline - time.monotonic()))
                if raw is None:
                    continue
                frame = json.loads(raw)
                seq = frame.get("seq")
                if isinstance(seq, int):
                    if seq <= last:
                        continue  # a resume repeats what was seen
                    last = seq
                if frame.get("type") == "accepted":
                    turn = frame.get("turn")
                yield frame
                if frame.get("type") in ("done", "error"):
                    return
            raise ClientError("no answer in time")
        except ConnectionClosed:
            if ws.close_reason != RESTART_CLOSE:
                raise ClientError("the connection closed before the answer ended") from None
            retrying = True
            # Not yet accepted: the question again; else the turn after the last seq seen.
            first = ask if turn is None else {"type": "resume", "turn": turn, "after": last}
        finally:
            _close(ws)
    raise ClientError("the server kept restarting; the answer did not end")


def _close(ws: Any) -> None:
    """Close a socket (simple-websocket raises on one the server has closed already)."""
    try:
        ws.close()
    except ConnectionClosed:
        pass


def _connect(base_url: str, app_token: str, headers: dict[str, str] | None, deadline: float,
             retrying: bool) -> Any:
    """A ticketed socket; after a restart's close, retried for a few seconds (the restarting
    process may be the only one behind base_url until its replacement listens)."""
    give_up = min(deadline, time.monotonic() + 15) if retrying else 0.0
    while True:
        try:
            return Client.connect(ws_url(base_url, get_ticket(base_url, app_token)),
                                  headers=headers)
        except (ClientError, OSError, HandshakeRefused) as exc:
            if time.monotonic() >= give_up or (isinstance(exc, ClientError)
                                                and exc.code is not None and exc.code < 500):
                raise
            time.sleep(0.2)


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


# ---- signing in (the CLI's `login`) ---------------------------------------------------------

def config_dir() -> Path:
    """The user's config folder for the CLI ($XDG_CONFIG_HOME or ~/.config)/become-assistant."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "become-assistant"


def token_path() -> Path:
    """Where `login` keeps the app token (mode 0600)."""
    return config_dir() / "token"


def app_login(app_url: str, email: str, password: str, timeout: float = 10) -> str:
    """Sign in at the BeCoMe app's form login; returns its access token."""
    data = urllib.parse.urlencode({"username": email, "password": password}).encode()
    req = urllib.request.Request(f"{app_url.rstrip('/')}/api/v1/auth/login", data=data,
                                 method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the user's app
            token = json.loads(resp.read()).get("access_token")
    except urllib.error.HTTPError as exc:
        if exc.code in (400, 401, 422):
            raise ClientError("the app refused the e-mail or password", exc.code) from None
        raise ClientError(f"the app's sign-in answered {exc.code}", exc.code) from None
    except urllib.error.URLError as exc:
        raise ClientError(f"cannot reach the app at {app_url}: {exc.reason}") from None
    except ValueError:
        raise ClientError("the app's sign-in did not answer with a token") from None
    if not isinstance(token, str) or not token:
        raise ClientError("the app's sign-in did not answer with a token")
    return token


def save_token(token: str) -> Path:
    """Write the token readable by the user only (folder 0700, file 0600)."""
    path = token_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)  # also when the file existed with wider rights
    return path


def token_expiry(token: str) -> float | None:
    """The `exp` claim of a JWT, read without verifying (only to say it expired), or None."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


def load_token() -> str | None:
    """The saved token, or None when there is none or it has expired."""
    try:
        token = token_path().read_text(encoding="utf-8").strip()
    except OSError:
        return None
    exp = token_expiry(token)
    if not token or (exp is not None and exp <= time.time()):
        return None
    return token
