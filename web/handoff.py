"""The handoff to the worker: the one place a TurnRequest (shared/turn_request.py) is built.

Everything the worker needs from the user's side is read here, with the user's own token,
before the turn is enqueued: the token never leaves the web tier.
"""

from __future__ import annotations

from shared.auth import user_hash
from shared.config import Settings
from shared.errors import Unavailable
from shared.turn_request import ProjectBlock, TurnRequest
from web.protocol import Ask


def build_request(settings: Settings, app_token: str, turn: str, user: str, ask: Ask,
                  language: str) -> TurnRequest:
    """The turn's request: the ask, its language (detected once, by the caller), the mode
    resolved here, and the project data read as the user."""
    mode = ask.mode or settings.assistant_mode
    project: ProjectBlock | None = None
    tool_data = None
    if mode != "workflow":
        from web.project.tools import prefetch

        tool_data, project = prefetch(settings, app_token, ask.project_id)
    elif ask.project_id:
        project = read_project(settings, app_token, ask.project_id)
    return TurnRequest(turn=turn, user=user_hash(user), message=ask.message,
                       language=language, mode=mode, history=ask.history,
                       project_id=ask.project_id, project=project, tool_data=tool_data)


def read_project(settings: Settings, app_token: str, project_id: str) -> ProjectBlock:
    """The panel project's block for a workflow turn, read from the app as the user."""
    if not settings.app_api_url:
        raise Unavailable("no app API configured", public_message=(
            "Project data is not available on this server."))
    from web.project.app_api import AppApi, read_project_context

    context, read_ms = read_project_context(
        AppApi(settings.app_api_url, settings.app_api_timeout_s), app_token, project_id)
    grounding = context.grounding
    if context.figures is not None:
        # The figures are structured values written by code: they ground what is said of them.
        grounding += tuple(n for n in context.figures.numbers() if n not in grounding)
    return ProjectBlock(context.text, grounding, read_ms, context.figures)
