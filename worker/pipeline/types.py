"""Frozen dataclasses passed between the pipeline steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.errors import BadRequest
from shared.passage import Passage


@dataclass(frozen=True)
class Message:
    """One earlier message of the conversation, as the browser sent it."""

    role: str
    content: str


@dataclass(frozen=True)
class TurnRequest:
    """What the web tier hands the worker: no token, no ticket, only the hashed user."""

    turn: str
    user: str
    message: str
    history: tuple[Message, ...] = ()
    project_id: str | None = None
    # The project block the web tier built with the user's own access (never the token).
    project_text: str | None = None
    project_grounding: tuple[str, ...] = ()
    project_read_ms: float | None = None
    # B-20: the mode the web tier resolved, and what the project tools may read (prefetched
    # by the web tier with the user's own access; see docs/how-it-works.md).
    mode: str | None = None
    tool_data: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnRequest:
        """Parse the task payload; raises BadRequest on a malformed one."""
        try:
            history = tuple(Message(str(m["role"]), str(m["content"]))
                            for m in data.get("history") or ())
            project = data.get("project_context") or {}
            return cls(turn=str(data["turn"]), user=str(data["user"]),
                       message=str(data["message"]), history=history,
                       project_id=data.get("project_id"),
                       project_text=project.get("text"),
                       project_grounding=tuple(str(g) for g in project.get("grounding", ())),
                       project_read_ms=project.get("read_ms"),
                       mode=data.get("mode"),
                       tool_data=data.get("tool_data") if isinstance(
                           data.get("tool_data"), dict) else None)
        except (KeyError, TypeError) as exc:
            raise BadRequest(f"malformed turn payload: {exc}") from None

    def to_json(self) -> dict[str, Any]:
        """The JSON-only task payload."""
        out: dict[str, Any] = {
            "turn": self.turn, "user": self.user, "message": self.message,
            "history": [{"role": m.role, "content": m.content} for m in self.history],
            "project_id": self.project_id}
        if self.project_text is not None:
            out["project_context"] = {"text": self.project_text,
                                      "grounding": list(self.project_grounding),
                                      "read_ms": self.project_read_ms}
        if self.mode is not None:
            out["mode"] = self.mode
        if self.tool_data is not None:
            out["tool_data"] = self.tool_data
        return out


@dataclass(frozen=True)
class Retrieval:
    """The passages given to the model, numbered [1]..[n] in this order."""

    passages: tuple[Passage, ...]
    index_version: str
    query: str


@dataclass(frozen=True)
class Generation:
    """The model's whole answer and its token usage."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    # True when the model stopped at the output-token cap (finish_reason "length").
    cut: bool = False


@dataclass(frozen=True)
class CitationCheck:
    """Which [n] markers the answer used and which point at no given passage."""

    cited: tuple[int, ...]
    invalid: tuple[int, ...]

    @property
    def valid(self) -> bool:
        """True when every marker points at a passage the model was given."""
        return not self.invalid
