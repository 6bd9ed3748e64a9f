"""Prompt assembly from the text files in worker/prompts/ (no prompt text buried in code)."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from shared.history import HISTORY_MESSAGES, bound_history
from shared.turn_request import Message
from worker.pipeline.markers import strip_markers
from worker.pipeline.types import Retrieval


@lru_cache(maxsize=8)
def prompt_text(name: str) -> str:
    """A prompt file's text."""
    return resources.files("worker").joinpath("prompts", name).read_text(encoding="utf-8")


def language_line(lang: str) -> str:
    """'Answer in X.' when the language is known, else nothing (docs/spec/behaviour.md B-23)."""
    for line in prompt_text("language_line.txt").splitlines():
        code, _, text = line.partition("=")
        if code == lang:
            return text
    return ""


# The spaces a removed marker leaves: before punctuation, doubled, at a line's end.
_BEFORE_STOP = re.compile(r"[ \t]+(?=[.,;:!?)])")
_DOUBLED = re.compile(r"(?<=\S)[ \t]{2,}(?=\S)")
_TRAILING = re.compile(r"[ \t]+$", re.MULTILINE)


def _unmarked(text: str) -> str:
    """An earlier answer without its markers, no space left where one was."""
    text = _BEFORE_STOP.sub("", strip_markers(text))
    return _TRAILING.sub("", _DOUBLED.sub(" ", text))


def trim_history(history: tuple[Message, ...]) -> list[Message]:
    """Last 20 messages within ~6,000 characters (shared.history.bound_history), oldest dropped
    first; answers lose their [n] in every form the citation check reads (markers.py)."""
    recent = [Message(m.role, _unmarked(m.content) if m.role == "assistant" else m.content)
              for m in history[-HISTORY_MESSAGES:] if m.role in ("user", "assistant")]
    return bound_history(recent)


FENCE_TAG = re.compile(r"</?\s*passage\s*>", re.IGNORECASE)


def format_passages(retrieval: Retrieval) -> str:
    """Passages numbered [1]..[n] with title and heading path; the passage's own text, fenced
    (a passage cannot close its own fence: any passage tag inside it is defused)."""
    blocks = []
    for n, p in enumerate(retrieval.passages, start=1):
        text = FENCE_TAG.sub("(passage tag removed)", p.text)
        blocks.append(f"[{n}] {p.title} — {p.section} ({p.source})\n<passage>\n{text}\n"
                      "</passage>")
    return "\n\n".join(blocks) if blocks else "(no passages found)"


def build_messages(question: str, history: tuple[Message, ...], retrieval: Retrieval,
                   lang: str, project: str | None = None, structured: bool = False,
                   weak: bool = False) -> list[dict[str, str]]:
    """The chat messages for the answer call (`weak`: no passage matches the question closely)."""
    system = prompt_text("answer_system.txt").strip() + "\n\n" + \
        prompt_text("answer_facts.txt").strip()
    if structured:
        system += "\n\n" + prompt_text("answer_structured.txt").strip()
    # The project block before the passages: it is the same for every question about a project,
    # so the model server reuses its evaluated prefix (llama.cpp's prefix cache) and only the
    # passages and the question are read again (docs/benchmarks.md, time to the first word).
    if project:
        system += "\n\n" + project
    if weak:
        system += "\n\n" + prompt_text("weak_line.txt").strip()
    system += "\n\n" + prompt_text("passages.txt").format(passages=format_passages(retrieval))
    line = language_line(lang)
    if line:
        system += "\n\n" + line
    messages = [{"role": "system", "content": system}]
    messages += [{"role": m.role, "content": m.content} for m in trim_history(history)]
    # The citation reminder sits next to the question, where every model reads it last.
    messages.append({"role": "user",
                     "content": prompt_text("question.txt").format(question=question).strip()})
    return messages
