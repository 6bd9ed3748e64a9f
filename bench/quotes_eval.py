"""Quotes answer form, in process against a running stack's index: does the first quote come
from the expected section, and does "I don't know" come where it should?

    python -m bench.quotes_eval [--top-k 5] [--sweep]
        [--set tune|confirm|all|heldout-quotes|heldout-fresh]

Reads the index and the embeddings role of the environment's settings (as `make run` starts
them). The Czech translation step runs as a chat turn runs it. Span vectors are cached per
run, so --sweep tries weight settings without asking the embeddings server again.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared import corpus_store
from shared.config import settings_from_env
from shared.errors import ModelError
from shared.language import detect_language
from worker.evaluation import load_config, location_matches, paired_bootstrap
from worker.pipeline.names import unknown
from worker.pipeline.quote_answer import passage_spans
from worker.pipeline.quotes import (
    WEIGHTS,
    Weights,
    adapted_similarities,
    choose,
    coverage,
    covered,
    decision,
    hedged,
    known,
    rank_spans,
    retrieval_confidence,
)
from worker.pipeline.retrieve import RetrievalConfig, rank
from worker.pipeline.rewrite import translate_fewshot
from worker.pipeline.vectors import cached_vectors, passage_vectors, query_adapter

REPO = Path(__file__).resolve().parent.parent
SETS = {
    "dev": REPO.parent / "shared" / "eval" / "dev.jsonl",
    "heldout": REPO / "bench" / "retrieval" / "heldout.jsonl",
    "unanswerable": REPO / "bench" / "retrieval" / "heldout-unanswerable.jsonl",
    "quotes": REPO / "bench" / "retrieval" / "heldout-quotes.jsonl",
    "fresh": REPO / "bench" / "retrieval" / "heldout-fresh.jsonl",
    "fresh2": REPO / "bench" / "retrieval" / "heldout-fresh2.jsonl",
    "fresh3": REPO / "bench" / "retrieval" / "heldout-fresh3.jsonl",
    "fresh4": REPO / "bench" / "retrieval" / "heldout-fresh4.jsonl",
    "fresh5": REPO / "bench" / "retrieval" / "heldout-fresh5.jsonl",
    "fresh6": REPO / "bench" / "retrieval" / "heldout-fresh6.jsonl",
    "fresh7": REPO / "bench" / "retrieval" / "heldout-fresh7.jsonl",
    "fresh8": REPO / "bench" / "retrieval" / "heldout-fresh8.jsonl",
    "fresh9": REPO / "bench" / "retrieval" / "heldout-fresh9.jsonl",
    "fresh10": REPO / "bench" / "retrieval" / "heldout-fresh10.jsonl",
    "fresh11": REPO / "bench" / "retrieval" / "heldout-fresh11.jsonl",
    "fresh12": REPO / "bench" / "retrieval" / "heldout-fresh12.jsonl",
    "fresh13": REPO / "bench" / "retrieval" / "heldout-fresh13.jsonl",
    "fresh14": REPO / "bench" / "retrieval" / "heldout-fresh14.jsonl",
    "fresh15": REPO / "bench" / "retrieval" / "heldout-fresh15.jsonl",
    "fresh16": REPO / "bench" / "retrieval" / "heldout-fresh16.jsonl",
}
# The quotes form's own confirm set (bench/retrieval/README.md): written and committed before
# anything ran on it, read only after the weights and thresholds were tuned on the other sets.
# heldout-fresh: a second confirm set, written blind after the question views were chosen
# (bench/retrieval/README.md), read once.
# heldout-fresh2: a third, written blind before the span views were measured.
# heldout-fresh3: a fourth, written blind before that session's changes were measured.
# heldout-fresh4: a fifth, written blind before the second round of question views.
# heldout-fresh5: a sixth, written blind before names the corpus never uses were measured.
# heldout-fresh6: a seventh, written blind in the session that carried follow-ups.
# heldout-fresh7: an eighth, written blind before the question views joined the English
# decision.
# heldout-fresh8: a ninth, written blind before the query adapter was measured.
# heldout-fresh9: a tenth, written blind on a fresh machine before anything ran on it.
# heldout-fresh10: an eleventh, written blind before the Czech decision was refitted.
# heldout-fresh11: a twelfth, written blind before the English decision was refitted.
# heldout-fresh12: a thirteenth, everyday questions of the app's users, written blind before
# interface texts were read with their group's title.
# heldout-fresh13: a fourteenth, everyday questions again, written blind after the thirteenth
# was read.
# heldout-fresh14: a fifteenth, everyday questions, written blind before the last changes of
# that session were read on it.
# heldout-fresh15: a sixteenth, everyday questions, written blind before the fused list's
# order at a small k was decided.
# heldout-fresh16: a seventeenth, users' and students' questions, written blind and left unread
# for the next change.
CHOICES = ("tune", "confirm", "all", "heldout-quotes", "heldout-fresh", "heldout-fresh2",
           "heldout-fresh3", "heldout-fresh4", "heldout-fresh5", "heldout-fresh6", "heldout-fresh7",
           "heldout-fresh8", "heldout-fresh9", "heldout-fresh10", "heldout-fresh11",
           "heldout-fresh12", "heldout-fresh13",
           "heldout-fresh14", "heldout-fresh15", "heldout-fresh16")


def _load(name: str) -> list[dict]:
    return [json.loads(x) for x in SETS[name].read_text(encoding="utf-8").splitlines()
            if x.strip()]


def questions(which: str) -> list[dict]:
    """The tune set (dev, held-out 1-32, odd unanswerable) or the confirm set (held-out 33-75,
    even unanswerable), or both ("all"); or the quotes form's own held-out set, looked at only
    after tuning ("heldout-quotes")."""
    if which == "heldout-quotes":
        return _load("quotes")
    if which.startswith("heldout-fresh"):
        return _load(which.removeprefix("heldout-"))
    dev, held, unans = _load("dev"), _load("heldout"), _load("unanswerable")
    tune = dev + [q for q in held if int(q["id"].split("-")[1]) <= 32] + \
        [q for q in unans if int(q["id"].split("-")[1]) % 2 == 1]
    confirm = [q for q in held if int(q["id"].split("-")[1]) > 32] + \
        [q for q in unans if int(q["id"].split("-")[1]) % 2 == 0]
    return {"tune": tune, "confirm": confirm, "all": tune + confirm}[which]


def _hit(passage, q: dict) -> bool:
    targets = ([(q["expected_source"], q.get("expected_location") or "")]
               if q.get("expected_source") else [])
    targets += [(a["source"], a.get("location", "")) for a in q.get("also_in") or []]
    return any(location_matches(passage, s, loc) for s, loc in targets)


def collect(which: str, top_k: int, translate: bool = True,
            language: str | None = None, retrieval: str | None = None) -> list[dict]:
    """Per question: its passages, spans, and every span's score parts (vectors asked once);
    `retrieval`: a preset or TOML of retrieval settings instead of a turn's."""
    s = settings_from_env()
    base = load_config(retrieval)[0] if retrieval else RetrievalConfig.from_settings(s)
    config = dataclasses.replace(base, top_k=top_k)
    cache: dict[tuple[str, str], list[float]] = {}
    conn_now: list = []

    def vectors(texts: Sequence[str], kind: str) -> list[list[float]]:
        # As a turn asks: span vectors the index build stored, then the embeddings role.
        missing = [t for t in dict.fromkeys(texts) if (kind, t) not in cache]
        if missing:
            for t, v in zip(missing, cached_vectors(s, missing, kind, *conn_now[:1]),
                            strict=True):
                cache[(kind, t)] = v
        return [cache[(kind, t)] for t in texts]

    out: list[dict[str, Any]] = []
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        conn_now.append(conn)
        for q in questions(which):
            lang = detect_language(q["question"])
            if language is not None and q["language"] != language:
                continue
            search = q["question"]
            if translate and lang == "cs" and s.fewshot_translates:
                search = _translated(s, q["question"])
            _v, ranked, lexical = rank(conn, s, config, search, q["question"], language=lang)
            # As retrieve() gives them: with their fused score (the weak label and the
            # confidence prior read it).
            passages = [dataclasses.replace(lexical.by_id[pid], score=round(sc, 5))
                        for pid, sc in ranked if pid in lexical.by_id]
            t0 = time.perf_counter()
            spans = passage_spans(passages, lexical)
            asked = [q["question"]] + ([search] if search != q["question"] else [])
            pvecs = passage_vectors(conn, passages)
            adapter = query_adapter(conn, _v)
            # The first pass asks the embeddings server (what a turn's quotes step costs).
            rank_spans(asked, passages, spans, vectors, _idf(lexical), english=lang != "cs")
            ms = (time.perf_counter() - t0) * 1000
            # The best question-view similarity of the passages coverage reads (0 without
            # question views in the index): Weights.question's signal.
            per = corpus_store.question_similarities(conn, vectors(asked, "query"),
                                                     [p.id for p in passages])
            views = max((per.get(passages[n].id, 0.0) for n in covered(passages)), default=0.0)
            out.append({"q": q, "lang": lang, "passages": passages, "spans": spans,
                        "pvecs": pvecs, "adapter": adapter, "views": views,
                        "per_views": [per.get(p.id, 0.0) for p in passages],
                        "asked": asked, "lexical": lexical, "ms": ms,
                        "retrieval_hit": next((i for i, p in enumerate(passages, 1)
                                               if _hit(p, q)), None)})
    conn_now.clear()
    for r in out:
        r["vectors"] = vectors
    return out


TRANSLATIONS = Path("var/quotes-eval-translations.json")


def _translated(s, question: str) -> str:
    """The few-shot translation a turn would search, cached across runs (the translator is
    deterministic at temperature 0); the original when the translator fails, as in a turn."""
    cache = json.loads(TRANSLATIONS.read_text()) if TRANSLATIONS.exists() else {}
    if question not in cache:
        try:
            cache[question] = translate_fewshot(s.translator, question)
        except ModelError:
            return question
        TRANSLATIONS.parent.mkdir(exist_ok=True)
        TRANSLATIONS.write_text(json.dumps(cache, ensure_ascii=False, indent=0))
    return str(cache[question])


def _idf(lexical):
    idf = lexical.bm25.idf
    return lambda t: float(idf.get(t, 0.0))


def score(rows: list[dict], given: Weights) -> dict:
    """Per language: first quote from the expected section; don't-know rates."""
    by: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        english = r["lang"] != "cs"
        # As a turn decides (quote_turn.write_quotes): without question views to read, the
        # decision calibrated without them.
        read = covered(r["passages"])
        weights = given.deciding(any(r["per_views"][n] for n in read))
        cands = rank_spans(r["asked"], r["passages"], r["spans"], r["vectors"],
                           _idf(r["lexical"]), weights, english=english,
                           passage_vectors=r["pvecs"], views=r["per_views"],
                           adapter=r["adapter"])
        vmax = r["lexical"].idf_max
        r["cov"] = coverage(r["asked"], [r["passages"][n] for n in read], _idf(r["lexical"]),
                            vmax, "max" if english else weights.coverage_mix_other)
        r["known"] = known(r["q"]["question"], r["lexical"].stems, _idf(r["lexical"]), vmax)
        r["strange"] = unknown(r["q"]["question"], r["lexical"].uses,
                               r["lexical"].uses_together)
        # As a turn reads it: the best of the covered passages through the query adapter.
        r["fit"] = max(adapted_similarities(r["vectors"](r["asked"], "query"),
                                            [r["pvecs"][n] for n in read], r["adapter"]),
                       default=0.0) \
            if r["adapter"] is not None and r["pvecs"] else 0.0
        chosen = choose(cands, r["passages"], r["spans"], r["cov"], weights, english=english,
                        asked=r["views"], familiar=r["known"], strange=bool(r["strange"]),
                        fit=r["fit"])
        q = r["q"]
        d = by.setdefault(q["language"], {"first": [], "idk_ans": [], "idk_unans": []})
        r["chosen"] = chosen
        r["best"] = max((c.match for c in cands), default=0.0)
        top = retrieval_confidence(r["passages"])
        r["decision"] = decision(cands, r["cov"], top, weights, english, r["views"],
                                 r["known"], bool(r["strange"]), r["fit"]) if cands else 0.0
        r["hedged"] = bool(chosen) and hedged(cands, r["passages"], r["cov"], weights,
                                              english, r["views"], r["known"],
                                              bool(r["strange"]), r["fit"])
        # The first quote when the form answers at all (the ranking alone, no decision).
        first = cands[0] if cands else None
        r["rank_hit"] = 1.0 if first and _hit(r["passages"][first.n], q) else 0.0
        if q.get("answerable", True) and q.get("expected_source"):
            d["first"].append(1.0 if chosen and _hit(r["passages"][chosen[0].n], q) else 0.0)
            d["idk_ans"].append(0.0 if chosen else 1.0)
        else:
            d["idk_unans"].append(0.0 if chosen else 1.0)
    return {lang: {k: (round(statistics.mean(v), 3), len(v)) if v else None
                   for k, v in d.items()} for lang, d in by.items()}


# Each variant changes one thing of the defaults (Weights in quotes.py); the thresholds are
# calibrated for each the same way (calibrate) on the set it runs on.
VARIANTS: dict[str, dict] = {
    "defaults": {},
    "fused .2": {"fused": 0.2, "fused_other": 0.2},
    "fused .5": {"fused": 0.5, "fused_other": 0.5},
    "fused .5 cs only": {"fused_other": 0.5},
    "fused 1 cs only": {"fused_other": 1.0},
    "cs dense mean": {"dense_mix_other": "mean"},
    "neighbour .1": {"neighbour": 0.1},
    "neighbour .2": {"neighbour": 0.2},
    "title .1": {"title": 0.1},
    "skip weak": {"skip_weak": True},
    "confidence .5": {"confidence": 0.5, "confidence_other": 0.5},
    "confidence 1": {"confidence": 1.0, "confidence_other": 1.0},
    "confidence 2 cs": {"confidence_other": 2.0},
    "cs coverage mean": {"coverage_mix_other": "mean"},
    "cs coverage translation": {"coverage_mix_other": "last"},
    "passage .2": {"passage": 0.2, "passage_other": 0.2},
    "passage .5": {"passage": 0.5, "passage_other": 0.5},
    "passage 1": {"passage": 1.0, "passage_other": 1.0},
    "short .05": {"short": 0.05},
    "short .1": {"short": 0.1},
    "row .05": {"row": 0.05},
    "row .1": {"row": 0.1},
    "cs lexical max": {"lexical_mix_other": "max"},
    "cs lexical max, lexical .5": {"lexical_mix_other": "max", "lexical": 0.5},
    "en rank .3": {"rank": 0.3},
    "en rank .25": {"rank": 0.25},
    "en rank .25 short .1": {"rank": 0.25, "short": 0.1},
    "en rank .3 passage .3": {"rank": 0.3, "passage": 0.3},
    "cs rank .1": {"rank_other": 0.1},
    "cs rank .02": {"rank_other": 0.02},
    "lexical .5": {"lexical": 0.5},
    "lexical .2": {"lexical": 0.2},
    "heading .3": {"heading": 0.3},
    # Question views' best similarity in the decision (an index built with them).
    **{f"question {w:g}": {"question": w, "question_other": w} for w in (0.5, 1.0, 2.0, 4.0)},
    **{f"question {w:g} cs only": {"question_other": w} for w in (1.0, 2.0)},
    **{f"question {w:g} en only": {"question": w} for w in (1.0, 2.0)},
    # Each passage's question views as a prior of its spans (Weights.views).
    "no views": {"views": 0.0, "views_other": 0.0},
    # A Czech text's spans for an English question (Weights.czech_span).
    **{f"czech span {w:g}": {"czech_span": w} for w in (0.05, 0.1, 0.2, 0.5)},
    # How much of the question the corpus knows at all, in the decision (Weights.vocabulary).
    **{f"vocabulary {w:g}": {"vocabulary": w, "vocabulary_other": w} for w in (0.5, 1.0, 2.0)},
    **{f"vocabulary {w:g} cs only": {"vocabulary_other": w} for w in (0.5, 1.0, 2.0, 4.0, 8.0)},
    **{f"vocabulary {w:g} en only": {"vocabulary": w} for w in (1.5, 2.0, 3.0)},
    **{f"views {w:g}": {"views": w, "views_other": w} for w in (0.25, 0.5, 1.0, 2.0)},
    **{f"views {w:g} cs only": {"views_other": w} for w in (0.5, 1.0, 2.0)},
    **{f"views {w:g} en only": {"views": w} for w in (0.25, 0.5, 1.0, 2.0)},
    # A question naming something the corpus never uses (Weights.strange; inf: a veto).
    **{f"strange {w:g}": {"strange": w, "strange_other": w} for w in (0.1, 0.2, 0.5)},
    **{f"strange {w:g} cs": {"strange_other": w} for w in (0.5, 1.0, 2.0)},
    "strange veto": {"strange": math.inf, "strange_other": math.inf},
    **{f"cs confidence {c} coverage {w}": {"confidence_other": c, "coverage_other": w}
       for c in (0.25, 0.5, 0.75, 1.0) for w in (2.0, 3.0, 4.0)},
}
MAX_IDK_ANSWERABLE = 0.10  # the issue's bound on "I don't know" where an answer exists


def calibrate(rows: list[dict], lang: str) -> tuple[float, float, float]:
    """(threshold, idk answerable, idk unanswerable) for one language (see gap_threshold),
    over the rows' decision scores; (0, 0, 0) when no threshold catches an unanswerable one."""
    mine = [r for r in rows if r["q"]["language"] == lang]
    best = gap_threshold([r["decision"] for r in mine if r["q"].get("expected_source")],
                         [r["decision"] for r in mine if not r["q"].get("expected_source")])
    if best is None or best[2] == 0:
        return 0.0, 0.0, 0.0
    return round(best[0], 3), best[1], best[2]


def gap_threshold(ans: Sequence[float], una: Sequence[float]
                  ) -> tuple[float, float, float] | None:
    """(threshold, idk answerable, idk unanswerable): the threshold that says "I don't know"
    on the most unanswerable questions while at most MAX_IDK_ANSWERABLE of the answerable
    ones (fewest answerable on ties), in the middle of the gap of decision scores that gives
    those rates (not at its edge); None when every threshold refuses too many answerable."""
    values = sorted(set(ans) | set(una))
    best: tuple[float, float, float] | None = None
    for i, low in enumerate(values):
        # Any threshold in (low, next value] gives the same rates: take the middle.
        t = (low + values[i + 1]) / 2 if i + 1 < len(values) else low + 0.01
        ia = sum(x < t for x in ans) / len(ans) if ans else 0.0
        iu = sum(x < t for x in una) / len(una) if una else 0.0
        if ia <= MAX_IDK_ANSWERABLE and (best is None or iu > best[2]
                                         or (iu == best[2] and ia < best[1])):
            best = (t, ia, iu)
    return best


def variants(rows: list[dict], names: list[str]) -> None:
    """Each variant against the defaults, paired over the same questions: the first quote
    with the decision calibrated per variant, and the ranking alone."""
    base: dict[str, list[float]] = {}
    for name in names:
        w = dataclasses.replace(WEIGHTS, **VARIANTS[name])
        score(rows, w)
        line = [f"{name:18}"]
        for lang in sorted({r["q"]["language"] for r in rows}):
            t, ia, iu = calibrate(rows, lang)
            firsts = [1.0 if r["decision"] >= t and r["rank_hit"] else 0.0 for r in rows
                      if r["q"]["language"] == lang and r["q"].get("expected_source")]
            ranks = [r["rank_hit"] for r in rows
                     if r["q"]["language"] == lang and r["q"].get("expected_source")]
            line.append(f"{lang}: first {sum(firsts) / len(firsts):.3f} rank "
                        f"{sum(ranks) / len(ranks):.3f} t {t:.3f} idk {ia:.2f}/{iu:.2f}")
            if name == names[0]:
                base[lang] = ranks
            else:
                d = paired_bootstrap(base[lang], ranks)
                line.append(f"(rank {d['mean_diff']:+.3f} [{d['ci95'][0]:+.3f}, "
                            f"{d['ci95'][1]:+.3f}])")
        print(" ".join(line))


def main(argv: list[str] | None = None) -> None:
    """Print the figures (and, with --sweep, a grid of weight settings)."""
    ap = argparse.ArgumentParser(prog="python -m bench.quotes_eval")
    ap.add_argument("--set", default="tune", choices=CHOICES)
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--thresholds", action="store_true")
    ap.add_argument("--no-translate", action="store_true",
                    help="search a Czech question as asked (no few-shot translation)")
    ap.add_argument("--show", action="store_true", help="print each question's first quote")
    ap.add_argument("--language", choices=("en", "cs"), default=None,
                    help="only the questions of this language")
    ap.add_argument("--retrieval", default=None, metavar="SETTINGS",
                    help="retrieve with this preset or TOML (eval retrieval --settings)")
    ap.add_argument("--variants", nargs="*", default=None, metavar="NAME",
                    help="compare named variants to the defaults (none named: all of them): "
                         + ", ".join(VARIANTS))
    args = ap.parse_args(argv)
    rows = collect(args.set, args.top_k, not args.no_translate, args.language, args.retrieval)
    print(f"set {args.set}, {len(rows)} questions, top_k {args.top_k}, "
          f"translation {'off' if args.no_translate else 'as a turn runs it'}")
    print("defaults", WEIGHTS)
    for lang in sorted({r["q"]["language"] for r in rows}):
        ranks = [r["retrieval_hit"] for r in rows if r["q"]["language"] == lang
                 and r["q"].get("expected_source")]
        print(f"retrieval {lang}: " + " ".join(
            f"hit@{k} {sum(1 for x in ranks if x and x <= k) / len(ranks):.3f}"
            for k in (1, 3, 5)) + f" (n={len(ranks)})")
    print(json.dumps(score(rows, WEIGHTS)))
    ms = sorted(r["ms"] for r in rows)
    print(f"span ranking ms: p50 {ms[len(ms) // 2]:.0f}, p95 {ms[int(len(ms) * 0.95)]:.0f} "
          "(first pass: span vectors from the index, the question's from the embeddings "
          "server unless the search asked already; later passes are cached)")
    if args.show:
        for r in rows:
            c = r["chosen"][0] if r["chosen"] else None
            p = r["passages"][c.n] if c else None
            ok = "HIT " if c and _hit(p, r["q"]) else ("IDK " if not c else "miss")
            print(f"{ok} {r['q']['id']:14} best={r['best']:.3f} ret={r['retrieval_hit']} "
                  f"{(p.source + ' | ' + p.section[-50:]) if p else ''}\n      "
                  f"{r['q']['question'][:80]}\n      -> {c.text[:140] if c else ''}")
    if args.thresholds:
        zero = dataclasses.replace(WEIGHTS, threshold=0.0, threshold_other=0.0)
        score(rows, zero)
        for r in rows:
            r["best_any"] = r["best"]
        for lang in ("en", "cs"):
            mine = [r for r in rows if r["q"]["language"] == lang]
            ans = sorted(r["best"] for r in mine if r["q"].get("expected_source"))
            una = sorted(r["best"] for r in mine if not r["q"].get("expected_source"))
            print(lang, "best match, answerable:", [round(x, 3) for x in ans])
            print(lang, "best match, unanswerable:", [round(x, 3) for x in una])
            print(lang, "coverage, answerable:", sorted(round(r["cov"], 2) for r in mine
                                                        if r["q"].get("expected_source")))
            print(lang, "coverage, unanswerable:", sorted(
                (round(r["cov"], 2), r["q"]["question"][:40]) for r in mine
                if not r["q"].get("expected_source")))
            for t in [x / 100 for x in range(80, 110, 2)]:
                print(f"{lang} threshold {t:.2f}: idk answerable "
                      f"{sum(x < t for x in ans) / len(ans):.2f}, idk unanswerable "
                      f"{sum(x < t for x in una) / len(una):.2f}")
    if args.variants is not None:
        names = ["defaults"] + [v for v in (args.variants or list(VARIANTS)) if v != "defaults"]
        variants(rows, names)
    if args.sweep:
        for dense in (1.0,):
            for lexical in (0.0, 0.1, 0.2, 0.35):
                for heading in (0.0, 0.1, 0.2):
                    for rnk in (0.03, 0.05, 0.08, 0.12, 0.2, 0.4):
                        w = dataclasses.replace(WEIGHTS, dense=dense, lexical=lexical,
                                                heading=heading, rank=rnk, rank_other=rnk,
                                                threshold=0.0, threshold_other=0.0)
                        res = score(rows, w)
                        line = " ".join(f"{lang}:{v['first'][0] if v['first'] else '-'}"
                                        for lang, v in sorted(res.items()))
                        print(f"lex {lexical} head {heading} rank {rnk}: {line}")


if __name__ == "__main__":
    main()
