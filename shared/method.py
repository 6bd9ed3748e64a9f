"""The BeCoMe method (docs/spec/become-app-api.md section 6) and the figures derived from it, in
code."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

# Agreement bands from the app's project page: Δmax as a share of the scale width.
HIGH_AGREEMENT_SHARE = 0.20
MODERATE_AGREEMENT_SHARE = 0.40
# A share computed as 8.2 / 41 can land one ulp above 0.2; the band edges are meant inclusively.
_SHARE_EPSILON = 1e-9
# The stored result's triangles as the app names them, mapped to our BecomeResult attributes.
_STORED_TRIANGLES = (("best_compromise", "best_compromise"), ("arithmetic_mean", "mean"),
                     ("median", "median"))
_BOUNDS = ("lower", "peak", "upper")


@dataclass(frozen=True)
class Fuzzy:
    """A triangular fuzzy number (A, C, B): lower bound, peak, upper bound."""

    lower: float
    peak: float
    upper: float

    @property
    def centroid(self) -> float:
        """Gx = (A + C + B) / 3."""
        return (self.lower + self.peak + self.upper) / 3


@dataclass(frozen=True)
class BecomeResult:
    """Γ, Ω, ΓΩMean, Δmax, M and whether M is even."""

    mean: Fuzzy
    median: Fuzzy
    best_compromise: Fuzzy
    max_error: float
    num_experts: int
    even: bool


@dataclass(frozen=True)
class PeakSpread:
    """Lowest and highest peak among opinions, and their difference."""

    min: float
    max: float
    width: float


def _check_opinion(index: int, opinion: Fuzzy) -> None:
    """Raise ValueError unless the opinion is finite and lower <= peak <= upper."""
    values = (opinion.lower, opinion.peak, opinion.upper)
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"opinion {index + 1} has a value that is not a finite number")
    if not opinion.lower <= opinion.peak <= opinion.upper:
        raise ValueError(f"opinion {index + 1} violates lower <= peak <= upper: {values}")


def _midpoint(a: Fuzzy, b: Fuzzy) -> Fuzzy:
    """Component-wise average of two triangles."""
    return Fuzzy((a.lower + b.lower) / 2, (a.peak + b.peak) / 2, (a.upper + b.upper) / 2)


def arithmetic_mean(opinions: Sequence[Fuzzy]) -> Fuzzy:
    """Γ: the component-wise mean of the opinions."""
    m = len(opinions)
    return Fuzzy(math.fsum(o.lower for o in opinions) / m,
                 math.fsum(o.peak for o in opinions) / m,
                 math.fsum(o.upper for o in opinions) / m)


def _centroid_key(opinion: Fuzzy) -> Decimal:
    """Sort key proportional to the centroid, exact for the decimals people type."""
    # Float sums make (0.1, 0.2, 0.3) and (0.2, 0.2, 0.2) differ by an ulp; the method treats
    # them as a tie, so sum the shortest decimal forms exactly and let the stable sort decide.
    return sum((Decimal(str(float(v))) for v in (opinion.lower, opinion.peak, opinion.upper)),
               Decimal(0))


def median(opinions: Sequence[Fuzzy]) -> Fuzzy:
    """Ω: whole opinions ordered by centroid (stable); middle one, or mean of the middle two."""
    ordered = sorted(opinions, key=_centroid_key)
    n, odd = divmod(len(ordered), 2)
    if odd:
        return ordered[n]
    return _midpoint(ordered[n - 1], ordered[n])


def compute(opinions: Sequence[Fuzzy]) -> BecomeResult:
    """The BeCoMe result of the opinions; ValueError on no opinions or a malformed one."""
    if not opinions:
        raise ValueError("BeCoMe needs at least one opinion")
    for index, opinion in enumerate(opinions):
        _check_opinion(index, opinion)
    gamma = arithmetic_mean(opinions)
    omega = median(opinions)
    return BecomeResult(mean=gamma, median=omega, best_compromise=_midpoint(gamma, omega),
                        max_error=abs(gamma.centroid - omega.centroid) / 2,
                        num_experts=len(opinions), even=len(opinions) % 2 == 0)


def agreement_share(max_error: float, scale_min: float, scale_max: float) -> float:
    """Δmax as a share of the scale width (0.05 = 5 %); ValueError on an empty scale."""
    width = scale_max - scale_min
    if not width > 0:
        raise ValueError(f"scale width must be positive, got {scale_min}..{scale_max}")
    return abs(max_error) / width


def agreement_level(max_error: float, scale_min: float, scale_max: float) -> str:
    """'high' up to 20 % of the scale width, 'moderate' up to 40 %, else 'low'."""
    share = agreement_share(max_error, scale_min, scale_max)
    if share <= HIGH_AGREEMENT_SHARE + _SHARE_EPSILON:
        return "high"
    if share <= MODERATE_AGREEMENT_SHARE + _SHARE_EPSILON:
        return "moderate"
    return "low"


def distance_from_compromise(opinion: Fuzzy, best_compromise: Fuzzy) -> float:
    """|Gx(opinion) − Gx(best compromise)|."""
    return abs(opinion.centroid - best_compromise.centroid)


def distances_from_compromise(opinions: Sequence[Fuzzy],
                              best_compromise: Fuzzy) -> tuple[float, ...]:
    """Each opinion's centroid distance from the best compromise's centroid, in input order."""
    return tuple(distance_from_compromise(o, best_compromise) for o in opinions)


def peak_spread(opinions: Sequence[Fuzzy]) -> PeakSpread:
    """Lowest peak, highest peak and their difference; ValueError on no opinions."""
    if not opinions:
        raise ValueError("a spread needs at least one opinion")
    peaks = [o.peak for o in opinions]
    low, high = min(peaks), max(peaks)
    return PeakSpread(min=low, max=high, width=high - low)


def _as_number(value: object) -> float | None:
    """A finite JSON number as float, else None (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _differs(stored: object, computed: float, tol: float) -> bool:
    """True when the stored value is missing, not a number, or further than tol away."""
    number = _as_number(stored)
    return number is None or abs(number - computed) > tol


def compare_stored(stored: Mapping[str, object], computed: BecomeResult,
                   tol: float = 0.01) -> tuple[str, ...]:
    """Fields of the app's stored result that disagree with a recomputation (empty: consistent)."""
    # Centroids are not compared: the app derives them from the stored bounds when it answers,
    # so they can only disagree when a bound already does.
    fields: list[str] = []
    for name, attr in _STORED_TRIANGLES:
        triangle = stored.get(name)
        ours: Fuzzy = getattr(computed, attr)
        for bound in _BOUNDS:
            value = triangle.get(bound) if isinstance(triangle, Mapping) else None
            if _differs(value, getattr(ours, bound), tol):
                fields.append(f"{name}.{bound}")
    if _differs(stored.get("max_error"), computed.max_error, tol):
        fields.append("max_error")
    # A count is compared exactly: one opinion more or less is a real difference.
    if _as_number(stored.get("num_experts")) != computed.num_experts:
        fields.append("num_experts")
    return tuple(fields)
