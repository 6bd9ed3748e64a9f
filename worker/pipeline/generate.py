"""One streamed chat call to the answer role (temperature 0, bounded output, time limits)."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
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

    Both limits are hard (see _StreamReader): a server that stalls, or trickles bytes that
    are not tokens, ends the turn with TimedOut at the limit. The read timeout (what is left
    until the first-token deadline) only bounds how long the abandoned reader thread lives.
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
    finished = cut = False
    reader = _StreamReader(lambda: client.chat.completions.create(**kwargs))
    try:
        for chunk in reader.chunks(first_token_deadline, deadline, lambda: bool(parts)):
            if chunk.usage is not None:
                usage = (chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
            for choice in chunk.choices:
                finished = finished or choice.finish_reason is not None
                cut = cut or choice.finish_reason == "length"
                delta = choice.delta.content if choice.delta else None
                if delta:
                    parts.append(delta)
                    on_token(delta)
    except openai.APITimeoutError as exc:
        raise TimedOut("model server stopped answering") from exc
    except openai.OpenAIError as exc:
        raise ModelError(f"answer call failed: {type(exc).__name__}") from exc
    finally:
        reader.close()
    if not finished:
        # The connection closed without a finish_reason: the server died mid-answer, and a
        # done frame would present a cut answer as whole.
        raise ModelError("answer stream ended before the model finished")
    return Generation("".join(parts), usage[0], usage[1], role.model, cut)


class _StreamReader:
    """Reads the model's stream in a thread of its own, so the turn's time limits are hard.

    Read timeouts alone do not bound a call: a server (or a proxy in front of it) that sends a
    keep-alive comment now and then, but no token, never trips one. The turn's thread only
    waits on a queue, with the deadline as its timeout, and at a limit it stops waiting,
    closes the response and ends the turn. The reader thread then ends at its next read.
    """

    def __init__(self, open_stream: Callable[[], Any]) -> None:
        self._open = open_stream
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._stream: Any = None
        self._closed = threading.Event()
        threading.Thread(target=self._pump, name="model-stream", daemon=True).start()

    def _pump(self) -> None:
        try:
            self._stream = self._open()
            if self._closed.is_set():
                self._stream.close()
                return
            for chunk in self._stream:
                if self._closed.is_set():
                    return
                self._queue.put(("chunk", chunk))
            self._queue.put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the turn's thread, which raises it
            self._queue.put(("error", exc))

    def chunks(self, first_token_deadline: float, deadline: float,
               has_token: Callable[[], bool]) -> Iterator[Any]:
        """Chunks until the stream ends; TimedOut at the first-token or the answer limit."""
        while True:
            limit = deadline if has_token() else min(first_token_deadline, deadline)
            left = limit - time.monotonic()
            if left <= 0:
                raise TimedOut("answer exceeded the time limit" if has_token()
                               else "no first token within the limit")
            try:
                kind, item = self._queue.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if kind == "end":
                return
            if kind == "error":
                raise item
            yield item

    def close(self) -> None:
        """Stop reading; the response is closed off this thread (closing may block)."""
        self._closed.set()
        stream = self._stream
        if stream is not None:
            threading.Thread(target=_close_quietly, args=(stream,), daemon=True).start()


def _close_quietly(stream: Any) -> None:
    # A reader being torn down after the turn ended: nothing left to report.
    with contextlib.suppress(Exception):
        stream.close()
