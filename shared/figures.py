"""A project's key figures as data: built by the web tier from what the app returned, written
out in words by the worker (the quotes form's project summary), both from this one shape."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

_CENT = Decimal("0.01")
# Enough digits for any float's integer part (up to ~1.8e308) plus two decimals.
_ROUNDING = Context(prec=400, rounding=ROUND_HALF_UP)


def format_number(value: float, lang: str = "en") -> str:
    """Rounded to 2 decimals without trailing zeros: 10.0 -> '10', 15.666 -> '15.67';
    Czech writes a decimal comma (15,67)."""
    # Half up on the float's exact value, like the app's JavaScript toFixed(2): 15.625 -> 15.63.
    rounded = Decimal(value).quantize(_CENT, context=_ROUNDING)
    text = f"{rounded:f}".rstrip("0").rstrip(".")
    text = "0" if text == "-0" else text
    return text.replace(".", ",") if lang == "cs" else text


@dataclass(frozen=True)
class Triangle:
    """A fuzzy triangular number and its centroid, as the app shows them."""

    lower: float
    peak: float
    upper: float
    centroid: float


@dataclass(frozen=True)
class Farthest:
    """The listed expert whose opinion's centroid lies farthest from the compromise's."""

    name: str  # as entered in the app, cleaned by the web tier
    distance: float


@dataclass(frozen=True)
class ProjectFigures:
    """The figures a project summary states; every number here grounds the answer's."""

    origin: str  # "stored": the app's own /result; "computed": recomputed, none stored
    experts: int
    scale_min: float
    scale_max: float
    unit: str
    best_compromise: Triangle
    mean: Triangle
    median: Triangle
    max_error: float
    share: float | None  # max_error / (scale_max - scale_min)
    agreement: str | None  # high | moderate | low (shared.method.agreement_level)
    farthest: Farthest | None = None
    likert_value: float | None = None
    likert_decision: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form the turn request carries."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> ProjectFigures:
        """Parse the JSON form; ValueError when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("figures must be an object")
        try:
            tri = {k: Triangle(**{f: float(data[k][f]) for f in
                                  ("lower", "peak", "upper", "centroid")})
                   for k in ("best_compromise", "mean", "median")}
            far = data.get("farthest")
            return cls(
                origin=str(data["origin"]), experts=int(data["experts"]),
                scale_min=float(data["scale_min"]), scale_max=float(data["scale_max"]),
                unit=str(data["unit"]), **tri, max_error=float(data["max_error"]),
                share=None if data.get("share") is None else float(data["share"]),
                agreement=None if data.get("agreement") is None else str(data["agreement"]),
                farthest=None if far is None else Farthest(str(far["name"]),
                                                           float(far["distance"])),
                likert_value=None if data.get("likert_value") is None
                else float(data["likert_value"]),
                likert_decision=None if data.get("likert_decision") is None
                else str(data["likert_decision"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"figures: {type(exc).__name__}") from None

    def numbers(self) -> tuple[str, ...]:
        """Every number the summary may write, as written (2 decimals, no trailing zeros)."""
        values = [self.experts, self.scale_min, self.scale_max, self.max_error,
                  self.scale_max - self.scale_min]
        for t in (self.best_compromise, self.mean, self.median):
            values += [t.lower, t.peak, t.upper, t.centroid]
        if self.share is not None:
            values.append(self.share * 100)
        if self.farthest is not None:
            values.append(self.farthest.distance)
        if self.likert_value is not None:
            values.append(self.likert_value)
        return tuple(dict.fromkeys(format_number(float(v)) for v in values))
