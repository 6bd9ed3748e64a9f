"""Read-only tools of agent and hybrid turns (docs/spec/behaviour.md B-20): plain functions behind
JSON schemas.

A tool never raises: an unknown tool, bad arguments or a failure becomes an error text the
model reads and can recover from. Project tools only read what the web tier prefetched with
the user's own access (req.tool_data), so another user's project is simply not there.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shared.passage import Passage
from worker.pipeline.prompt import FENCE_TAG
from worker.pipeline.types import Retrieval

log = logging.getLogger(__name__)
MAX_RESULT_CHARS = 12000
MAX_PASSAGES = 15  # over all searches of a turn: the final prompt stays bounded
MAX_QUERY_CHARS = 300
MAX_ID_CHARS = 64
EVENT_ARG_CHARS = 120  # arguments shown in events and traces are cut to this

_ID = {"type": "object", "properties": {"id": {"type": "string", "description":
                                               "The project id from list_my_projects."}},
       "required": ["id"], "additionalProperties": False}
_SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "search_docs": ("Search the BeCoMe documentation; returns numbered passages to cite as [n].",
                    {"type": "object", "properties": {"query": {
                        "type": "string", "description": "What to look for, in English."}},
                     "required": ["query"], "additionalProperties": False}),
    "list_my_projects": ("List the signed-in user's own BeCoMe projects (id and name).",
                         {"type": "object", "properties": {}, "additionalProperties": False}),
    "read_project": ("Read one of the user's projects: name, description, scale, members.", _ID),
    "read_result": ("Read the stored result of one of the user's projects, with the figures "
                    "computed from it.", _ID),
    "read_opinions": ("Read the experts' opinions of one of the user's projects.", _ID),
}
TOOL_NAMES = tuple(_SPECS)


def tool_schemas() -> list[dict[str, Any]]:
    """The `tools` parameter of the chat call."""
    return [{"type": "function", "function": {"name": name, "description": desc,
                                              "parameters": params}}
            for name, (desc, params) in _SPECS.items()]


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for (arguments as the raw JSON text it wrote)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolOutcome:
    """What goes back to the model, and what the event and trace show of the call."""

    text: str
    ok: bool
    args: dict[str, str]
    error: str | None = None

    @property
    def chars(self) -> int:
        """Size of the result the model reads."""
        return len(self.text)


class ToolBox:
    """The tools' state in one turn: passages numbered once and for all, project text read."""

    def __init__(self, search: Callable[[str], Retrieval], data: Mapping[str, Any] | None,
                 seed: tuple[Passage, ...] = ()) -> None:
        self._search = search
        self._data = data
        self.passages: list[Passage] = list(seed)
        self._numbers = {p.id: n for n, p in enumerate(self.passages, start=1)}
        self.index_version = ""
        self.project_texts: list[str] = []

    def retrieval(self, query: str) -> Retrieval:
        """Every passage any search returned, in citation order [1]..[n]."""
        return Retrieval(tuple(self.passages), self.index_version, query)

    def _number(self, p: Passage) -> int | None:
        n = self._numbers.get(p.id)
        if n is None and len(self.passages) < MAX_PASSAGES:
            self.passages.append(p)
            n = self._numbers[p.id] = len(self.passages)
        return n

    def _keep(self, text: str) -> str:
        if text not in self.project_texts:
            self.project_texts.append(text)
        return text

    def search_docs(self, query: str) -> str:
        """Numbered passages for the query; a passage seen before keeps its number."""
        found = self._search(query)
        self.index_version = found.index_version or self.index_version
        blocks = []
        for p in found.passages:
            n = self._number(p)
            if n is None:
                continue
            text = FENCE_TAG.sub("(passage tag removed)", p.text)
            blocks.append(f"[{n}] {p.title} — {p.section} ({p.source})\n<passage>\n{text}\n"
                          "</passage>")
        if not blocks:
            return "No passages found for this query."
        return "\n\n".join(blocks)

    def _projects(self) -> tuple[list[dict[str, str]], dict[str, Any]]:
        if not self._data or self._data.get("unavailable"):
            raise ToolError("unavailable", "Project data is not available in this turn (the "
                            "server has no connection to the BeCoMe app, or nobody is signed in).")
        return list(self._data.get("projects") or []), dict(self._data.get("read") or {})

    def list_my_projects(self) -> str:
        """The user's projects, fenced."""
        self._projects()  # refuses when there is no project data in this turn
        text = (self._data or {}).get("list_text")
        return self._keep(text if isinstance(text, str) else "")

    def read_section(self, project_id: str, section: str) -> str:
        """One prefetched section of one of the user's projects."""
        projects, read = self._projects()
        entry = read.get(project_id)
        if entry is None:
            if any(p.get("id") == project_id for p in projects):
                raise ToolError("not_prefetched", "This project was not read for this turn; "
                                "the user can open it from its own panel and ask there.")
            # The same words whether it exists for someone else or not at all
            # (docs/spec/behaviour.md B-16).
            raise ToolError("not_found", "No project with this id among the user's projects.")
        text = str(entry.get(section) or "")
        if not text.strip():
            text = "No result is stored in the app for this project."
        return self._keep(text)


class ToolError(Exception):
    """A tool refused or failed; the model gets `message` and may try something else."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        args = json.loads(call.arguments or "{}")
    except ValueError:
        raise ToolError("bad_arguments", "The arguments are not valid JSON.") from None
    if not isinstance(args, dict):
        raise ToolError("bad_arguments", "The arguments must be a JSON object.")
    return args


def _string(args: dict[str, Any], name: str, limit: int) -> str:
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ToolError("bad_arguments", f"The argument {name!r} must be a non-empty string.")
    if len(value) > limit:
        raise ToolError("bad_arguments", f"The argument {name!r} is too long (at most {limit} "
                        "characters).")
    return value.strip()


def _shown(args: dict[str, Any]) -> dict[str, str]:
    """Only the schema's own arguments, cut short (events and traces never get more)."""
    return {k: str(args[k])[:EVENT_ARG_CHARS] for k in ("query", "id") if k in args}


def execute(box: ToolBox, call: ToolCall) -> ToolOutcome:
    """Run one tool call; every failure becomes an error outcome, never an exception."""
    args: dict[str, Any] = {}
    try:
        if call.name not in _SPECS:
            raise ToolError("unknown_tool", f"There is no tool {call.name[:60]!r}; the tools "
                            f"are {', '.join(TOOL_NAMES)}.")
        args = _arguments(call)
        if call.name == "search_docs":
            text = box.search_docs(_string(args, "query", MAX_QUERY_CHARS))
        elif call.name == "list_my_projects":
            text = box.list_my_projects()
        else:
            section = call.name.removeprefix("read_")
            text = box.read_section(_string(args, "id", MAX_ID_CHARS), section)
    except ToolError as exc:
        return ToolOutcome(f"Error: {exc.message}", False, _shown(args), exc.code)
    except Exception as exc:  # noqa: BLE001 - a failing tool is an error the model reads
        log.warning("tool %s failed: %s", call.name, type(exc).__name__)
        return ToolOutcome("Error: the tool failed; try another query or answer with what you "
                           "have.", False, _shown(args), "tool_failed")
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS - 1] + "…"
    return ToolOutcome(text, True, _shown(args))
