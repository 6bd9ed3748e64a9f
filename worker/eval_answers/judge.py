"""The judge role (docs/spec/behaviour.md B-35): blind scoring of answers with a JSON schema, and
judge agreement."""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import openai

from shared.config import ModelRole
from shared.errors import ModelError
from shared.models import client_for
from worker.eval_answers.questions import AnswerQuestion
from worker.pipeline.prompt import prompt_text

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        # Bounds keep a small model held by a grammar from listing claims until it runs out
        # of tokens (a cut-off verdict is no verdict).
        "facts": {"type": "array", "maxItems": 12, "items": {
            "type": "object",
            "properties": {"n": {"type": "integer"}, "delivered": {"type": "boolean"}},
            "required": ["n", "delivered"]}},
        "unsupported_claims": {"type": "array", "maxItems": 8,
                               "items": {"type": "string", "maxLength": 200}},
    },
    "required": ["facts", "unsupported_claims"],
}
JUDGE_MAX_TOKENS = 600


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict on one answer: which expected facts it delivered, what it made up."""

    delivered: tuple[bool, ...]
    unsupported_claims: tuple[str, ...]

    @property
    def facts_share(self) -> float | None:
        """Share of expected facts delivered (None when the question expects none)."""
        return sum(self.delivered) / len(self.delivered) if self.delivered else None


def blind_items(pairs: Sequence[tuple[str, str]], seed: int,
                existing: dict[str, dict[str, str]] | None = None) -> dict[str, dict[str, str]]:
    """Anonymous item ids for (setup, question id) pairs, in a shuffled order.

    The ids are random tokens, so neither the id nor the order tells the judge which setup
    wrote an answer; ids already handed out (a resumed run) are kept.
    """
    items = dict(existing or {})
    known = {(v["setup"], v["question"]) for v in items.values()}
    fresh = [p for p in pairs if p not in known]
    random.Random(seed).shuffle(fresh)
    for setup, question in fresh:
        items[secrets.token_hex(6)] = {"setup": setup, "question": question}
    return items


def judge_order(items: dict[str, dict[str, str]], seed: int) -> list[str]:
    """The order the judge sees the items in: shuffled, setups interleaved at random.

    Shuffled from a fixed starting order, so the run's seed alone decides it (the ids are
    random tokens; sorting by them would make every run's order a new draw).
    """
    order = sorted(items, key=lambda i: (items[i]["setup"], items[i]["question"]))
    random.Random(seed + 1).shuffle(order)
    return order


def second_sample(items: Sequence[str], share: float, seed: int) -> list[str]:
    """A random sample (share of the items, at least one) for the second judge."""
    if not items or share <= 0:
        return []
    k = min(len(items), max(1, round(share * len(items))))
    return sorted(random.Random(seed + 2).sample(sorted(items), k))


def judge_messages(q: AnswerQuestion, answer: str, sources: Sequence[dict[str, Any]],
                   fact_order: Sequence[int] | None = None) -> list[dict[str, str]]:
    """The judge's input: question, facts, passages and the answer; never the setup."""
    order = list(fact_order) if fact_order is not None else list(range(len(q.expected_facts)))
    facts = "\n".join(f"{i + 1}. {q.expected_facts[i]}" for i in order) or \
        "(none: the passages are not expected to answer this question)"
    passages = "\n\n".join(
        f"[{s.get('n')}] {s.get('title', '')} — {s.get('section', '')}\n"
        f"{s.get('text') or s.get('excerpt', '')}"
        for s in sources) or "(no passages)"
    user = prompt_text("judge_input.txt").format(
        question=q.question, facts=facts, passages=passages, answer=answer.strip())
    return [{"role": "system", "content": prompt_text("judge_system.txt").strip()},
            {"role": "user", "content": user.strip()}]


def _response_format(role: ModelRole) -> dict[str, Any]:
    # As for the structured answer form: hosted APIs take json_schema, llama.cpp a grammar.
    if role.provider == "api":
        return {"type": "json_schema",
                "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": False}}
    return {"type": "json_object", "schema": VERDICT_SCHEMA}


def call_judge(role: ModelRole, messages: list[dict[str, str]], timeout_s: float = 300.0
               ) -> tuple[str, dict[str, int]]:
    """One judge call at temperature 0; (raw text, token usage)."""
    kwargs: dict[str, Any] = {"model": role.model, "messages": messages, "temperature": 0,
                              "max_tokens": JUDGE_MAX_TOKENS,
                              "response_format": _response_format(role)}
    try:
        resp = client_for(role, timeout_s).chat.completions.create(**kwargs)
    except openai.OpenAIError as exc:
        raise ModelError(f"judge call failed: {type(exc).__name__}") from exc
    usage = {"prompt_tokens": resp.usage.prompt_tokens if resp.usage else 0,
             "completion_tokens": resp.usage.completion_tokens if resp.usage else 0}
    return resp.choices[0].message.content or "", usage


def parse_verdict(raw: str, fact_count: int, fact_order: Sequence[int] | None = None
                  ) -> Verdict:
    """The verdict, facts mapped back to the question's own order; ValueError when unusable."""
    try:
        data = json.loads(raw, strict=False)
    except ValueError:
        raise ValueError("the judge's verdict is not JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("facts", []), list):
        raise ValueError("the judge's verdict does not follow the schema")
    order = list(fact_order) if fact_order is not None else list(range(fact_count))
    delivered = [False] * fact_count
    for entry in data.get("facts") or []:
        if not isinstance(entry, dict):
            continue
        n = entry.get("n")
        # The judge numbers facts 1..k in the order it was shown them.
        if isinstance(n, int) and 1 <= n <= len(order) and entry.get("delivered") is True:
            delivered[order[n - 1]] = True
    claims = data.get("unsupported_claims") or []
    if not isinstance(claims, list):
        raise ValueError("the judge's unsupported_claims is not a list")
    return Verdict(tuple(delivered), tuple(str(c) for c in claims if str(c).strip()))


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two raters' yes/no labels; None when chance agreement is total."""
    if len(a) != len(b):
        raise ValueError("both raters must label the same items")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected >= 1.0:
        return None
    return round((observed - expected) / (1 - expected), 4)
