"""Search-side model calls (docs/spec/behaviour.md B-13, B-14): translate a Czech question,
rewrite a follow-up."""

from __future__ import annotations

import re

import openai

from shared.config import ModelRole
from shared.errors import ModelError
from shared.models import client_for
from shared.turn_request import Message
from worker.pipeline.prompt import prompt_text, trim_history

FOLLOWUP_OPENERS = re.compile(
    r"^(and|but|so|why|how come|what about|how about|then|also|is that|does that|"
    r"a |ale|tak|proč|a co|jak to|a proč|a jak|to |tohle|takže|je to)\b", re.IGNORECASE)
REFERRING = re.compile(r"\b(it|that|this|those|these|they|them|its|to|tohle|tomu|toho|tom|"
                       r"ten|ta|ty|tím|jeho|její|jejich)\b", re.IGNORECASE)


def looks_like_followup(message: str, history: tuple[Message, ...]) -> bool:
    """A cheap guess: there is history, and the message opens like a follow-up or is a short
    question leaning on something said before."""
    if not any(m.role == "user" for m in history):
        return False
    words = message.split()
    if FOLLOWUP_OPENERS.match(message.strip()):
        return True
    return len(words) <= 6 and bool(REFERRING.search(message))


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
    # No newline after the last "English:": the model's line must continue it.
    prompt = prompt_text(prompt_file).rstrip().format(text=" ".join(text.split()))
    return complete_line(role, prompt, timeout_s) or text


def complete_line(role: ModelRole, prompt: str, timeout_s: float) -> str:
    """A completion model's greedy next line after `prompt`, whitespace folded ("" if none)."""
    try:
        resp = client_for(role, timeout_s).completions.create(
            model=role.model, prompt=prompt, temperature=0, max_tokens=80, stop=["\n"])
    except openai.OpenAIError as exc:
        raise ModelError(f"{role.name} call failed: {type(exc).__name__}") from exc
    return " ".join((resp.choices[0].text or "").split()).strip().strip('"').strip()


def rewrite_followup(role: ModelRole, message: str, history: tuple[Message, ...],
                     timeout_s: float = 30) -> str:
    """One standalone question from a follow-up and the recent turns."""
    recent = trim_history(history)[-6:]
    convo = "\n".join(f"{m.role}: {m.content[:500]}" for m in recent)
    out = _complete(role, prompt_text("rewrite.txt").format(history=convo, message=message),
                    120, timeout_s)
    return out or message
