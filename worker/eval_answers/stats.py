"""Metrics per question, per language and category, judge agreement, and paired comparison."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared.checks import GRADED
from worker.eval_answers.grade import grade
from worker.eval_answers.judge import cohen_kappa
from worker.eval_answers.questions import AnswerQuestion
from worker.evaluation import paired_bootstrap

# name -> (higher is better, what it measures)
METRICS: dict[str, tuple[bool, str]] = {
    "facts_delivered": (True, "share of expected facts delivered (judge)"),
    "unsupported_claims": (False, "answers with a claim no passage supports (judge)"),
    "unsupported_count": (False, "claims no passage supports, per answer (judge)"),
    "language_match": (True, "answer in the question's language"),
    "citations_used": (True, "answers citing at least one passage"),
    # One per graded check (shared/checks.py): lower is better.
    **{c.metric: (False, c.metric_meaning) for c in GRADED if c.metric},
    "expected_numbers": (True, "share of expected numbers present"),
    "dont_know": (True, "unanswerable questions answered 'I don't know'"),
    "invented_figures": (False, "unanswerable questions answered with unconfirmed figures"),
    "first_quote_expected": (True, "answerable questions whose first quote (or first cited "
                                   "passage) is from the expected section"),
    "dont_know_answerable": (False, "answerable questions answered 'I don't know'"),
    "quotes_verbatim": (True, "answers whose every quote is in its passage word for word"),
    "error": (False, "turns that ended in an error"),
    "total_s": (False, "seconds per answer (server)"),
    "first_token_s": (False, "seconds to the first token"),
    "prompt_tokens": (False, "prompt tokens per answer"),
    "completion_tokens": (False, "completion tokens per answer"),
}
KNOWN = frozenset(METRICS)


def first_verdicts(judgements: Sequence[dict[str, Any]], items: dict[str, dict[str, str]],
                   judge: str = "first") -> dict[tuple[str, str], dict[str, Any]]:
    """Usable verdicts of one judge keyed by (setup slot, question id)."""
    out = {}
    for j in judgements:
        if j["judge"] == judge and "error" not in j and j["item"] in items:
            ref = items[j["item"]]
            out[(ref["setup"], ref["question"])] = j
    return out


def score_rows(slot: str, questions: Sequence[AnswerQuestion],
               answers: dict[str, dict[str, Any]],
               verdicts: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """One row of scores per answered question of one setup."""
    rows = []
    for q in questions:
        rec = answers.get(q.id)
        if rec is None:
            continue
        row: dict[str, Any] = {"id": q.id, "language": q.language, "category": q.category,
                               **grade(q, rec)}
        v = verdicts.get((slot, q.id))
        delivered = v.get("delivered") if v else None
        row["facts_delivered"] = (sum(delivered) / len(delivered)
                                  if v and delivered and q.answerable else None)
        row["unsupported_count"] = float(len(v["unsupported_claims"])) if v else None
        row["unsupported_claims"] = (1.0 if v["unsupported_claims"] else 0.0) if v else None
        timing = rec.get("timing") or {}
        usage = rec.get("usage") or {}
        if not usage.get("prompt_tokens") and rec.get("usage_estimated"):
            usage = rec["usage_estimated"]
            row["tokens_estimated"] = True
        row["total_s"] = timing["total_ms"] / 1000 if timing.get("total_ms") else None
        row["first_token_s"] = (timing["first_token_ms"] / 1000
                                if timing.get("first_token_ms") else None)
        row["prompt_tokens"] = usage.get("prompt_tokens")
        row["completion_tokens"] = usage.get("completion_tokens")
        rows.append(row)
    return rows


def aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean of every metric over the rows where it applies, with its count."""
    out: dict[str, Any] = {"n": len(rows)}
    for m in METRICS:
        vals = [r[m] for r in rows if r.get(m) is not None]
        out[m] = round(sum(vals) / len(vals), 4) if vals else None
        out[f"{m}_n"] = len(vals)
    return out


def breakdown(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Overall, per language and per category."""
    def by(key: str) -> dict[str, Any]:
        return {k: aggregate([r for r in rows if r[key] == k])
                for k in sorted({r[key] for r in rows})}

    return {"overall": aggregate(rows), "by_language": by("language"),
            "by_category": by("category")}


def compare(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], resamples: int = 10_000,
            seed: int = 20261130) -> dict[str, Any]:
    """B - A per metric by a paired bootstrap over the questions both scored."""
    ra, rb = {r["id"]: r for r in a}, {r["id"]: r for r in b}
    out: dict[str, Any] = {}
    for m, (higher, _) in METRICS.items():
        ids = sorted(i for i in set(ra) & set(rb)
                     if ra[i].get(m) is not None and rb[i].get(m) is not None)
        if len(ids) < 2:
            continue
        res = paired_bootstrap([float(ra[i][m]) for i in ids], [float(rb[i][m]) for i in ids],
                               resamples=resamples, seed=seed)
        better = res["mean_diff"] > 0 if higher else res["mean_diff"] < 0
        res.update(questions=len(ids), higher_is_better=higher,
                   verdict=("B better" if better else "A better") if res["excludes_zero_95"]
                   else "no clear difference")
        out[m] = res
    return out


def agreement(judgements: Sequence[dict[str, Any]], items: dict[str, dict[str, str]]
              ) -> dict[str, Any]:
    """Cohen's kappa per criterion between the first and second judge on the rescored sample."""
    first = {j["item"]: j for j in judgements if j["judge"] == "first" and "error" not in j}
    second = {j["item"]: j for j in judgements if j["judge"] == "second" and "error" not in j}
    both = sorted(set(first) & set(second))
    fa: list[bool] = []
    fb: list[bool] = []
    for i in both:
        fa += first[i]["delivered"]
        fb += second[i]["delivered"]
    ua = [bool(first[i]["unsupported_claims"]) for i in both]
    ub = [bool(second[i]["unsupported_claims"]) for i in both]
    return {
        "answers": len(both),
        "fact_delivered": {"labels": len(fa), "kappa": cohen_kappa(fa, fb),
                           "agreement": round(sum(x == y for x, y in zip(fa, fb, strict=True))
                                              / len(fa), 4) if fa else None},
        "has_unsupported_claim": {"labels": len(ua), "kappa": cohen_kappa(ua, ub),
                                  "agreement": round(sum(x == y for x, y in zip(ua, ub,
                                                                                strict=True))
                                                     / len(ua), 4) if ua else None},
    }


def hosted_estimate(rows: Sequence[dict[str, Any]], price_in_per_m: float,
                    price_out_per_m: float, output_tokens_per_s: float,
                    first_token_s: float) -> dict[str, Any]:
    """Cost and time per question of a hosted model from the recorded token usage (no call)."""
    pt = [r["prompt_tokens"] for r in rows if r.get("prompt_tokens")]
    ct = [r["completion_tokens"] for r in rows if r.get("completion_tokens")]
    if not pt or not ct:
        return {}
    mean_in, mean_out = sum(pt) / len(pt), sum(ct) / len(ct)
    estimated = sum(1 for r in rows if r.get("tokens_estimated"))
    return {"prompt_tokens": round(mean_in, 1), "completion_tokens": round(mean_out, 1),
            "tokens": f"estimated from characters for {estimated} of {len(rows)} answers "
                      "(the server reported no usage)" if estimated else "as the server "
                      "reported them",
            "usd_per_question": round((mean_in * price_in_per_m + mean_out * price_out_per_m)
                                      / 1e6, 6),
            "seconds_per_question": round(first_token_s + mean_out / output_tokens_per_s, 2),
            "assumed": {"usd_per_m_input": price_in_per_m, "usd_per_m_output": price_out_per_m,
                        "output_tokens_per_s": output_tokens_per_s,
                        "first_token_s": first_token_s}}
