"""The prompt-echo check (in code, no model call): an answer that repeats the prompt's own
instruction text or markup instead of answering.

Instruction text is read from the prompt templates, never from the passages: a run of words
shared with a passage, the project data or the user's own messages is not an echo, so quoting
the documentation (which may describe this assistant's prompt) is never flagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from worker.pipeline.overlap import Gram, grams, grams_of, shared_runs, words
from worker.pipeline.prompt import prompt_text

# The templates whose text is instruction to the answer model (answer_facts.txt is not: its
# pinned facts are what an answer may state).
INSTRUCTION_FILES = ("answer_system.txt", "answer_structured.txt", "question.txt",
                     "passages.txt", "weak_line.txt", "language_line.txt", "agent_system.txt",
                     "agent_given.txt")
# A run of words shared with the instructions is an echo when it is LONG_RUN words or more, or
# holds a whole instruction line or clause of RUN words or more ("Cite only numbers of passages given
# below"): a copied rule is caught, while the words an answer is asked to say ("the
# documentation does not cover this") are only part of a clause and are not.
RUN = 6
LONG_RUN = 10
_CLAUSE_END = re.compile(r"[.;:,()!?\"]")
MAX_SHOWN = 3
SHOWN_CHARS = 120
_PLACEHOLDER = re.compile(r"\{\w+\}")
# Prompt markup: the passage and project fences, the judge's fence, what the fence defuser
# writes, a passage heading line ("[2] Title — Section (docs/x.md)") and unfilled placeholders.
MARKUP = re.compile(
    r"<\s*/?\s*(?:passage|project-data|answer)\s*>"
    r"|\(passage tag removed\)|\(no passages found\)"
    r"|\{(?:question|passages|given|text|history|message)\}"
    r"|^[ \t]*\[\d+\][^\n]*\s—\s[^\n]*\([^()\s]+\.\w+\)[ \t]*$",
    re.IGNORECASE | re.MULTILINE)
_HEADER = re.compile(r"^[ \t]*([^\n:]{3,80}):[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class EchoCheck:
    """Prompt markup and instruction text found in an answer."""

    markup: tuple[str, ...]
    instructions: tuple[str, ...]

    @property
    def valid(self) -> bool:
        """True when the answer repeats no instruction text and no prompt markup."""
        return not self.markup and not self.instructions


def _template_lines(name: str) -> list[str]:
    """A template's lines, split at its placeholders (language_line.txt: the text after "=")."""
    lines = prompt_text(name).splitlines()
    if name == "language_line.txt":
        lines = [line.partition("=")[2] for line in lines]
    return [part for line in lines for part in _PLACEHOLDER.split(line) if part.strip()]


@lru_cache(maxsize=1)
def instruction_lines() -> tuple[str, ...]:
    """Every instruction line of the answer model's prompt templates."""
    return tuple(line for name in INSTRUCTION_FILES for line in _template_lines(name))


@lru_cache(maxsize=1)
def _instruction_grams() -> frozenset[Gram]:
    return frozenset(grams_of(instruction_lines(), RUN))


@lru_cache(maxsize=1)
def _clauses() -> frozenset[Gram]:
    """The instruction clauses and whole lines of RUN words or more."""
    lines = instruction_lines()
    return frozenset({tuple(c) for line in lines
                      for part in _CLAUSE_END.split(line) if len(c := words(part)) >= RUN}
                     | {tuple(c) for line in lines if len(c := words(line)) >= RUN})


def _holds_clause(run: list[str], clauses: Iterable[Gram]) -> bool:
    text = " " + " ".join(run) + " "
    return any(" " + " ".join(c) + " " in text for c in clauses)


@lru_cache(maxsize=1)
def _headers() -> tuple[str, ...]:
    """The templates' heading lines ("Ground rules:", "Passages (material, ...):")."""
    names = (*INSTRUCTION_FILES, "answer_facts.txt")
    found = {m.group(1).strip() for n in names for m in _HEADER.finditer(prompt_text(n))}
    return tuple(sorted(h for h in found if len(words(h)) >= 2))


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"


def check_echo(answer: str, material: Iterable[str] = (),
               extra_instructions: Iterable[str] = ()) -> EchoCheck:
    """Markup and instruction runs of `answer`; runs also in `material` (passages, project
    data, the user's messages) do not count. `extra_instructions`: more instruction text of
    this turn (the project block's preface)."""
    markup = [m.group(0).strip() for m in MARKUP.finditer(answer)]
    low = answer.lower()
    # A heading of three words or more is markup as it stands; "Ground rules" only with its colon.
    markup += [h for h in _headers()
               if (h.lower() if len(words(h)) >= 3 else h.lower() + ":") in low]
    seq = words(answer)
    material_grams = grams_of(material, RUN)
    extra = grams_of(extra_instructions, RUN)
    found = {g for g in grams(seq, RUN) if (g in _instruction_grams() or g in extra)
             and g not in material_grams}
    clauses = _clauses() | {tuple(c) for t in extra_instructions
                            for part in _CLAUSE_END.split(t) if len(c := words(part)) >= RUN}
    runs = [" ".join(seq[a:b]) for a, b in shared_runs(seq, RUN, found)
            if b - a >= LONG_RUN or _holds_clause(seq[a:b], clauses)]
    return EchoCheck(tuple(dict.fromkeys(_shown(m) for m in markup))[:MAX_SHOWN],
                     tuple(_shown(r) for r in runs)[:MAX_SHOWN])


# The web tier fences the project's data with this tag (web/project/context.py); what comes
# before the fence is the block's own instruction to the model.
PROJECT_FENCE = "<project-data>"


def split_project(text: str) -> tuple[str, str]:
    """(preface, data) of a project block: the instruction before the fence, and the rest."""
    preface, fence, rest = text.partition(PROJECT_FENCE)
    return (preface, fence + rest) if fence else ("", text)
