"""Assemble the question views' data file from the writers' outputs (docs/benchmarks.md, "Question views"), once.

The writers each had a share of the corpus's passages (one JSON object a line: key, source,
lang, title, section, text, captions) and wrote, blind, one line per passage:
{"key", "en": [...], "cs": [...]}. This joins them, in the passages' order, into
corpus_jobs/manifests/become.questions.json and records the questions' digest in its `how`
(question_digest: the file's questions cannot change unnoticed; a test checks it).

    .venv/bin/python -m bench.questions_assemble /tmp/qviews 3

A later round (`--add N`) appends the questions of writers who saw each passage's earlier
questions and asked about other details or from other angles (ROUNDS below says how), to the
shipped file's, and records the new digest:

    .venv/bin/python -m bench.questions_assemble /tmp/qviews2 4 --add 2
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

ROUND2 = (
    " A second round was added on 2026-12-03 by four writers (capable models working for the "
    "project, one share of the passages each), under the same rules of blindness (each passage "
    "alone: its text, title, heading path, captions and its first-round questions; no "
    "evaluation or question set, no ranking): 2 more questions in English and 2 in Czech a "
    "passage (3, 1 or none as above), each about another fact of the passage or the same need "
    "from another angle: a person's situation or problem in their own words, and a short "
    "search-box query in everyday words with the synonyms a non-expert uses. Frozen when "
    "assembled, before any measurement."
)
# Measured and not shipped (docs/benchmarks.md, "A second round of question views ..."): the
# file holds rounds 1 and 2.
ROUND3 = (
    " A third round was added on 2026-12-03 by four writers, under the same rules of "
    "blindness (each passage alone, with its earlier questions): 1 more question in English "
    "and 1 in Czech a passage (2 for a long one, none where nothing is to ask), in styles the "
    "earlier rounds lack: why the method or the app does something, what a term, figure or "
    "message means; a developer's or operator's question in their own vocabulary on technical "
    "passages, a question asked when something did not go as expected on user-facing ones. "
    "Frozen when assembled, before any measurement."
)
ROUNDS = {2: ROUND2, 3: ROUND3}
# The first round's promise, as later rounds amend it.
FROZEN_ONCE = "never edited, added to or dropped from after a result was seen"
FROZEN_ROUNDS = ("never edited or dropped from after a result was seen; the later rounds "
                 "below were added, each written as blind")


def _joined(old: dict, new: dict) -> dict:
    """A passage's earlier questions, then the new round's not already there."""
    return {lang: list(dict.fromkeys([*(old.get(lang) or []), *(new.get(lang) or [])]))
            for lang in LANGUAGES}


def main() -> None:
    """Join the writers' files and write the data file."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("folder", type=Path)
    ap.add_argument("writers", type=int)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--add", type=int, choices=sorted(ROUNDS), default=None, metavar="ROUND",
                    help="append this round to the shipped file's questions")
    args = ap.parse_args()
    shipped = json.loads(args.out.read_text(encoding="utf-8")) if args.add else None
    entries: dict[str, Entry] = {}
    for n in range(1, args.writers + 1):
        inputs = [json.loads(x) for x in
                  (args.folder / f"passages-{n}.jsonl").read_text().splitlines() if x.strip()]
        outputs = [json.loads(x) for x in
                   (args.folder / f"questions-{n}.jsonl").read_text().splitlines() if x.strip()]
        if [p["key"] for p in inputs] != [q["key"] for q in outputs]:
            raise SystemExit(f"writer {n}: the keys are not the passages' keys in order")
        for p, q in zip(inputs, outputs, strict=True):
            new = {lang: [" ".join(str(x).split()) for x in q.get(lang) or []]
                   for lang in LANGUAGES}
            if shipped is not None:
                new = _joined(shipped["questions"].get(p["key"], {}), new)
            entries[p["key"]] = Entry(p["source"], p["section"],
                                      {lang: tuple(v) for lang, v in new.items()})
    label, written = (("become-questions-2026-12-03", "2026-12-03") if shipped
                      else ("become-questions-2026-12-02", "2026-12-02"))
    cf = QuestionFile(label, written, "", entries)
    dump_question_file(args.out, cf, "become")
    data = json.loads(args.out.read_text(encoding="utf-8"))
    digest = question_digest(data["questions"])
    how = HOW.format(digest=digest)
    if shipped is not None:
        # Each round's digest stays on record; the new one closes the file.
        how = (shipped["how"].replace(FROZEN_ONCE, FROZEN_ROUNDS) + ROUNDS[args.add]
               + f" sha256 of the questions (question_digest): {digest}.")
    data["how"] = how
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    n_q = sum(len(v[lang]) for v in data["questions"].values() for lang in LANGUAGES)
    print(f"{len(entries)} passages, {n_q} questions; question_digest {digest}; file sha256 "
          f"{hashlib.sha256(args.out.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
