"""One streamed chat call to the answer role (temperature 0, bounded output, time limits)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import openai

from shared.config import ModelRole, Settings
from shared.errors import ModelError, TimedOut
from shared.models import client_for
from worker.pipeline.types import Generation


def stream_answer(role: ModelRole, settings: Settings, messages: list[dict[str, str]],
                  on_token: Callable[[str], None], started: float) -> Generation:
    """Stream the answer, calling on_token per text delta; enforce first-token/total limits."""
    timeout = openai.Timeout(settings.first_token_timeout_s, connect=5.0)
    client = client_for(role, settings.first_token_timeout_s).with_options(timeout=timeout)
    kwargs: dict[str, Any] = {
        "model": role.model, "messages": messages, "temperature": 0,
        "max_tokens": settings.max_output_tokens, "stream": True,
        "stream_options": {"include_usage": True},
    }
    if settings.reasoning_effort:
        kwargs["reasoning_effort"] = settings.reasoning_effort
    parts: list[str] = []
    usage = (0, 0)
    try:
        stream = client.chat.completions.create(**kwargs)
        for chunk in stream:
            if time.monotonic() - started > settings.answer_timeout_s:
                stream.close()
                raise TimedOut("answer exceeded the time limit")
            if chunk.usage is not None:
                usage = (chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
            for choice in chunk.choices:
                delta = choice.delta.content if choice.delta else None
                if delta:
                    parts.append(delta)
                    on_token(delta)
    except openai.APITimeoutError as exc:
        raise TimedOut("model server stopped answering") from exc
    except openai.OpenAIError as exc:
        raise ModelError(f"answer call failed: {type(exc).__name__}") from exc
    return Generation("".join(parts), usage[0], usage[1], role.model)
