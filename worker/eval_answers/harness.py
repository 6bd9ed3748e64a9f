"""`eval answers` end to end: collect, judge, grade, compare, accept, report (resumable)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.config import ModelRole
from shared.passage import Passage
from worker.eval_answers import report, run, seal, stats
from worker.eval_answers.questions import (
    AnswerQuestion,
    file_sha256,
    is_sealed,
    load_answer_questions,
)
from worker.pipeline.prompt import build_messages
from worker.pipeline.quote_answer import found
from worker.pipeline.types import Retrieval

SEED = 20261130


@dataclass(frozen=True)
class Target:
    """A setup to evaluate: its slot (A, B), provenance, and how to ask it."""

    slot: str
    provenance: dict[str, Any]
    ask: run.Ask


@dataclass(frozen=True)
class Judges:
    """The judge roles and the share the second one rescores."""

    first: ModelRole | None
    second: ModelRole | None
    share: float = 0.25


# Full text of a passage by (source, section), from the index the setups answer from.
Lookup = Callable[[str, str], str | None]
# Every chunk's text of a section by (source, section): a quote may come from any of them.
Texts = Callable[[str, str], list[str]]
CHARS_PER_TOKEN = 4.0  # a common rough rule for English; Czech runs a little higher


def with_passage_text(record: dict[str, Any], lookup: Lookup | None,
                      texts: Texts | None = None) -> dict[str, Any]:
    """The record with each source's full passage text (the excerpt when it cannot be found):
    of a section cut into pieces, the piece the source's excerpt begins (`texts`), else the
    section's first piece (`lookup`)."""
    sources = []
    for s in record.get("sources") or []:
        # A locale source shows its text as the section; its key path is in "key".
        src, sec = s.get("source", ""), s.get("key") or s.get("section", "")
        head = str(s.get("excerpt") or "").removesuffix("…")
        text = next((t for t in texts(src, sec) if head and t.startswith(head)), None) \
            if texts else None
        if text is None and lookup:
            text = lookup(src, sec)
        sources.append({**s, "text": text or s.get("excerpt", "")})
    return {**record, "sources": sources}


def with_quotes_found(record: dict[str, Any], texts: Texts | None) -> dict[str, Any]:
    """The record with `quotes_found`: how many of its quotes (structured block) are in their
    section's text in the index word for word, checked here rather than taken from the turn;
    and `first_quote_text`: the piece of its section the first quote is in (its grade reads
    it: an interface group counts for the key whose line it holds)."""
    quotes = (record.get("structured") or {}).get("quotes") or []
    if texts is None or not quotes:
        return record
    count = 0
    first_piece = None
    for i, q in enumerate(quotes):
        # As the turn checked it (a group of labels: each label).
        piece = next((t for t in texts(str(q.get("source") or ""), str(q.get("section") or ""))
                      if isinstance(q, dict) and found(q, t)), None)
        count += piece is not None
        if i == 0:
            first_piece = piece
    return {**record, "quotes_found": {"quotes": len(quotes), "found": count},
            "first_quote_text": first_piece}


def estimated_usage(q: AnswerQuestion, record: dict[str, Any]) -> dict[str, Any] | None:
    """Token counts from characters when the server reported none (llama.cpp's stream does
    not): the answer prompt is rebuilt from the prompt files and the passages."""
    usage = record.get("usage") or {}
    if record.get("outcome") != "done" or usage.get("prompt_tokens"):
        return None
    passages = tuple(Passage(str(s.get("n")), s.get("source", ""), s.get("title", ""),
                             s.get("section", ""), "", s.get("text", ""), "",
                             bool(s.get("local")), float(s.get("score") or 0))
                     for s in record.get("sources") or [])
    messages = build_messages(q.question, (), Retrieval(passages, "", q.question),
                              str(record.get("detected_language") or "unknown"))
    chars = sum(len(m["content"]) for m in messages)
    return {"prompt_tokens": round(chars / CHARS_PER_TOKEN),
            "completion_tokens": round(len(record.get("answer") or "") / CHARS_PER_TOKEN),
            "basis": f"characters / {CHARS_PER_TOKEN:g} (the server reported no usage)"}


@dataclass(frozen=True)
class Hosted:
    """Assumptions for the hosted-model estimate (prices in USD per million tokens)."""

    price_in: float = 0.15
    price_out: float = 0.60
    tokens_per_s: float = 80.0
    first_token_s: float = 0.6


def evaluate(out: Path, questions_file: str, targets: Sequence[Target], judges: Judges,
             ledger: str, rule: str | None = None, max_new: int | None = None,
             progress: run.Progress | None = None, command: str = "",
             hosted: Hosted | None = None, seed: int = SEED, lookup: Lookup | None = None,
             texts: Texts | None = None) -> dict[str, Any]:
    """Run (or resume) an evaluation; returns the results (also results.json, report.html)."""
    questions = load_answer_questions(questions_file)
    rule = seal.rule_for_run(questions_file, is_sealed(questions_file, questions), out, ledger,
                             rule)
    if rule:
        seal.parse_rule(rule, stats.KNOWN)
    manifest = run.open_run(out, {
        "questions_file": str(questions_file), "questions_sha256": file_sha256(questions_file),
        "setups": {t.slot: t.provenance for t in targets}, "rule": rule, "seed": seed,
        "judges": {"first": judges.first.model if judges.first else None,
                   "second": judges.second.model if judges.second else None,
                   "second_share": judges.share}})
    remaining = max_new
    for t in targets:
        asked = run.collect(out / f"answers-{t.slot}.jsonl", questions, t.ask, remaining,
                            progress)
        if remaining is not None:
            remaining -= asked
    answers = {t.slot: {r["id"]: r for r in run.read_jsonl(out / f"answers-{t.slot}.jsonl")}
               for t in targets}
    missing = sum(len(questions) - len(a) for a in answers.values())
    if missing:
        return {"complete": False, "missing": missing}
    # The judge reads the passages the answer model read, not the 400-character excerpts.
    qmap = {q.id: q for q in questions}
    answers = {slot: {qid: with_quotes_found(with_passage_text(r, lookup, texts), texts)
                      for qid, r in recs.items()} for slot, recs in answers.items()}
    for by_id in answers.values():
        for qid, r in by_id.items():
            est = estimated_usage(qmap[qid], r)
            if est is not None:
                r["usage_estimated"] = est
    judgements: list[dict[str, Any]] = []
    if judges.first is not None:
        judgements = run.judge_run(out, qmap, answers, judges.first,
                                   judges.second, judges.share, seed, progress)
    blind = json.loads((out / run.BLIND_FILE).read_text(encoding="utf-8")) \
        if (out / run.BLIND_FILE).is_file() else {"items": {}}
    verdicts = stats.first_verdicts(judgements, blind["items"])
    result: dict[str, Any] = {
        "complete": True, "questions_file": str(questions_file),
        "questions_sha256": manifest["questions_sha256"], "questions": len(questions),
        "command": command, "rule": rule, "setups": {}}
    rows_by_slot = {}
    for t in targets:
        rows = stats.score_rows(t.slot, questions, answers[t.slot], verdicts)
        rows_by_slot[t.slot] = rows
        recs = answers[t.slot].values()
        metrics = stats.breakdown(rows)
        result["setups"][t.slot] = {
            "provenance": manifest["setups"][t.slot], "metrics": metrics, "rows": rows,
            "index_versions": sorted({str(r["index"]) for r in recs if r.get("index")}),
            "observed_answer_models": sorted({str((r.get("usage") or {}).get("model"))
                                              for r in recs if r.get("usage")}),
            "judge_errors": sum(1 for j in judgements if "error" in j and
                                blind["items"].get(j["item"], {}).get("setup") == t.slot),
            "acceptance": seal.accepted(rule, metrics["overall"], stats.KNOWN) if rule
            else None,
        }
        declared = (manifest["setups"][t.slot].get("models") or {}).get("answer") or {}
        observed = result["setups"][t.slot]["observed_answer_models"]
        if observed and observed != [declared.get("model")]:
            # A setup given by URL describes its server in [env]; the done frames tell.
            result["setups"][t.slot]["warnings"] = [
                f"the server answered with {', '.join(observed)}, but the setup declares "
                f"{declared.get('model')}: describe the server in the setup's [env]"]
        if hosted is not None:
            result["setups"][t.slot]["hosted_estimate"] = stats.hosted_estimate(
                rows, hosted.price_in, hosted.price_out, hosted.tokens_per_s,
                hosted.first_token_s)
    if len(targets) == 2:
        result["comparison"] = stats.compare(rows_by_slot["A"], rows_by_slot["B"], seed=seed)
    if judges.second is not None and judgements:
        result["agreement"] = stats.agreement(judgements, blind["items"])
        same = judges.first is not None and judges.second.model == judges.first.model \
            and judges.second.base_url == judges.first.base_url
        result["judges_note"] = (
            f"First judge {judges.first.model if judges.first else '-'}; second judge "
            f"{judges.second.model} rescored {len(blind.get('second', []))} answers "
            f"({judges.share:.0%}), reading the facts in another order"
            + (" (the same model: this measures its consistency, not agreement between "
               "judges)" if same else "") + ".")
    (out / "results.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n",
                                      encoding="utf-8")
    result["report"] = str(report.write_report(out, result, answers, qmap, verdicts))
    return result
