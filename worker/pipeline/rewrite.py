"""Search-side model calls (docs/spec/behaviour.md B-13, B-14): translate a Czech question,
rewrite a follow-up."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

import openai

from shared.config import ModelRole
from shared.errors import ModelError
from shared.models import client_for
from shared.turn_request import Message
from worker.pipeline.prompt import prompt_text, trim_history

FOLLOWUP_OPENERS = re.compile(
    r"^(and|but|so|how come|what about|how about|then|also|is that|does that|"
    r"a |ale|tak|a co|jak to|a proč|a jak|to |tohle|takže|je to)\b", re.IGNORECASE)
# "Why ...?" opens as many questions that stand alone as follow-ups: only a short one leans back.
WHY = re.compile(r"^(why|proč)\b", re.IGNORECASE)
WHY_WORDS = 4
# Words that point back at something said before, per language ("to" is an English
# preposition; "co je to" a Czech "what is").
REFERRING = {
    "en": re.compile(r"\b(it|its|that|this|those|these|they|them|their|one|ones|there)\b",
                     re.IGNORECASE),
    "cs": re.compile(r"\b(to|toto|tohle|tomu|toho|tom|tím|ten|tenhle|ta|tahle|tato|tu|tuhle|ty|"
                     r"tyto|této|tomto|tohoto|jeho|její|jejich|ho|něho|něj|něm|ji|jí|ní|nich|"
                     r"nim|tam|přitom)\b", re.IGNORECASE),
}
WHAT_IS_IT = re.compile(r"\b(co|kdo|jak|kde) (je|jsou) to\b", re.IGNORECASE)
REFERRING_WORDS = 8  # a longer question pointing back usually names its subject too


def looks_like_followup(message: str, history: tuple[Message, ...],
                        language: str | None = None) -> bool:
    """A cheap guess: there is history, and the message opens like a follow-up or is a short
    question leaning on something said before (`language`: en or cs; None reads both)."""
    return any(m.role == "user" for m in history) and _leans(message, language)


def _leans(message: str, language: str | None = None) -> bool:
    """The message opens like a follow-up, is a short "why", or is short and refers to
    something said before (measured in docs/benchmarks.md, "Follow-ups in the quotes form")."""
    text = message.strip()
    words = len(text.split())
    if FOLLOWUP_OPENERS.match(text) or (WHY.match(text) and words <= WHY_WORDS):
        return True
    refs = [REFERRING[language]] if language in REFERRING else list(REFERRING.values())
    text = WHAT_IS_IT.sub("", text)
    return words <= REFERRING_WORDS and any(r.search(text) for r in refs)


CARRIED = 3  # at most this many user messages searched as one follow-up
CARRIED_CHARS = 500  # of each earlier message


def last_answer(history: tuple[Message, ...]) -> str:
    """The conversation's last assistant answer ("" if none)."""
    return next((m.content for m in reversed(history) if m.role == "assistant"), "")


def carry_followup(message: str, history: tuple[Message, ...],
                   language: str | None = None) -> str:
    """A follow-up made searchable without a model (the quotes form's rewrite): the earlier
    user message it leans on, and the ones before while each leaned on its own, then the
    message itself, in the order they were asked."""
    asked = [" ".join(m.content.split())[:CARRIED_CHARS] for m in history if m.role == "user"]
    parts = [message]
    while asked and len(parts) < CARRIED:
        earlier = asked.pop()
        parts.insert(0, earlier)
        if not _leans(earlier, language):
            break
    return " ".join(parts)


def _complete(role: ModelRole, prompt: str, max_tokens: int, timeout_s: float) -> str:
    try:
        resp = client_for(role, timeout_s).chat.completions.create(
            model=role.model, temperature=0, max_tokens=max_tokens,
            messages=[{"role": "user", "content": prompt}])
    except openai.OpenAIError as exc:
        raise ModelError(f"{role.name} call failed: {type(exc).__name__}") from exc
    text = " ".join((resp.choices[0].message.content or "").split())
    return text.strip().strip('"').strip()


def translate_for_search(role: ModelRole, text: str, timeout_s: float = 30) -> str:
    """The question in English for the search (temperature 0); the original if empty."""
    out = _complete(role, prompt_text("translate.txt").format(text=text), 120, timeout_s)
    return out or text


FEWSHOT_PROMPT = "translate_fewshot.txt"
# The first prompt (three hand-written examples), kept to re-measure against (docs/benchmarks.md,
# "Cross-lingual retrieval offline").
FEWSHOT_PROMPT_V1 = "translate_fewshot_v1.txt"


def translate_fewshot(role: ModelRole, text: str, timeout_s: float = 30,
                      prompt_file: str = FEWSHOT_PROMPT) -> str:
    """The question in English from a base (completion) model: a few-shot "Czech: / English:"
    prompt, greedy, one line; the original if the model gives nothing."""
    # The examples: the app's own question-shaped interface strings with their English twins
    # (locale files, same key path), then three written by hand. The prompt's head is the
    # same for every question, so llama.cpp reuses its evaluated tokens from the last call.
    return complete_line(role, fewshot_prompt(text, prompt_file), timeout_s) or text


def fewshot_prompt(text: str, prompt_file: str = FEWSHOT_PROMPT) -> str:
    """The few-shot prompt ending in the question's "Czech: ...\nEnglish:"."""
    # No newline after the last "English:": the model's line must continue it.
    return prompt_text(prompt_file).rstrip().format(text=" ".join(text.split()))


def _folded(text: str) -> str:
    """A model's line, whitespace folded and outer quotes dropped."""
    return " ".join(text.split()).strip().strip('"').strip()


def complete_line(role: ModelRole, prompt: str, timeout_s: float) -> str:
    """A completion model's greedy next line after `prompt`, whitespace folded ("" if none)."""
    try:
        resp = client_for(role, timeout_s).completions.create(
            model=role.model, prompt=prompt, temperature=0, max_tokens=80, stop=["\n"])
    except openai.OpenAIError as exc:
        raise ModelError(f"{role.name} call failed: {type(exc).__name__}") from exc
    return _folded(resp.choices[0].text or "")


@dataclass(frozen=True)
class Line:
    """A completion model's line, and whether a deadline ended it before the model did."""

    text: str
    cut: bool = False

    @property
    def usable(self) -> bool:
        """Whether to search with it: written whole (half a line searched worse than the
        question as asked; docs/benchmarks.md, "The translator under a deadline")."""
        return bool(self.text) and not self.cut


def stream_line(role: ModelRole, prompt: str, deadline_s: float) -> Line:
    """A completion model's greedy next line after `prompt`, streamed, as far as it got within
    `deadline_s` seconds (whitespace folded): the stream is closed at the deadline, so a slow
    or busy model costs a turn no more than that."""
    parts: list[str] = []
    finished = threading.Event()
    closing = threading.Event()
    box: dict[str, Any] = {}

    def read() -> None:
        try:
            stream = client_for(role, deadline_s + 5).completions.create(
                model=role.model, prompt=prompt, temperature=0, max_tokens=80, stop=["\n"],
                stream=True)
            box["stream"] = stream
            for chunk in stream:
                if closing.is_set():
                    break
                if chunk.choices:
                    parts.append(chunk.choices[0].text or "")
                    if chunk.choices[0].finish_reason:
                        box["finish"] = chunk.choices[0].finish_reason
        except openai.OpenAIError as exc:
            box["error"] = exc
        except Exception as exc:  # noqa: BLE001 - the stream closed under us at the deadline
            box.setdefault("closed", exc)
        finally:
            finished.set()

    threading.Thread(target=read, name="translate", daemon=True).start()
    done = finished.wait(deadline_s)
    if not done:
        closing.set()
        stream = box.get("stream")
        if stream is not None:
            try:
                stream.close()  # the server stops writing the line nobody reads
            except Exception:  # noqa: BLE001, S110 - closing is best effort
                pass
    elif "finish" not in box:
        # Failed, or the stream broke off (no finish reason) before the deadline: not a line
        # to search with.
        failure = box.get("error") or box.get("closed")
        raise ModelError(f"{role.name} call failed: "
                         f"{type(failure).__name__ if failure else 'the line broke off'}")
    return Line(_folded("".join(list(parts)).split("\n")[0]), cut=not done)


def translate_fewshot_by(role: ModelRole, text: str, deadline_s: float,
                         prompt_file: str = FEWSHOT_PROMPT) -> Line:
    """translate_fewshot streamed under a deadline (a turn's translation step): what the
    model wrote by then; "" when it wrote nothing."""
    return stream_line(role, fewshot_prompt(text, prompt_file), deadline_s)


def rewrite_followup(role: ModelRole, message: str, history: tuple[Message, ...],
                     timeout_s: float = 30) -> str:
    """One standalone question from a follow-up and the recent turns."""
    recent = trim_history(history)[-6:]
    convo = "\n".join(f"{m.role}: {m.content[:500]}" for m in recent)
    out = _complete(role, prompt_text("rewrite.txt").format(history=convo, message=message),
                    120, timeout_s)
    return out or message
