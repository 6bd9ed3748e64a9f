"""How often language detection names a question's language: every question of the given sets
as written, and each Czech one again with its diacritics removed (as people often type it).

Run: .venv/bin/python -m bench.language_detect ../shared/eval/dev.jsonl bench/retrieval/*.jsonl
"""

from __future__ import annotations

import argparse
from collections import Counter

from shared.language import detect_language, plain
from worker.evaluation import load_questions


def main() -> None:
    """Print, per group, how many questions were detected as which language."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    questions = [q for path in args.files for q in load_questions(path)]
    groups = {"en": [q.question for q in questions if q.language == "en"],
              "cs": [q.question for q in questions if q.language == "cs"]}
    groups["cs without diacritics"] = [plain(t) for t in groups["cs"]]
    for name, texts in groups.items():
        got = Counter(detect_language(t) for t in texts)
        print(f"{name}: {len(texts)} questions, detected " + ", ".join(
            f"{lang} {n}" for lang, n in got.most_common()))
        for t in texts:
            if detect_language(t) != name[:2]:
                print(f"    {detect_language(t)}: {t}")


if __name__ == "__main__":
    main()
