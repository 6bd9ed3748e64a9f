"""A Czech->English glossary from the app's own short interface labels, shown to the few-shot
translator as examples of the question's domain words (docs/benchmarks.md, "Captions shipped with
the corpus"): "Maximální chyba" is "Maximum Error", not "minimum error"."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from shared.config import ModelRole
from worker.pipeline.lexicon import cs_terms
from worker.pipeline.prompt import prompt_text
from worker.pipeline.rewrite import FEWSHOT_PROMPT, complete_line

MAX_WORDS = 4  # a label, not a sentence
PER_QUESTION = 3
PLACEHOLDER = re.compile(r"[{}=@/]|\d")


@dataclass(frozen=True)
class Glossary:
    """Short (Czech, English) label pairs, each with the Czech lemmas it stands for."""

    entries: tuple[tuple[frozenset[str], str, str], ...]

    def hints(self, question: str, limit: int = PER_QUESTION) -> list[tuple[str, str]]:
        """The pairs whose Czech lemmas all occur in the question: the most words first, and
        none whose words an earlier pick already covers."""
        words = set(cs_terms(question))
        found = sorted((e for e in self.entries if e[0] <= words),
                       key=lambda e: (-len(e[0]), len(e[1]), e[1]))
        picked: list[tuple[frozenset[str], str, str]] = []
        for entry in found:
            if any(entry[0] <= p[0] for p in picked):
                continue
            picked.append(entry)
            if len(picked) == limit:
                break
        return [(cs, en) for _terms, cs, en in picked]


def build_glossary(pairs: Iterable[tuple[str, str]]) -> Glossary:
    """The label pairs of aligned (Czech, English) interface texts: at most MAX_WORDS words a
    side, no placeholder, number or markup; the first English text of a Czech label wins."""
    seen: dict[frozenset[str], tuple[str, str]] = {}
    for cs, en in pairs:
        cs, en = cs.strip().rstrip(":.!…").strip(), en.strip().rstrip(":.!…").strip()
        if not cs or not en or len(cs.split()) > MAX_WORDS or len(en.split()) > MAX_WORDS:
            continue
        if PLACEHOLDER.search(cs) or PLACEHOLDER.search(en) or cs.lower() == en.lower():
            continue
        terms = frozenset(cs_terms(cs))
        if terms and terms not in seen:
            seen[terms] = (cs, en)
    return Glossary(tuple((t, cs, en) for t, (cs, en) in seen.items()))


def glossary_prompt(text: str, hints: list[tuple[str, str]],
                    prompt_file: str = FEWSHOT_PROMPT) -> str:
    """The few-shot prompt with the hints as the last examples before the question."""
    head, sep, tail = prompt_text(prompt_file).rstrip().rpartition("Czech: {text}")
    examples = "".join(f"Czech: {cs}\nEnglish: {en}\n" for cs, en in hints)
    return (head + examples + sep + tail).format(text=" ".join(text.split()))


def translate_with_glossary(role: ModelRole, text: str, glossary: Glossary,
                            timeout_s: float = 30) -> str:
    """translate_fewshot with the question's glossary hints; the original if nothing comes."""
    return complete_line(role, glossary_prompt(text, glossary.hints(text)), timeout_s) or text
