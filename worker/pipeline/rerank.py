"""Optional rerank (docs/spec/behaviour.md B-15): the translation role scores the search's
candidates 0 (unrelated), 1 (related) or 2 (answers the question); those scored 1 or more are
kept, best first, at most KEEP."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import openai

from shared.config import ModelRole
from shared.errors import ModelError
from shared.models import client_for
from shared.passage import Passage
from worker.pipeline.prompt import prompt_text

CANDIDATES = 10  # the search's best passages the model scores
KEEP = 5  # at most this many kept
KEPT_FROM = 1  # the lowest score kept: related
PASSAGE_CHARS = 700  # of each passage's text in the prompt
# "3: 2", "[3] 2", "3 - 2", "Passage 3: 2": a passage number, then its score.
_LINE = re.compile(r"^\W*(?:passage\s*)?\[?(\d{1,2})\]?\s*[:=.)\-–]?\s*([0-2])\b",
                   re.IGNORECASE)


def rerank_prompt(question: str, passages: Sequence[Passage]) -> str:
    """The scoring request: the question and the numbered passages (title, section, text)."""
    blocks = []
    for n, p in enumerate(passages, start=1):
        text = " ".join(p.text.split())
        if len(text) > PASSAGE_CHARS:
            text = text[:PASSAGE_CHARS].rsplit(" ", 1)[0] + " …"
        blocks.append(f"[{n}] {p.title} > {p.section}\n{text}")
    return prompt_text("rerank.txt").format(question=" ".join(question.split()),
                                            passages="\n\n".join(blocks))


def parse_scores(reply: str, count: int) -> dict[int, int]:
    """Passage number (1-based) -> score from the model's reply; a passage it did not score
    is absent. A reply scoring none of them is a ModelError (nothing to rerank by)."""
    scores: dict[int, int] = {}
    for line in reply.splitlines():
        m = _LINE.match(line.strip())
        if m and 1 <= int(m.group(1)) <= count:
            scores.setdefault(int(m.group(1)), int(m.group(2)))
    if not scores:
        raise ModelError("rerank reply scored no passage")
    return scores


def reranked(passages: Sequence[Passage], scores: dict[int, int]) -> tuple[Passage, ...]:
    """The passages scored KEPT_FROM or more, best score first, the search's order within a
    score, at most KEEP; each carries its rerank score (an unscored passage counts as 0)."""
    kept = [(scores.get(n, 0), n, p) for n, p in enumerate(passages, start=1)]
    kept = [k for k in kept if k[0] >= KEPT_FROM]
    kept.sort(key=lambda k: (-k[0], k[1]))
    return tuple(dataclasses.replace(p, rerank=s) for s, _n, p in kept[:KEEP])


def rerank(role: ModelRole, question: str, passages: Sequence[Passage],
           timeout_s: float = 30) -> tuple[Passage, ...]:
    """The candidates reranked by the role's scores (see reranked); ModelError when the call
    fails or its reply scores nothing."""
    candidates = list(passages[:CANDIDATES])
    if not candidates:
        return ()
    try:
        resp = client_for(role, timeout_s).chat.completions.create(
            model=role.model, temperature=0, max_tokens=12 * len(candidates),
            messages=[{"role": "user", "content": rerank_prompt(question, candidates)}])
    except openai.OpenAIError as exc:
        raise ModelError(f"{role.name} call failed: {type(exc).__name__}") from exc
    reply = resp.choices[0].message.content or ""
    return reranked(candidates, parse_scores(reply, len(candidates)))
