"""Done frames of the quotes answer form (the contract of worker/pipeline/quote_turn.py), written
out by hand from the BeCoMe documentation's own sentences, to drive the panel and the CLI."""

from __future__ import annotations

from typing import Any

from shared.language import quote_marks

BASE = "https://github.com/caitlon/BeCoMe/blob/main/"
READING = {"n": 1, "title": "Reading the result",
           "section": "Reading the result > ## The four figures",
           "excerpt": "**Maximum error (Δmax)** is not an error in your data. Δmax is read "
                      "against your scale, never on its own, and the app does that for you.",
           "score": 0.0331, "source": "docs/user/reading-the-result.md", "local": False,
           "url": BASE + "docs/user/reading-the-result.md#the-four-figures"}
METHOD = {"n": 2, "title": "Method description",
          "section": "Method description > ### Step 4: calculate the maximum error (Δmax)",
          "excerpt": "- **Lower Δmax** → Higher agreement among experts\n- **Higher Δmax** → "
                     "Greater disagreement or presence of outliers",
          "score": 0.0325, "source": "docs/method-description.md", "local": False, "url": None}
WORKED = {"n": 3, "title": "Worked example", "section": "Worked example > The result",
          "excerpt": "Two camps forty points apart.", "score": 0.0161,
          "source": "docs/user/worked-example.md", "local": False,
          "url": BASE + "docs/user/worked-example.md#the-result"}
SOURCES = [READING, METHOD, WORKED]

CHECKS = {"citations": {"valid": True, "cited": [1, 2], "invalid": []},
          "numbers": {"valid": True, "unconfirmed": [], "checked": 2},
          "quotes": {"valid": True, "not_found": []}}

LEAD = {"en": "Here is what the documentation says, in its own words:",
        "cs": "Dokumentace to říká vlastními slovy:"}
QUOTES = {
    "en": [
        {"n": 1, "text": "Δmax is read against your scale, never on its own, and the app does "
                         "that for you.",
         "found": True, "source": "docs/user/reading-the-result.md",
         "section": "Reading the result > The four figures", "language": "en", "note": None},
        {"n": 2, "text": "**Lower Δmax** → Higher agreement among experts on a scale [1, 2] "
                         "of `scale_min` and `scale_max`",
         "found": True, "source": "docs/method-description.md",
         "section": "Method description > Step 4: calculate the maximum error (Δmax)",
         "language": "en", "note": None},
    ],
    "cs": [
        {"n": 1, "text": "Polovina vzdálenosti mezi aritmetickým průměrem a mediánem, což je "
                         "zároveň vzdálenost kompromisu od každého z nich.",
         "found": True, "source": "docs/user/reading-the-result.md",
         "section": "Reading the result > The four figures", "language": "cs", "note": None},
        {"n": 2, "text": "**Lower Δmax** → Higher agreement among experts",
         "found": True, "source": "docs/method-description.md",
         "section": "Method description > Step 4: calculate the maximum error (Δmax)",
         "language": "en", "note": "Dokumentace to uvádí anglicky."},
    ],
}
OFF_TOPIC = "How long should I boil an egg for a soft yolk?"  # nowhere in the test corpus
QUESTIONS = {"en": "What does the maximum error tell me?",
             "cs": "Co mi říká maximální chyba?"}
DONT_KNOW = {
    "en": {"question": "Can I export the result to Excel?",
           "said": "I don't know: the documentation does not say.",
           "clarify": "Did you mean reading the result or running a decision?"},
    "cs": {"question": "Můžu výsledek exportovat do Excelu?",
           "said": "Nevím: dokumentace to neuvádí.",
           "clarify": "Mysleli jste čtení výsledku, nebo průběh rozhodování?"},
}
NEAREST = [
    {"n": 1, "title": "Reading the result", "section": "The four figures",
     "ask": "What are the four figures of the result?"},
    {"title": "Worked example", "section": "Worked example > ## The result",  # no n: as well
     "source": "docs/user/worked-example.md", "ask": "What is the result of the worked example?"},
    {"n": 2, "title": "Method description",
     "section": "Step 4: calculate the maximum error (Δmax)",
     "ask": "How is the maximum error calculated?"},
]


def project_lines(result: dict[str, Any], lang: str, name: str = "Regional flood plan",
                  unit: str = "%", width: float = 100) -> list[str]:
    """The project's figures as lines in the question's language, from the app's /result
    (for the screenshots to agree with the chart drawn from the same data)."""
    def num(x: float) -> str:
        text = f"{round(x, 2):g}"
        return text.replace(".", ",") if lang == "cs" else text

    def tri(key: str) -> str:
        t = result[key]
        return " / ".join(num(t[k]) for k in ("lower", "peak", "upper")) + f" {unit}"

    err = result["max_error"]
    share = 100 * err / width
    n = result["num_experts"]
    if lang == "cs":
        level = "vysoká" if share <= 20 else "střední" if share <= 40 else "nízká"
        return [f"V projektu {name} ({n} expertů) je nejlepší kompromis {tri('best_compromise')}; "
                f"průměr {tri('arithmetic_mean')} a medián {tri('median')}.",
                f"Maximální chyba je {num(err)}, tedy {num(share)} % šířky škály: "
                f"{level} shoda podle pravidla 20 % / 40 %."]
    level = "high" if share <= 20 else "moderate" if share <= 40 else "low"
    return [f"In the project {name} ({n} experts) the best compromise is "
            f"{tri('best_compromise')}; the mean is {tri('arithmetic_mean')} and the median "
            f"{tri('median')}.",
            f"The maximum error is {num(err)}, {num(share)} % of the scale width: {level} "
            f"agreement by the 20 % / 40 % rule."]


def quote_answer(lang: str, project: list[str] | None = None) -> str:
    """The answer text exactly as the worker streams it: figures, lead-in, “quotes” [n] (in
    the language's own quotation marks)."""
    opening, closing = quote_marks(lang)
    parts = list(project or [])
    parts.append(LEAD[lang])
    parts.extend(f"{opening}{q['text']}{closing} [{q['n']}]" for q in QUOTES[lang])
    return "\n\n".join(parts)


def structured(lang: str, outcome: str = "answer",
               project: list[str] | None = None) -> dict[str, Any]:
    """The done frame's structured block."""
    dk = outcome == "dont_know"
    return {"valid_json": True, "cut": False, "outcome": outcome, "lead_in": LEAD[lang],
            "clarifying_question": DONT_KNOW[lang]["clarify"] if dk else None,
            "quotes": [] if dk else [dict(q) for q in QUOTES[lang]],
            "sources": [{"path": s["source"], "valid": True} for s in SOURCES[:2]],
            "nearest": [dict(x) for x in NEAREST] if dk else [],
            "project": {"lines": list(project), "figures": {}} if project else None}


def quotes_done(lang: str, outcome: str = "answer",
                project: list[str] | None = None) -> dict[str, Any]:
    """A whole done frame of the quotes form (without type, turn and seq); project: its
    figure lines, for a project question."""
    if outcome == "dont_know":
        d = DONT_KNOW[lang]
        answer = "\n\n".join([*(project or []), d["said"] + " " + d["clarify"]])
    else:
        answer = quote_answer(lang, project)
    return {"answer": answer, "answer_form": "quotes", "sources": [dict(s) for s in SOURCES],
            "checks": CHECKS, "structured": structured(lang, outcome, project), "usage": {},
            "timing": {"total_ms": 41.0}, "index": "v1", "language": lang}


def token_frames(answer: str, size: int = 24) -> list[dict[str, Any]]:
    """The answer in token frames of a few characters, as it streams."""
    return [{"type": "token", "text": answer[i:i + size]} for i in range(0, len(answer), size)]
