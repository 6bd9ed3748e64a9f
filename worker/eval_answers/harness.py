"""`eval answers` end to end: collect, judge, grade, compare, accept, report (resumable)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.config import ModelRole
from worker.eval_answers import report, run, seal, stats
from worker.eval_answers.questions import file_sha256, is_sealed, load_answer_questions

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
             hosted: Hosted | None = None, seed: int = SEED) -> dict[str, Any]:
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
    judgements: list[dict[str, Any]] = []
    if judges.first is not None:
        judgements = run.judge_run(out, {q.id: q for q in questions}, answers, judges.first,
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
    qmap = {q.id: q for q in questions}
    result["report"] = str(report.write_report(out, result, answers, qmap, verdicts))
    return result
