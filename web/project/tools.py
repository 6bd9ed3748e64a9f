"""What the project tools of agent and hybrid turns may read, prefetched with the user's token.

Why prefetch (and not a capability the worker redeems later): the token then never leaves this
process, exactly as in the workflow (web/project/app_api.py), and a tool can only ever return what the
app showed this user before the turn was enqueued: another user's project is not in the payload
at all, so no worker bug or model request can reach it. The cost is a few app reads per turn,
bounded by PREFETCH_PROJECTS.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from shared.config import Settings
from shared.errors import AssistantError, NotFound
from shared.turn_request import ProjectBlock
from web.project.app_api import AppApi
from web.project.sections import list_text, project_list, sections

log = logging.getLogger(__name__)
# The panel's project when there is one, else the first projects of the user's list.
PREFETCH_PROJECTS = 3


def _read(api: AppApi, token: str, project_id: str) -> dict[str, Any]:
    bundle = api.project_bundle(token, project_id)
    if not isinstance(bundle["project"], dict):
        raise NotFound("bad project body", public_message="This project was not found.")
    parts = sections(bundle["project"], bundle["opinions"] or [], bundle["result"],
                     bundle["members"] or [])
    return {"project": parts.project, "result": parts.result, "opinions": parts.opinions,
            "full": parts.full}


def tool_data(settings: Settings, token: str, project_id: str | None) -> dict[str, Any]:
    """The projects list and up to PREFETCH_PROJECTS projects' sections, read as the user.

    The panel's project is read first and its refusal ends the turn as in the workflow; a
    project of the list that cannot be read is just left out.
    """
    if not settings.app_api_url or not token:
        return {"projects": [], "list_text": list_text([]), "read": {}, "unavailable": True}
    started = time.monotonic()
    api = AppApi(settings.app_api_url, settings.app_api_timeout_s)
    read: dict[str, Any] = {}
    if project_id:
        read[project_id] = _read(api, token, project_id)
    try:
        projects = project_list(api.my_projects(token))
    except AssistantError as exc:
        # Without a panel project the turn still answers from the docs; the tools say why not.
        log.info("project tools: the project list is not readable (%d)", exc.code)
        return {"projects": [], "list_text": list_text([]), "read": read,
                "unavailable": not read,
                "read_ms": round((time.monotonic() - started) * 1000, 1)}
    for p in projects:
        if len(read) >= PREFETCH_PROJECTS:
            break
        if p["id"] not in read:
            try:
                read[p["id"]] = _read(api, token, p["id"])
            except AssistantError as exc:
                log.info("project tools: one listed project not readable (%d)", exc.code)
    # The list as the list_my_projects tool shows it, rendered here with the other project
    # text so the worker needs none of the app's shapes.
    return {"projects": projects, "list_text": list_text(projects), "read": read,
            "read_ms": round((time.monotonic() - started) * 1000, 1)}


def prefetch(settings: Settings, token: str, project_id: str | None
             ) -> tuple[dict[str, Any], ProjectBlock | None]:
    """An agent or hybrid turn's tool data, and the panel's project also as the workflow block
    (the worker's fallback when the model cannot call tools)."""
    data = tool_data(settings, token, project_id)
    project = None
    if project_id and project_id in data["read"]:
        project = ProjectBlock.from_text(data["read"][project_id]["full"], data.get("read_ms"))
    for entry in data["read"].values():
        entry.pop("full", None)  # carried once, as the project block
    return data, project
