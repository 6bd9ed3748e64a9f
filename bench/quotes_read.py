"""What a person reads: every answer of the quotes form for question sets, its quotes in full,
and a count of the quotes that read badly on their own (a code comment without the code under
it, a command's first line ending in "\\", a sentence cut after an abbreviation):

    python -m bench.quotes_read SETS [--language en|cs] [--quiet]

SETS: comma-separated `bench.quotes_eval` sets. The answers are the ones `bench.quotes_eval`
scores (the shipped weights and thresholds, the translation as a turn runs it).
"""

from __future__ import annotations

import argparse
import re

from bench import quotes_eval as qe
from worker.pipeline.quotes import WEIGHTS

# A code comment's line alone ("# Build for production"): it says what follows, not what to do.
_BARE_COMMENT = re.compile(r"^\s*(#|//)[^\n]*$")
# A quote that ends on an abbreviation ("... podle čl."): its sentence goes on in the next quote.
_CUT = re.compile(r"\b(čl|odst|písm|art|např|tj|e\.g|i\.e)\.$", re.IGNORECASE)


def main(argv: list[str] | None = None) -> None:
    """Print each answer's quotes, then the counts."""
    ap = argparse.ArgumentParser(prog="python -m bench.quotes_read")
    ap.add_argument("sets")
    ap.add_argument("--language", choices=("en", "cs"))
    ap.add_argument("--quiet", action="store_true", help="the counts only")
    args = ap.parse_args(argv)
    answers = quotes = bare = cut = several = open_ = 0
    for name in args.sets.split(","):
        rows = qe.collect(name, 5, language=args.language)
        qe.score(rows, WEIGHTS)
        for r in rows:
            q = r["q"]
            if not args.quiet:
                print(f"--- [{q['id']}] {q['question']}")
            answers += bool(r["chosen"])
            for c in r["chosen"]:
                p = r["passages"][c.n]
                quotes += 1
                bare += bool(c.span.kind == "code" and _BARE_COMMENT.match(c.text))
                cut += bool(_CUT.search(c.text))
                open_ += bool(c.span.kind == "code" and c.text.rstrip().endswith("\\"))
                several += bool(c.span.kind == "code" and "\n" in c.text)
                if not args.quiet:
                    print(f"    > {c.text!r}  ({p.source} | {p.section})")
    print(f"{answers} answers, {quotes} quotes: {several} code quotes of several lines, "
          f"{bare} bare code comments, {open_} commands cut at a line's '\\', {cut} cut after "
          "an abbreviation")


if __name__ == "__main__":
    main()
