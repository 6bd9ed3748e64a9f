"""Assemble the question views' data file from the writers' outputs (docs/benchmarks.md, "Question views"), once.

The writers each had a share of the corpus's passages (one JSON object a line: key, source,
lang, title, section, text, captions) and wrote, blind, one line per passage:
{"key", "en": [...], "cs": [...]}. This joins them, in the passages' order, into
corpus_jobs/manifests/become.questions.json and records the questions' digest in its `how`
(question_digest: the file's questions cannot change unnoticed; a test checks it).

    .venv/bin/python -m bench.questions_assemble /tmp/qviews 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from corpus_jobs.questions import (
    LANGUAGES,
    Entry,
    QuestionFile,
    dump_question_file,
    question_digest,
)

OUT = Path(__file__).resolve().parent.parent / "corpus_jobs/manifests/become.questions.json"
HOW = (
    "Written on 2026-12-02 for the quotes answer form and Czech retrieval by three writers (capable models working for "
    "the project, one share of the passages each), blind: each passage's questions from that "
    "passage alone (its text, title, heading path and captions), never from an evaluation or "
    "question set and without looking at any search ranking. The rules they had: 2 questions "
    "in English and 2 in Czech a passage (3 for a long passage that answers several things, "
    "1 or none for one that answers nothing a user would ask: a badge line, a table of "
    "contents, a licence, a bare link list); asked as a BeCoMe user types into a help box "
    "(an expert giving estimates, a project's admin, a researcher, a developer), one close to "
    "the passage's terms and one in everyday words; each really answered by this passage; "
    "natural Czech with diacritics and the app's own Czech terms; no copied sentences, no "
    "heading merely turned into a question; at most ~20 words. Frozen when assembled, before "
    "any measurement: never edited, added to or dropped from after a result was seen. "
    "sha256 of the questions (question_digest): {digest}."
)


def main() -> None:
    """Join the writers' files and write the data file."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("folder", type=Path)
    ap.add_argument("writers", type=int)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    entries: dict[str, Entry] = {}
    for n in range(1, args.writers + 1):
        inputs = [json.loads(x) for x in
                  (args.folder / f"passages-{n}.jsonl").read_text().splitlines() if x.strip()]
        outputs = [json.loads(x) for x in
                   (args.folder / f"questions-{n}.jsonl").read_text().splitlines() if x.strip()]
        if [p["key"] for p in inputs] != [q["key"] for q in outputs]:
            raise SystemExit(f"writer {n}: the keys are not the passages' keys in order")
        for p, q in zip(inputs, outputs, strict=True):
            entries[p["key"]] = Entry(p["source"], p["section"], {
                lang: tuple(" ".join(str(x).split()) for x in q.get(lang) or [])
                for lang in LANGUAGES})
    cf = QuestionFile("become-questions-2026-12-02", "2026-12-02", "", entries)
    dump_question_file(args.out, cf, "become")
    data = json.loads(args.out.read_text(encoding="utf-8"))
    digest = question_digest(data["questions"])
    data["how"] = HOW.format(digest=digest)
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    n_q = sum(len(v[lang]) for v in data["questions"].values() for lang in LANGUAGES)
    print(f"{len(entries)} passages, {n_q} questions; question_digest {digest}; file sha256 "
          f"{hashlib.sha256(args.out.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
