"""One streamed chat call to the answer role (temperature 0, bounded output, time limits)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import openai

from shared.config import ModelRole, Settings
from shared.errors import AssistantError, ModelError, TimedOut
from shared.models import client_for
from worker.pipeline.types import Generation


class Cancelled(AssistantError):
    """The client asked to stop the answer."""

    code = 499
    public_message = "The answer was stopped."


def stream_answer(role: ModelRole, settings: Settings, messages: list[dict[str, str]],
                  on_token: Callable[[str], None], *, first_token_deadline: float,
                  deadline: float, response_format: dict[str, Any] | None = None
                  ) -> Generation:
    """Stream the answer, calling on_token per text delta; enforce first-token/total limits.

    The read timeout is what is left until the first-token deadline, so a server that stalls
    before its first token, or between tokens for that long, ends the turn with TimedOut.
    """
    wait = max(1.0, first_token_deadline - time.monotonic())
    timeout = openai.Timeout(wait, connect=min(5.0, wait))
    client = client_for(role).with_options(timeout=timeout)
    kwargs: dict[str, Any] = {
        "model": role.model, "messages": messages, "temperature": 0,
        "max_tokens": settings.max_output_tokens, "stream": True,
        "stream_options": {"include_usage": True},
    }
    if settings.reasoning_effort:
        kwargs["reasoning_effort"] = settings.reasoning_effort
    if response_format is not None:
        kwargs["response_format"] = response_format
    parts: list[str] = []
    usage = (0, 0)
    finished = False
    try:
        stream = client.chat.completions.create(**kwargs)
        for chunk in stream:
            if time.monotonic() > deadline:
                stream.close()
                raise TimedOut("answer exceeded the time limit")
            if chunk.usage is not None:
                usage = (chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
            for choice in chunk.choices:
                finished = finished or choice.finish_reason is not None
                delta = choice.delta.content if choice.delta else None
                if delta:
                    parts.append(delta)
                    on_token(delta)
    except openai.APITimeoutError as exc:
        raise TimedOut("model server stopped answering") from exc
    except openai.OpenAIError as exc:
        raise ModelError(f"answer call failed: {type(exc).__name__}") from exc
    if not finished:
        # The connection closed without a finish_reason: the server died mid-answer, and a
        # done frame would present a cut answer as whole.
        raise ModelError("answer stream ended before the model finished")
    return Generation("".join(parts), usage[0], usage[1], role.model)
