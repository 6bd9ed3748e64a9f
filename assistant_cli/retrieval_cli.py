"""`become-assistant eval retrieval`: hit@k and MRR of what a chat turn runs, or of a preset."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from shared.config import get_settings
from shared.errors import ConfigError


def report_path(out: str | None) -> Path | None:
    """Where the JSON report goes, its folder made now: a bad --out fails before the run, with
    a plain message, not after minutes of ranking with a traceback."""
    if not out:
        return None
    path = Path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot make its folder ({exc.strerror})") from None
    if path.is_dir():
        raise ConfigError(f"--out {out} is a folder; name a file, e.g. {path / 'report.json'}")
    return path


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    """Score retrieval on a question file; optionally compare two settings by bootstrap.

    Unless told otherwise it measures what a chat turn runs: the retrieval settings of the
    service (`chat`) and the turn's translation step for Czech questions."""
    import dataclasses

    from shared import corpus_store
    from worker import evaluation

    settings = get_settings()
    target = report_path(args.out)
    questions = evaluation.load_questions(args.questions)
    turn_how = evaluation.turn_translation(settings)

    def run(spec: str) -> dict:
        # "NAME+fewshot" / "NAME+chat" / "NAME+none": this side's translation of Czech questions
        # ("+fewshot-v1": the first few-shot prompt, rewrite.FEWSHOT_PROMPT_V1); no suffix: the
        # turn's.
        name, _, how = spec.partition("+")
        config, extra = evaluation.load_config(name, settings)
        dsn = extra.get("corpus_read_dsn") or args.dsn or settings.corpus_read_dsn
        s = dataclasses.replace(settings, corpus_read_dsn=dsn)
        how = how or ("fewshot" if args.translate_fewshot else "chat" if args.translate
                      else turn_how)
        if how not in ("none", "fewshot", "fewshot-v1", "chat"):
            raise ConfigError(f"unknown translation {how!r}: +fewshot, +fewshot-v1, +chat "
                              "or +none")
        translate, role, fallbacks, cut = _eval_translator(s, how)
        report = evaluation.run_eval(
            s, config, questions, lambda: corpus_store.connect(dsn, autocommit=True),
            translate)
        report["name"] = f"{name}+{how}"
        report["translation"] = how
        report["translation_model"] = role.model if role is not None else None
        report["translation_fallbacks"] = len(fallbacks)
        report["translation_cut"] = len(cut)
        report["translation_deadline_s"] = s.translate_deadline_s
        report["pipeline"] = _pipeline_line(report, name, how, turn_how, role)
        return report

    def show(r: dict) -> None:
        print(r["pipeline"])
        o = r["overall"]
        print(f"{r['name']:>16}  all  hit@1 {o['hit@1']:.2f}  hit@3 {o['hit@3']:.2f}  "
              f"hit@5 {o['hit@5']:.2f}  MRR {o['mrr']:.2f}  (n={o['n']}, index "
              f"{r['index_version']})")
        for lang, m in r["by_language"].items():
            print(f"{'':>16}  {lang:<4} hit@1 {m['hit@1']:.2f}  hit@3 {m['hit@3']:.2f}  "
                  f"hit@5 {m['hit@5']:.2f}  MRR {m['mrr']:.2f}  (n={m['n']})")

    out: dict = {"questions_file": str(args.questions)}
    a = run(args.settings)
    show(a)
    out["a"] = a
    if args.compare:
        b = run(args.compare)
        show(b)
        out["b"] = b
        out["comparison"] = cmp = evaluation.compare(a, b)
        scopes = [("all", cmp)] + list(cmp.get("by_language", {}).items())
        for scope, part in scopes:
            for metric in ("hit@3", "mrr"):
                c = part[metric]
                verdict = "differs" if c["excludes_zero_95"] else "no clear difference"
                print(f"{b['name']} - {a['name']} {scope:<3} {metric}: "
                      f"{c['mean_diff']:+.3f}  90% [{c['ci90'][0]:+.3f}, {c['ci90'][1]:+.3f}]  "
                      f"95% [{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}]  -> {verdict}")
    if target is not None:
        try:
            target.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n",
                              encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"--out {args.out}: cannot write it ({exc.strerror})") from None
        print(f"report: {args.out}")
    return 0


def _eval_translator(s: Any, how: str) -> tuple[Any, Any, list[str], list[str]]:
    """(translate, role, fallbacks, cut) for `how`: like a turn, a failed translation searches
    the original wording (each such question is listed in fallbacks), and the few-shot
    translator works under the turn's deadline (a line the deadline ended is listed in cut)."""
    from shared.errors import ModelError
    from worker.pipeline import rewrite

    if how == "none":
        return None, None, [], []
    role = s.translator if how.startswith("fewshot") else s.translation
    prompt = rewrite.FEWSHOT_PROMPT_V1 if how == "fewshot-v1" else rewrite.FEWSHOT_PROMPT
    fallbacks: list[str] = []
    cut: list[str] = []

    def translate(text: str) -> tuple[str, str]:
        try:
            if how == "chat":
                return rewrite.translate_for_search(role, text, timeout_s=120), text
            line = rewrite.translate_fewshot_by(role, text, s.translate_deadline_s, prompt)
            # As a turn: a line cut or empty searches the original.
            if line.cut:
                cut.append(text)
            elif not line.text:
                fallbacks.append(text)
            return (line.text if line.usable else text), text
        except ModelError:
            fallbacks.append(text)
            return text, text

    return translate, role, fallbacks, cut


def _pipeline_line(r: dict, name: str, how: str, turn_how: str, role: Any) -> str:
    """One line saying which pipeline a run measured, and whether it is a chat turn's."""
    config = r["settings"]
    retrieval = ("the chat turn's retrieval settings" if name == "chat"
                 else f"retrieval settings {name!r}")
    translated = {"none": "not translated", "chat": "translated by the translation role",
                  "fewshot": "translated by the few-shot translator",
                  "fewshot-v1": "translated by the few-shot translator (first prompt)"}[how]
    if role is not None:
        translated += f" ({role.model} at {role.base_url})"
    same = name == "chat" and how == turn_how
    captions = "+".join(r.get("index_captions") or []) or "no"
    views = "+".join(r.get("index_caption_views") or []) or "no"
    questions = "+".join(r.get("index_question_views") or []) or "no"
    adapter = ("a query adapter" + ("" if config.get("adapted") else " (not searched)")
               if r.get("index_query_adapter") else "no query adapter")
    return (f"pipeline {r['name']}: {retrieval} ({config['mode']}, top {config['top_k']} of "
            f"{config['candidates']} candidates), Czech questions {translated}; index "
            f"{r['index_version']} with {captions} captions, {views} caption views, "
            f"{questions} question views, {adapter}"
            + (" -- what a chat turn runs" if same else
               f" -- not a chat turn's pipeline (a turn: chat settings, translation {turn_how})")
            + (f"; {r['translation_fallbacks']} translations failed and searched the original"
               if r.get("translation_fallbacks") else "")
            + (f"; the translator's deadline ({r['translation_deadline_s']:g} s) cut "
               f"{r['translation_cut']} translations, which searched the original"
               if r.get("translation_cut") else ""))
