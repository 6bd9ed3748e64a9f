"""Retrieval evaluation (docs/spec/behaviour.md B-35): hit@1/3/5 and MRR per language, paired
bootstrap comparison."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import random
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from shared.config import Settings
from shared.language import detect_language
from shared.passage import Passage
from worker.evaluation_presets import PRESETS, ResearchConfig, research
from worker.pipeline.retrieve import RetrievalConfig, rank

MRR_DEPTH = 10


@dataclass(frozen=True)
class Question:
    """One evaluation question (the format of ../shared/eval/dev.jsonl)."""

    id: str
    language: str
    question: str
    expected_source: str | None
    expected_location: str | None
    also_in: tuple[tuple[str, str], ...]

    @property
    def targets(self) -> list[tuple[str, str]]:
        """Every (source, location) that counts as a hit."""
        main = [(self.expected_source, self.expected_location or "")] \
            if self.expected_source else []
        return main + list(self.also_in)


def load_questions(path: str | Path) -> list[Question]:
    """Questions from a JSON-lines file."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            out.append(Question(
                id=str(d["id"]), language=str(d.get("language", "unknown")),
                question=str(d["question"]), expected_source=d.get("expected_source"),
                expected_location=d.get("expected_location"),
                also_in=tuple((str(a["source"]), str(a.get("location", "")))
                              for a in d.get("also_in") or ())))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a valid question ({exc})") from None
    return out


def _key_within(inner: str, outer: str) -> bool:
    """True when key path `inner` lies inside `outer` (a.b.c within a.b, items[0] in items)."""
    return inner == outer or inner.startswith(outer + ".") or inner.startswith(outer + "[")


def location_matches(p: Passage, source: str, location: str) -> bool:
    """Whether a passage is the expected location of `source`.

    Markdown: the heading path ends with the location, or lies inside that section.
    JSON: the key paths match (globs allowed), the passage lies inside the expected key, or
    it groups the expected key's own line.
    """
    if p.source != source:
        return False
    if not location:
        return True
    if source.endswith(".json"):
        section = p.section
        if "*" in location or "?" in location:
            return fnmatch.fnmatch(section, location) or _key_within(
                section, location.split("*")[0].rstrip("."))
        if _key_within(section, location):
            return True
        if _key_within(location, section):
            rest = location[len(section):].lstrip(".")
            return any(line.startswith(rest + ":") or line.startswith(rest + ".")
                       or line.startswith(rest + "[") for line in p.text.splitlines())
        return False
    parts = [s.strip() for s in p.section.split(" > ")]
    want = [s.strip() for s in location.split(" > ")]
    return parts[-len(want):] == want or parts[:len(want)] == want


def first_hit(ranked: Sequence[Passage], q: Question) -> int | None:
    """1-based rank of the first passage matching any target, else None."""
    for i, p in enumerate(ranked, start=1):
        if any(location_matches(p, s, loc) for s, loc in q.targets):
            return i
    return None


def metrics(ranks: Sequence[int | None]) -> dict[str, float | int]:
    """hit@1/3/5 and MRR@10 of a list of first-hit ranks."""
    n = len(ranks)
    if n == 0:
        return {"n": 0}
    out: dict[str, float | int] = {"n": n}
    for k in (1, 3, 5):
        out[f"hit@{k}"] = round(sum(1 for r in ranks if r is not None and r <= k) / n, 4)
    out["mrr"] = round(sum(1 / r for r in ranks if r is not None and r <= MRR_DEPTH) / n, 4)
    return out


def paired_bootstrap(a: Sequence[float], b: Sequence[float], resamples: int = 10_000,
                     seed: int = 20261130) -> dict[str, Any]:
    """Mean of b - a over questions with 90% and 95% percentile intervals (paired resampling)."""
    if len(a) != len(b) or not a:
        raise ValueError("paired samples must be non-empty and of equal length")
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))

    def pct(q: float) -> float:
        return round(means[min(resamples - 1, max(0, int(q * resamples)))], 4)

    ci90, ci95 = (pct(0.05), pct(0.95)), (pct(0.025), pct(0.975))
    return {"mean_diff": round(sum(diffs) / n, 4), "ci90": ci90, "ci95": ci95,
            "excludes_zero_90": ci90[0] > 0 or ci90[1] < 0,
            "excludes_zero_95": ci95[0] > 0 or ci95[1] < 0}


# `--settings chat`: the retrieval a chat turn runs with these Settings (the default).
CHAT = "chat"


def load_config(spec: str, settings: Settings | None = None
                ) -> tuple[RetrievalConfig, dict[str, Any]]:
    """`chat` (what a turn runs with `settings`), a preset name (worker/evaluation_presets.py),
    or a TOML file of ResearchConfig fields (+ optional corpus_read_dsn)."""
    if spec == CHAT:
        if settings is None:
            raise ValueError("the chat settings need the service's Settings")
        return RetrievalConfig.from_settings(settings), {}
    if spec in PRESETS:
        return PRESETS[spec], {}
    path = Path(spec)
    if not path.is_file():
        raise ValueError(f"unknown settings {spec!r}: chat, a preset ({', '.join(PRESETS)}) "
                         "or a TOML file")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    extra = {k: data.pop(k) for k in ("corpus_read_dsn",) if k in data}
    names = {f.name for f in dataclasses.fields(ResearchConfig)}
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"{spec}: unknown retrieval settings {sorted(unknown)}")
    return ResearchConfig(**data), extra


Searcher = Callable[[str], tuple[str, str]]


def turn_translation(settings: Settings) -> str:
    """How a chat turn with these Settings translates a Czech question for the search:
    `chat` (the translation role), `fewshot` (the offline translator) or `none`."""
    if settings.translates:
        return "chat"
    return "fewshot" if settings.fewshot_translates else "none"


def index_settings(conn: psycopg.Connection) -> dict[str, Any]:
    """The serving index's recorded build settings (caption languages among them)."""
    row = conn.execute("SELECT settings FROM indexes WHERE current").fetchone()
    value = row[0] if row else {}
    return json.loads(value) if isinstance(value, str) else dict(value or {})


def run_eval(settings: Settings, config: RetrievalConfig, questions: Sequence[Question],
             connect: Callable[[], psycopg.Connection],
             translate: Searcher | None = None) -> dict[str, Any]:
    """Rank every answerable question; per-question ranks and metrics overall/per language."""
    per_question: list[dict[str, Any]] = []
    version = ""
    started = time.monotonic()
    with connect() as conn:
        built = index_settings(conn)
        for q in questions:
            if not q.expected_source:
                continue
            query = q.question
            lang = detect_language(q.question)
            extra: dict[str, Any] = {}
            if translate is not None and lang == "cs":
                t0 = time.perf_counter()
                query, _ = translate(q.question)
                extra = {"translation": query,
                         "translate_ms": round((time.perf_counter() - t0) * 1000, 1)}
            t0 = time.perf_counter()
            version, ranked, lexical = rank(conn, settings, dataclasses.replace(
                config, candidates=max(config.candidates, MRR_DEPTH)), query, q.question,
                limit=MRR_DEPTH, language=lang)
            extra["rank_ms"] = round((time.perf_counter() - t0) * 1000, 1)
            passages = [lexical.by_id[pid] for pid, _ in ranked if pid in lexical.by_id]
            r = first_hit(passages, q)
            per_question.append({"id": q.id, "language": q.language, "rank": r,
                                 "top": [f"{p.source} | {p.section}" for p in passages[:5]],
                                 **extra})
    langs = sorted({x["language"] for x in per_question})
    times = sorted(x["translate_ms"] for x in per_question if "translate_ms" in x)
    return {
        "translate_ms": {"n": len(times), "p50": percentile(times, 0.50),
                         "p95": percentile(times, 0.95)} if times else None,
        "index_version": version,
        "index_captions": built.get("caption_languages") or [],
        "index_caption_views": built.get("caption_views") or [],
        "index_question_views": built.get("question_views") or [],
        "index_query_adapter": bool(built.get("query_adapter")),
        "embedding_model": settings.embeddings.model,
        "settings": dataclasses.asdict(research(config)),
        "seconds": round(time.monotonic() - started, 2),
        "overall": metrics([x["rank"] for x in per_question]),
        "by_language": {lang: metrics([x["rank"] for x in per_question
                                       if x["language"] == lang]) for lang in langs},
        "questions": per_question,
    }


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values (nearest rank)."""
    if not sorted_values:
        raise ValueError("no values")
    i = min(len(sorted_values) - 1, max(0, int(round(q * len(sorted_values) + 0.5)) - 1))
    return float(sorted_values[i])


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Paired bootstrap of B - A on hit@3, hit@5 and reciprocal rank, over the same
    questions, overall and per language."""
    ra = {x["id"]: x["rank"] for x in a["questions"]}
    rb = {x["id"]: x["rank"] for x in b["questions"]}
    ids = sorted(set(ra) & set(rb))

    def hit(k: int) -> Callable[[int | None], float]:
        return lambda r: 1.0 if r is not None and r <= k else 0.0

    def rr(r: int | None) -> float:
        return 1.0 / r if r is not None and r <= MRR_DEPTH else 0.0

    def scores(sub: list[str]) -> dict[str, Any]:
        return {name: paired_bootstrap([f(ra[i]) for i in sub], [f(rb[i]) for i in sub])
                for name, f in (("hit@3", hit(3)), ("hit@5", hit(5)), ("mrr", rr))}

    lang = {x["id"]: x["language"] for x in a["questions"]}
    by_language = {}
    for code in sorted({lang[i] for i in ids}):
        sub = [i for i in ids if lang[i] == code]
        by_language[code] = {"questions": len(sub), **scores(sub)}
    return {"questions": len(ids), **scores(ids), "by_language": by_language}
