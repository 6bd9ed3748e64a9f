"""Read-only client for the BeCoMe app's API, always with the user's own bearer token.

Why the web tier reads the project (not the worker): the user's token then never leaves this
process's memory: it is not put in the broker, a task result, the replay log or a trace. The
turn carries the built, allow-listed context instead. Failures become refusals before the
first token: 401 -> 401, 403 -> 403, 404 and 422 -> 404, timeout or 5xx -> 503.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from shared.errors import AssistantError, Forbidden, NotFound, Unauthorized, Unavailable
from web.project.context import ProjectContext, build_context

log = logging.getLogger(__name__)
MAX_BODY = 4 * 1024 * 1024


@dataclass(frozen=True)
class AppApi:
    """The app's base URL (…/api/v1 is appended) and a short timeout."""

    base_url: str
    timeout_s: float = 5.0

    def get(self, path: str, token: str) -> Any:
        """GET one endpoint as the user; maps the app's statuses to our refusals."""
        url = f"{self.base_url.rstrip('/')}/api/v1{path}"
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}",
                                                   "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310
                return json.loads(resp.read(MAX_BODY) or b"null")
        except urllib.error.HTTPError as exc:
            raise _refusal(exc.code, path) from None
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
            # The URL is logged without the query string and never with the token.
            log.warning("app API %s unavailable: %s", path, type(exc).__name__)
            raise Unavailable("app API unavailable", public_message=(
                "The BeCoMe app is not answering right now. Please try again shortly.")) from None

    def my_projects(self, token: str) -> list[dict[str, Any]]:
        """The caller's projects (for tools and the project picker)."""
        data = self.get("/projects", token)
        return data if isinstance(data, list) else []

    def project_bundle(self, token: str, project_id: str) -> dict[str, Any]:
        """Project, opinions, stored result and members, read with the user's access."""
        pid = quote(project_id, safe="")
        project = self.get(f"/projects/{pid}", token)  # refusals come from here first
        return {"project": project, "opinions": self.get(f"/projects/{pid}/opinions", token),
                "result": self.get(f"/projects/{pid}/result", token),
                "members": self.get(f"/projects/{pid}/members", token)}


_confirmed: dict[str, float] = {}  # sha256 of a token -> until when the app's "yes" holds
_confirmed_lock = threading.Lock()
MAX_CONFIRMED = 4096


def confirm_token(api: AppApi, token: str, cache_s: float) -> None:
    """Ask the app whether it still accepts the token (GET /users/me), reusing a "yes" for
    cache_s seconds: a logged-out token passes our offline check but not the app's own list.
    Raises Unauthorized (401) or Unavailable like any app read."""
    key = hashlib.sha256(token.encode()).hexdigest()  # the token itself is never kept
    now = time.monotonic()
    with _confirmed_lock:
        if _confirmed.get(key, 0.0) > now:
            return
    api.get("/users/me", token)
    with _confirmed_lock:
        if len(_confirmed) >= MAX_CONFIRMED:
            for k in [k for k, until in _confirmed.items() if until <= now] or list(_confirmed):
                del _confirmed[k]
        _confirmed[key] = now + cache_s


def _refusal(status: int, path: str) -> AssistantError:
    if status == 401:
        return Unauthorized("app said 401", public_message="Please sign in again.")
    if status == 403:
        return Forbidden("not a member", public_message="You are not a member of this project.")
    if status in (404, 422):
        return NotFound("no such project", public_message="This project was not found.")
    log.warning("app API %s answered %d", path, status)
    return Unavailable("app API error", public_message=(
        "The BeCoMe app is not answering right now. Please try again shortly."))


def read_project_context(api: AppApi, token: str, project_id: str
                         ) -> tuple[ProjectContext, float]:
    """The allow-listed, fenced context of one project and how long reading it took (ms)."""
    started = time.monotonic()
    bundle = api.project_bundle(token, project_id)
    if not isinstance(bundle["project"], dict):
        raise NotFound("bad project body", public_message="This project was not found.")
    context = build_context(bundle["project"], bundle["opinions"] or [], bundle["result"],
                            bundle["members"] or [])
    return context, round((time.monotonic() - started) * 1000, 1)
