"""Agent and hybrid turns (docs/spec/behaviour.md B-20): the model reads what it needs through
read-only tools.

At most MAX_TOOL_CALLS calls, asked for in non-streamed decision calls (`tools`,
`tool_choice: auto`); then the turn goes on exactly like the workflow: one tool-less final
call that streams, over everything the tools returned, and the same checks.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai

from shared.config import Settings
from shared.errors import ModelError, TimedOut
from shared.models import client_for
from shared.passage import Passage
from shared.turn_request import TurnRequest
from worker.emit import TurnEmitter
from worker.pipeline.generate import Cancelled
from worker.pipeline.prompt import language_line, prompt_text, trim_history
from worker.pipeline.tools import ToolBox, ToolCall, execute, tool_schemas
from worker.pipeline.types import Retrieval

MAX_TOOL_CALLS = 4
# A decision names tools, it does not answer: a short reply bounds what a chatty model costs.
DECISION_MAX_TOKENS = 300
LIMIT_TEXT = (f"Error: the limit of {MAX_TOOL_CALLS} tool calls in a turn is reached; this "
              "call was not made. The answer is written now from what you already have.")


class ToolsUnsupported(Exception):
    """The answer model's server refused the tools API: the turn falls back to workflow."""


@dataclass(frozen=True)
class Gathered:
    """Everything the tools returned: passages in citation order and project texts."""

    retrieval: Retrieval
    project_texts: tuple[str, ...]
    calls: int
    cut: bool


def choose_mode(req: TurnRequest, s: Settings) -> tuple[str, str | None]:
    """(mode, note): the turn's mode, and why it fell back to workflow when it did."""
    mode = req.mode  # resolved by the web tier (the server's setting, or a dev override)
    if mode == "workflow":
        return mode, None
    if s.answer_tools == "off" or (s.answer_tools == "auto" and s.answer.provider != "api"):
        return "workflow", (f"{mode} mode needs an answer model that can call tools; "
                            f"{s.answer.model} cannot here, so this turn used workflow.")
    return mode, None


def _given_text(seed: Retrieval | None, summary: str | None) -> str:
    parts = []
    if seed is not None and seed.passages:
        parts.append("\n".join(f"[{n}] {p.title} — {p.section}: {p.text[:300]}"
                               for n, p in enumerate(seed.passages, start=1)))
    if summary:
        parts.append(summary)
    return "\n\n".join(parts)


def decision_messages(req: TurnRequest, lang: str, seed: Retrieval | None,
                      summary: str | None) -> list[dict[str, Any]]:
    """The opening messages of the decision calls."""
    system = prompt_text("agent_system.txt").strip()
    given = _given_text(seed, summary)
    if given:
        system += "\n\n" + prompt_text("agent_given.txt").format(given=given).strip()
    line = language_line(lang)
    if line:
        system += "\n\n" + line
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    messages += [{"role": m.role, "content": m.content} for m in trim_history(req.history)]
    messages.append({"role": "user", "content": req.message})
    return messages


def decide(s: Settings, messages: list[dict[str, Any]], deadline: float
           ) -> tuple[list[ToolCall], str, tuple[int, int]]:
    """One non-streamed decision call: (tool calls, text, usage)."""
    wait = max(1.0, deadline - time.monotonic())
    client = client_for(s.answer).with_options(timeout=openai.Timeout(wait, connect=min(5, wait)))
    kwargs: dict[str, Any] = {"model": s.answer.model, "messages": messages,
                              "tools": tool_schemas(), "tool_choice": "auto", "temperature": 0,
                              "max_tokens": DECISION_MAX_TOKENS}
    if s.reasoning_effort:
        kwargs["reasoning_effort"] = s.reasoning_effort
    try:
        resp = client.chat.completions.create(**kwargs)
    except openai.BadRequestError as exc:
        raise ToolsUnsupported("the answer model's server refused tool calls") from exc
    except openai.APITimeoutError as exc:
        raise TimedOut("model server stopped answering") from exc
    except openai.OpenAIError as exc:
        raise ModelError(f"decision call failed: {type(exc).__name__}") from exc
    usage = (resp.usage.prompt_tokens or 0, resp.usage.completion_tokens or 0) if resp.usage \
        else (0, 0)
    if not resp.choices:
        return [], "", usage
    message = resp.choices[0].message
    calls = []
    for tc in message.tool_calls or []:
        function = getattr(tc, "function", None)
        if function is None:
            continue
        calls.append(ToolCall(tc.id or f"call_{uuid.uuid4().hex[:12]}",
                              str(function.name or ""), str(function.arguments or "")))
    return calls, message.content or "", usage


def _assistant_message(calls: list[ToolCall], text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text or None, "tool_calls": [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls]}


def gather(req: TurnRequest, s: Settings, emit: TurnEmitter, lang: str,
           search: Callable[[str], Retrieval], cancelled: Callable[[], bool], deadline: float,
           seed: Retrieval | None = None, summary: str | None = None) -> Gathered:
    """The tool loop: decision calls and tool calls until the model is done or the limit."""
    seeded: tuple[Passage, ...] = seed.passages if seed is not None else ()
    box = ToolBox(search, req.tool_data, seeded)
    if seed is not None:
        box.index_version = seed.index_version
    messages = decision_messages(req, lang, seed, summary)
    calls = refused = 0
    for round_no in range(1, MAX_TOOL_CALLS + 1):
        if cancelled():
            raise Cancelled("client cancelled")
        if time.monotonic() > deadline:
            raise TimedOut("tool calls took too long")
        with emit.step("plan") as d:
            try:
                asked, text, usage = decide(s, messages, deadline)
            except ToolsUnsupported:
                if round_no == 1:
                    raise
                # The same server took the tools a moment ago: this is a failure, not support.
                raise ModelError("decision call refused") from None
            d.update(round=round_no, tool_calls=len(asked), prompt_tokens=usage[0],
                     completion_tokens=usage[1])
        if not asked:
            break
        messages.append(_assistant_message(asked, text))
        for call in asked:
            if calls >= MAX_TOOL_CALLS:
                # Every call gets its answer (the API wants one per id), over the limit too.
                messages.append({"role": "tool", "tool_call_id": call.id, "content": LIMIT_TEXT})
                with emit.step("tool") as d:
                    d.update(tool=call.name[:60], args={}, ok=False, chars=0, error="limit")
                refused += 1
                continue
            calls += 1
            with emit.step("tool") as d:
                outcome = execute(box, call)
                d.update(tool=call.name[:60], args=outcome.args, ok=outcome.ok,
                         chars=outcome.chars, **({"error": outcome.error} if outcome.error
                                                 else {}))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": outcome.text})
        if calls >= MAX_TOOL_CALLS:
            break  # the model does not get to ask again: the final call happens now
    cut = calls >= MAX_TOOL_CALLS or refused > 0
    if cut:
        with emit.step("tool_limit") as d:
            d.update(calls=calls, refused=refused)
    return Gathered(box.retrieval(req.message), tuple(box.project_texts), calls, cut)



def hybrid_summary(req: TurnRequest) -> str | None:
    """Hybrid's up-front project block: the panel project's summary and result, no opinions."""
    if not req.project_id or not req.tool_data:
        return None
    entry = (req.tool_data.get("read") or {}).get(req.project_id)
    if not isinstance(entry, dict):
        return None
    parts = [str(entry.get(k) or "") for k in ("project", "result")]
    return "\n".join(p for p in parts if p.strip()) or None


def trace_steps(steps: list[dict[str, Any]], keep_text: bool) -> list[dict[str, Any]]:
    """The steps for the trace: a search query is the user's words, kept only with trace text."""
    if keep_text:
        return steps
    out = []
    for step in steps:
        args = step.get("args")
        if isinstance(args, dict) and "query" in args:
            step = {**step, "args": {**{k: v for k, v in args.items() if k != "query"},
                                     "query_chars": len(str(args["query"]))}}
        out.append(step)
    return out
