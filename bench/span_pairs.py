"""Which quotes answer better, judged blind: the first-quote figure counts a quote from the
expected section as right whichever of its sentences it is, so a change to the span ranking
inside a section needs a reader. `pairs` writes the questions whose quotes differ between the
shipped weights and a setting, each as X and Y in a random order (the key apart); a reader
writes one line per question, `ID X`, `ID Y` or `ID T` (a tie), before opening the key;
`score` counts them. `--whole`: the questions whose quotes differ anywhere (a change to the
further quotes), not only in the first.

    python -m bench.span_pairs pairs FIELD:VALUE[,FIELD:VALUE] --out DIR [--sets SETS] [--whole]
    python -m bench.span_pairs score DIR VERDICTS
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from bench import quotes_eval as qe
from bench.hedge_band import SETS
from bench.quotes_flips import setting
from worker.pipeline.quotes import WEIGHTS


def pairs(change: str, out: Path, sets: str, seed: int = 7, whole: bool = False) -> int:
    """Write DIR/pairs.json (blind) and DIR/key.json; the number of pairs."""
    alt = setting(f"alt={change}")[1]
    rng = random.Random(seed)
    shown, key = [], {}
    for name in sets.split(","):
        rows = qe.collect(name, 5)
        qe.score(rows, WEIGHTS)
        base = [[c.text for c in r["chosen"]] for r in rows]
        qe.score(rows, alt)
        for r, b in zip(rows, base, strict=True):
            a = [c.text for c in r["chosen"]]
            if not a or not b or (a == b if whole else a[0] == b[0]):
                continue
            q = r["q"]
            swap = rng.random() < 0.5
            key[q["id"]] = "alt" if swap else "base"  # what X is
            x, y = (a, b) if swap else (b, a)
            shown.append({"id": q["id"], "question": q["question"],
                          "facts": q.get("expected_facts") or [], "X": x, "Y": y})
    out.mkdir(parents=True, exist_ok=True)
    (out / "pairs.json").write_text(json.dumps(shown, ensure_ascii=False, indent=1))
    (out / "key.json").write_text(json.dumps(key, indent=1))
    return len(shown)


def score(out: Path, verdicts: Path) -> dict[str, int]:
    """How often the setting's quotes were judged better, the shipped ones, or neither."""
    key = json.loads((out / "key.json").read_text())
    got = {"setting": 0, "shipped": 0, "tie": 0}
    for line in verdicts.read_text().splitlines():
        if not line.strip():
            continue
        qid, said = line.split()
        if said == "T":
            got["tie"] += 1
        else:
            got["setting" if (said == "X") == (key[qid] == "alt") else "shipped"] += 1
    return got


def main(argv: list[str] | None = None) -> None:
    """pairs or score."""
    ap = argparse.ArgumentParser(prog="python -m bench.span_pairs")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pairs")
    p.add_argument("change")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sets", default=SETS)
    p.add_argument("--whole", action="store_true")
    s = sub.add_parser("score")
    s.add_argument("out", type=Path)
    s.add_argument("verdicts", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "pairs":
        print(pairs(args.change, args.out, args.sets, whole=args.whole), "pairs in",
              args.out / "pairs.json")
    else:
        print(score(args.out, args.verdicts))


if __name__ == "__main__":
    main()
