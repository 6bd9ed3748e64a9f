"""Czech domain words the translator drops, put back: for a Czech question, the app's own
label twins whose Czech lemmas all occur in it (bench.glossary's hints) and whose English
words its few-shot translation lacks are appended to the search ("Co je medián v metodě
BeCoMe?" was translated "What is the channel in BeCoMe?"). Czech questions of the sets, the
translation as a turn searches it against the same with the terms put back, paired:

    python -m bench.term_fix [SETS]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from bench import quotes_eval as qe
from bench.glossary import Glossary, build_glossary
from bench.hedge_band import SETS
from corpus_jobs.build import load_pieces
from corpus_jobs.manifest import load_manifest
from worker.evaluation import paired_bootstrap
from worker.pipeline.bm25 import tokenize
from worker.pipeline.lexicon import aligned_pairs
from worker.pipeline.quotes import WEIGHTS

MANIFEST = "corpus_jobs/manifests/become.toml"


def glossary() -> Glossary:
    """The label twins of the BeCoMe corpus's locale files."""
    pieces, _, _ = load_pieces(load_manifest(Path(MANIFEST)))
    return build_glossary(aligned_pairs((p.source, p.section, p.text) for p in pieces))


def put_back(g: Glossary, question: str, translation: str) -> str:
    """The translation with the question's label twins it lacks appended."""
    have = set(tokenize(translation, lemmas=True))
    missing = [en for _cs, en in g.hints(question)
               if not set(tokenize(en, lemmas=True)) <= have]
    return " ".join([translation, *missing])


def arm(name: str, fix: Callable[[str, str], str] | None) -> list[dict]:
    """The set's Czech rows, ranked with the translation (fixed by `fix`)."""
    plain = qe._translated
    if fix is not None:
        qe._translated = lambda s, q: fix(q, plain(s, q))  # type: ignore[assignment]
    try:
        rows = qe.collect(name, 5, language="cs")
    finally:
        qe._translated = plain  # type: ignore[assignment]
    qe.score(rows, WEIGHTS)
    return rows


def main(argv: list[str] | None = None) -> None:
    """Per set and pooled: hit@1, hit@3, first quote, "I don't know" rates, both arms."""
    ap = argparse.ArgumentParser(prog="python -m bench.term_fix")
    ap.add_argument("sets", nargs="?", default=SETS)
    args = ap.parse_args(argv)
    g = glossary()
    pooled: dict[str, tuple[list[float], list[float]]] = {}
    for name in args.sets.split(","):
        base, fixed = arm(name, None), arm(name, lambda q, t: put_back(g, q, t))
        for a, b in zip(base, fixed, strict=True):
            q = a["q"]
            if a["asked"] != b["asked"]:
                print(f"  {q['id']}: {b['asked'][-1]!r} (hit {a['retrieval_hit']} -> "
                      f"{b['retrieval_hit']}, chosen {bool(a['chosen'])} -> "
                      f"{bool(b['chosen'])})")
            pairs = {"idk_unans": (not a["chosen"], not b["chosen"])} \
                if not q.get("expected_source") else {
                    "hit1": (a["retrieval_hit"] == 1, b["retrieval_hit"] == 1),
                    "hit3": ((a["retrieval_hit"] or 9) <= 3, (b["retrieval_hit"] or 9) <= 3),
                    "first": (bool(a["chosen"]) and qe._hit(a["passages"][a["chosen"][0].n], q),
                              bool(b["chosen"]) and qe._hit(b["passages"][b["chosen"][0].n], q)),
                    "idk_ans": (not a["chosen"], not b["chosen"])}
            for k, (x, y) in pairs.items():
                pooled.setdefault(k, ([], []))[0].append(float(x))
                pooled[k][1].append(float(y))
        print(name, "done", flush=True)
    for k, (x, y) in pooled.items():
        bs = paired_bootstrap(x, y)
        print(f"pooled {k}: {sum(x) / len(x):.3f} -> {sum(y) / len(y):.3f} (n {len(x)}) {bs}")


if __name__ == "__main__":
    main()
