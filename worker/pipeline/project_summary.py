"""A project's key figures in words, written in code in the question's language (the quotes
form's answer to a project question): every number comes from shared.figures."""

from __future__ import annotations

import re

from shared.figures import ProjectFigures, Triangle, format_number

# "Why did Bob choose 40?": the data holds values, not reasons.
_WHY = re.compile(r"\b(why|proč|proc)\b", re.IGNORECASE)
_CHOICE = re.compile(r"\b(chos\w*|choose\w*|pick\w*|enter\w*|gave|give\w*|put|vybral\w*|"
                     r"zvolil\w*|zadal\w*|dal[aoi]?)\b", re.IGNORECASE)
_AGREEMENT = {"en": {"high": "high agreement", "moderate": "moderate agreement",
                     "low": "low agreement"},
              "cs": {"high": "vysoká shoda", "moderate": "střední shoda", "low": "nízká shoda"}}


def _triangle(t: Triangle, unit: str, lang: str) -> str:
    parts = " / ".join(format_number(v, lang) for v in (t.lower, t.peak, t.upper))
    return f"{parts}{unit}"


def _unit(figures: ProjectFigures) -> str:
    return f" {figures.unit}" if figures.unit else ""


# The app's Czech words for its five Likert points (its cs locale, about.json).
LIKERT_CS = {0.0: "Rozhodně nesouhlasím", 25.0: "Spíše nesouhlasím", 50.0: "Neutrální",
             75.0: "Spíše souhlasím", 100.0: "Rozhodně souhlasím"}


def summary_lines(figures: ProjectFigures, lang: str, question: str = "") -> list[str]:
    """The summary's paragraphs (English unless the question is Czech)."""
    cs = lang == "cs"
    unit = _unit(figures)
    n = lambda v: format_number(v, "cs" if cs else "en")  # noqa: E731
    bc, mean, median = figures.best_compromise, figures.mean, figures.median
    if cs:
        lines = [f"Počet expertů, jejichž názory projekt počítá: {figures.experts}. Nejlepší "
                 f"kompromis je {_triangle(bc, unit, 'cs')} (dolní mez / nejpravděpodobnější "
                 f"hodnota / horní mez), jeho těžiště je {n(bc.centroid)}. Aritmetický průměr (Γ) "
                 f"je {_triangle(mean, unit, 'cs')} a medián (Ω) {_triangle(median, unit, 'cs')}."]
    else:
        counted = "1 expert's opinion" if figures.experts == 1 \
            else f"{figures.experts} experts' opinions"
        lines = [f"This project counts {counted}. The best compromise is "
                 f"{_triangle(bc, unit, 'en')} (lower / most likely / upper), with its centroid "
                 f"at {n(bc.centroid)}. The arithmetic mean (Γ) is "
                 f"{_triangle(mean, unit, 'en')} and the median (Ω) "
                 f"{_triangle(median, unit, 'en')}."]
    error = f"{n(figures.max_error)}{unit}"
    width = n(figures.scale_max - figures.scale_min)
    if figures.share is not None and figures.agreement in _AGREEMENT["en"]:
        level = _AGREEMENT["cs" if cs else "en"][figures.agreement]
        share = n(figures.share * 100)
        if cs:
            lines.append(f"Maximální chyba (Δmax) je {error}, tedy {share} % šířky škály "
                         f"{width}: podle pravidla aplikace {level} (do 20 % vysoká, do 40 % "
                         "střední, nad tím nízká). Malá maximální chyba sama o sobě neznamená, "
                         "že se experti shodují: rozhoduje i to, jak daleko od sebe jejich "
                         "názory leží.")
        else:
            lines.append(f"The maximum error (Δmax) is {error}, which is {share} % of the scale "
                         f"width {width}: by the app's rule, {level} (up to 20 % is high, up "
                         "to 40 % moderate, above that low). A small maximum error does not by "
                         "itself mean that the experts agree: how far apart the opinions lie "
                         "matters too.")
    else:
        lines.append(f"Maximální chyba (Δmax) je {error}." if cs
                     else f"The maximum error (Δmax) is {error}.")
    if figures.farthest is not None:
        far = figures.farthest
        lines.append(
            f"Nejdál od kompromisu leží názor, který zadal(a) {far.name}: jeho těžiště je "
            f"{n(far.distance)}{unit} od těžiště kompromisu." if cs else
            f"The opinion farthest from the compromise is the one entered by {far.name}: its "
            f"centroid lies {n(far.distance)}{unit} from the compromise's.")
    # The app stores a verdict for every 0-100 project, but shows it only where the unit is
    # empty: "Only an empty unit makes a scale Likert" (the corpus's
    # docs/user/running-a-decision.md); a budget or a share in percent is no agreement question.
    if figures.likert_decision and not figures.unit.strip():
        verdict = figures.likert_decision
        if cs and figures.likert_value is not None:
            verdict = LIKERT_CS.get(figures.likert_value, verdict)
        lines.append(f"Na škále souhlasu to aplikace čte jako „{verdict}“." if cs
                     else f"On the agreement scale the app reads this as “{verdict}”.")
    if figures.origin == "computed":
        lines.append("Aplikace pro tento projekt nemá uložený výsledek; čísla jsou přepočtená "
                     "z názorů podle vzorců BeCoMe." if cs else
                     "The app has no stored result for this project: these figures are "
                     "recomputed from the opinions with the BeCoMe formulas.")
    if _WHY.search(question) and _CHOICE.search(question):
        lines.append("Data projektu obsahují hodnoty, které experti zadali, ne jejich důvody: "
                     "proč je expert zvolil, z nich říct nelze." if cs else
                     "The project data holds the values the experts entered, not their "
                     "reasons: why an expert chose them cannot be read from it.")
    return lines
