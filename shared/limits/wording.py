"""The limits' refusals as plain sentences in English or Czech (the 429s and the 503)."""

from __future__ import annotations

import math

from limits import RateLimitItem

from shared.errors import Unavailable

# Czech forms after a number: 1 / 2-4 / 0 and 5+ (accusative, as in "za 5 minut").
_CS_UNITS = {
    "second": ("sekundu", "sekundy", "sekund"),
    "minute": ("minutu", "minuty", "minut"),
    "hour": ("hodinu", "hodiny", "hodin"),
    "day": ("den", "dny", "dní"),
}


def czech(lang: str) -> bool:
    return lang.strip().lower().split("-")[0] == "cs"


def cs_form(n: int, forms: tuple[str, str, str]) -> str:
    return forms[0] if n == 1 else forms[1] if 2 <= n <= 4 else forms[2]


def en_form(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def amount(n: int, unit: str, cs: bool) -> str:
    """'12 minutes' / '12 minut'."""
    return f"{n} {cs_form(n, _CS_UNITS[unit]) if cs else en_form(n, unit)}"


def wait(seconds: int, cs: bool) -> str:
    """How long to wait, rounded up so that trying again then is never too early."""
    if seconds < 90:
        return amount(seconds, "second", cs)
    if seconds < 90 * 60:
        return amount(math.ceil(seconds / 60), "minute", cs)
    return amount(math.ceil(seconds / 3600), "hour", cs)


def window_phrase(item: RateLimitItem, cs: bool) -> str:
    """'in the last hour' / 'za poslední hodinu' for the limit's window."""
    unit, n = item.GRANULARITY.name, item.multiples
    if cs:
        last = "posledních" if n >= 5 else "poslední"
        return f"za {last} {amount(n, unit, cs) if n > 1 else _CS_UNITS[unit][0]}"
    return f"in the last {amount(n, unit, cs) if n > 1 else unit}"


def grouped(n: int, cs: bool) -> str:
    # Czech groups thousands with a (non-breaking) space, English with a comma.
    return f"{n:,}".replace(",", "\u00a0") if cs else f"{n:,}"


def again(seconds: int, cs: bool) -> str:
    if cs:
        return f"Zkuste to prosím znovu za {wait(seconds, cs)}."
    return f"Please try again in {wait(seconds, cs)}."


def unavailable(lang: str) -> Unavailable:
    if czech(lang):
        text = ("Asistent teď nemůže ověřit limity používání, proto dotazy nepřijímá. "
                "Zkuste to prosím za chvíli.")
    else:
        text = ("The assistant cannot check its usage limits right now, so it is not taking "
                "questions. Please try again shortly.")
    return Unavailable("limit store unreachable", public_message=text)
