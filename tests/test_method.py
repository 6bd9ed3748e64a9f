"""shared.method reproduces every reference value of docs/spec/become-app-api.md section 6: the
worked examples, and every figure of the budget/floods/pendlers table (Γ, Ω, ΓΩMean, centroid,
Δmax)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shared.method import (
    BecomeResult,
    Fuzzy,
    agreement_level,
    agreement_share,
    compare_stored,
    compute,
    distances_from_compromise,
    median,
    peak_spread,
)

SHARED = Path(__file__).resolve().parents[2] / "shared"
APP_API_SPEC = Path(__file__).resolve().parents[1] / "docs/spec/become-app-api.md"
DATA = SHARED / "corpus" / "become" / "examples" / "data"
# Rounding to the two decimals the reference values are printed with.
TWO_DECIMALS = 0.005 + 1e-9

THREE = [Fuzzy(10, 15, 20), Fuzzy(12, 18, 25), Fuzzy(8, 14, 22)]
FOUR = [*THREE, Fuzzy(11, 16, 23)]
MANAGERS = [Fuzzy(5.0, 8.0, 12.0), Fuzzy(6.0, 9.0, 14.0), Fuzzy(4.0, 7.0, 11.0),
            Fuzzy(7.0, 10.0, 15.0), Fuzzy(5.5, 8.5, 13.0)]

# docs/spec/become-app-api.md section 6 table: M, Γ, Ω, ΓΩMean, centroid of ΓΩMean (None: not
# given), Δmax.
TABLE = {
    "budget": (22, (32.05, 52.50, 66.14), (35.0, 50.0, 52.5), (33.52, 51.25, 59.32), 48.03, 2.20),
    "floods": (13, (17.08, 20.38, 23.38), (6, 8, 11), (11.54, 14.19, 17.19), 14.31, 5.97),
    "pendlers": (22, (36.36,) * 3, (25,) * 3, (30.68,) * 3, None, 5.68),
}
OPINION_LINE = re.compile(r"^(?P<id>[^|#]+?)\s*\|\s*(?P<a>[-\d.]+)\s*\|\s*(?P<c>[-\d.]+)\s*\|"
                          r"\s*(?P<b>[-\d.]+)\s*$")


def shared_dir() -> Path:
    """The read-only shared folder beside the repo; fail clearly when it is not there."""
    if not SHARED.is_dir():
        pytest.fail(f"shared folder not found at {SHARED} (expected beside the repo)")
    return SHARED


def parse_opinions(text: str) -> list[tuple[str, Fuzzy]]:
    """Opinion lines 'ExpertID | Lower | Peak | Upper' of the examples' text format."""
    rows = []
    for line in text.splitlines():
        m = OPINION_LINE.match(line.strip())
        if m:
            rows.append((m["id"], Fuzzy(float(m["a"]), float(m["c"]), float(m["b"]))))
    return rows


def triple(f: Fuzzy) -> tuple[float, float, float]:
    return (f.lower, f.peak, f.upper)


def assert_close(actual: Fuzzy, expected: tuple[float, ...], tol: float = TWO_DECIMALS) -> None:
    for got, want in zip(triple(actual), expected, strict=True):
        assert abs(got - want) <= tol, (triple(actual), expected)


# --- the worked examples of docs/method-description.md -------------------------------------


def test_centroid() -> None:
    assert Fuzzy(10, 15, 20).centroid == 15
    assert abs(Fuzzy(12, 18, 25).centroid - 55 / 3) < 1e-12


def test_three_experts() -> None:
    r = compute(THREE)
    assert_close(r.mean, (10.00, 15.67, 22.33))
    assert triple(r.median) == (10, 15, 20)
    assert_close(r.best_compromise, (10.00, 15.33, 21.17))
    assert abs(r.max_error - 0.50) < 1e-9
    assert (r.num_experts, r.even) == (3, False)


def test_four_experts_average_the_middle_two() -> None:
    r = compute(FOUR)
    assert triple(r.median) == (10.5, 15.5, 21.5)
    assert (r.num_experts, r.even) == (4, True)


def test_five_managers_perfect_agreement() -> None:
    r = compute(MANAGERS)
    for f in (r.mean, r.median, r.best_compromise):
        assert_close(f, (5.5, 8.5, 13.0), tol=1e-9)
    assert r.max_error < 1e-9
    assert (r.num_experts, r.even) == (5, False)


# --- the budget / floods / pendlers table --------------------------------------------------


_CELL_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _cell_triple(cell: str) -> tuple[float, float, float]:
    """'(32.05, 52.50, 66.14)' or '36.36 (crisp)' (lower = peak = upper) from a table cell."""
    numbers = [float(n) for n in _CELL_NUMBER.findall(cell.split("=")[0].split("centroid")[0])]
    if "crisp" in cell:
        assert len(numbers) == 1, cell
        return (numbers[0],) * 3
    assert len(numbers) == 3, cell
    return (numbers[0], numbers[1], numbers[2])


def spec_table() -> dict[str, tuple[object, ...]]:
    """Section 6's table of docs/spec/become-app-api.md, parsed into TABLE's shape."""
    text = APP_API_SPEC.read_text(encoding="utf-8")
    section = text.split("## 6.")[1].split("\n## ")[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or cells[0] not in ("budget", "floods", "pendlers"):
            continue
        centroid = re.search(r"centroid ([\d.]+)", cells[4])
        rows[cells[0]] = (int(cells[1]), _cell_triple(cells[2]), _cell_triple(cells[3]),
                          _cell_triple(cells[4]), float(centroid[1]) if centroid else None,
                          float(cells[5]))
    return rows


def worked_example_opinions() -> list[tuple[str, Fuzzy]]:
    """The floods panel as the corpus's worked example lists it (| Expert | L | P | U |)."""
    text = (shared_dir() / "corpus" / "become" / "docs" / "user" / "worked-example.md"
            ).read_text(encoding="utf-8")
    rows = []
    for line in text.split("## The question")[1].split("## ")[0].splitlines():
        m = re.match(r"^\|\s*([^|]+?)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|$",
                     line.strip())
        if m:
            rows.append((m[1], Fuzzy(float(m[2]), float(m[3]), float(m[4]))))
    return rows


def test_table_is_the_specs() -> None:
    """TABLE holds exactly the figures of docs/spec/become-app-api.md section 6's table."""
    assert spec_table() == {name: tuple(tuple(float(x) for x in v) if isinstance(v, tuple)
                                        else v for v in row) for name, row in TABLE.items()}


def test_floods_row_recomputed_from_the_corpus_opinions() -> None:
    """Every figure of the floods row (M, Γ, Ω, ΓΩMean, its centroid, Δmax) from the 13
    opinions the corpus lists; Ω is the 'Land use' opinion, as the table says."""
    named = worked_example_opinions()
    m, gamma, omega, compromise, centroid, max_error = TABLE["floods"]
    r = compute([f for _, f in named])
    assert r.num_experts == len(named) == m and not r.even
    assert_close(r.mean, gamma)
    assert triple(r.median) == omega == triple(dict(named)["Land use"])
    assert_close(r.best_compromise, compromise)
    assert abs(r.best_compromise.centroid - centroid) <= TWO_DECIMALS
    assert abs(r.max_error - max_error) <= TWO_DECIMALS


def _panel_with(gamma: tuple[float, ...], omega: tuple[float, ...]) -> list[Fuzzy]:
    """Three opinions whose mean is Γ and whose median (by centroid) is Ω: Ω itself, Ω moved
    down by t, and the rest of 3Γ moved up by t, with t large enough to keep Ω in the middle."""
    g, o = Fuzzy(*gamma), Fuzzy(*omega)
    t = 3 * abs(g.centroid - o.centroid) + 1
    rest = Fuzzy(3 * g.lower - 2 * o.lower + t, 3 * g.peak - 2 * o.peak + t,
                 3 * g.upper - 2 * o.upper + t)
    return [Fuzzy(o.lower - t, o.peak - t, o.upper - t), o, rest]


@pytest.mark.parametrize("name", sorted(TABLE))
def test_table_row_follows_from_its_mean_and_median(name: str) -> None:
    """For each row, compute() over a panel with the row's Γ and Ω gives the row's ΓΩMean,
    centroid and Δmax (the raw budget and pendlers opinions are not in the corpus)."""
    _m, gamma, omega, compromise, centroid, max_error = TABLE[name]
    r = compute(_panel_with(gamma, omega))
    assert_close(r.mean, gamma, tol=1e-9)
    assert_close(r.median, omega, tol=1e-9)
    # Γ and Ω are printed to two decimals, so what follows from them may be off by a little
    # more than the printing alone: half a unit of the inputs' last place, plus rounding.
    derived = 2 * TWO_DECIMALS
    assert_close(r.best_compromise, compromise, tol=derived)
    if centroid is not None:
        assert abs(r.best_compromise.centroid - centroid) <= derived
    assert abs(r.max_error - max_error) <= derived


def test_case_study_readme_matches_the_table() -> None:
    """What the corpus does hold: the data README's expert counts and its sample lines."""
    text = (shared_dir() / "corpus" / "become" / "examples" / "data" / "README.md").read_text(
        encoding="utf-8")
    for name, (m, *_rest) in TABLE.items():
        row = re.search(rf"\[{name}_case\.txt\]\([^)]*\)\s*\|\s*(\d+)", text)
        assert row and int(row[1]) == m, name
    samples = parse_opinions(text)
    assert ("Chairman", Fuzzy(40, 70, 90)) in samples
    assert ("Land owner 2", Fuzzy(0, 0, 2)) in samples
    assert all(f.lower <= f.peak <= f.upper for _, f in samples)
    # The floods samples are opinions of the worked example's full panel.
    panel = dict(worked_example_opinions())
    assert panel["Land owner 2"] == Fuzzy(0, 0, 2) and panel["Hydrologist 1"] == Fuzzy(37, 42, 47)


# --- rules around the formulas -------------------------------------------------------------


def test_median_is_whole_opinion_not_per_component() -> None:
    # Per-component medians would give (5, 10, 30); the opinion with the middle centroid wins.
    ops = [Fuzzy(0, 10, 30), Fuzzy(5, 5, 5), Fuzzy(10, 20, 20)]
    assert median(ops) == Fuzzy(0, 10, 30)


def test_ties_keep_input_order() -> None:
    a, b, c = Fuzzy(10, 15, 20), Fuzzy(5, 15, 25), Fuzzy(14, 15, 16)
    assert median([a, b, c]) == b
    assert median([b, c, a]) == c
    # 0.1 + 0.2 + 0.3 and 0.2 * 3 differ as floats; they are still a tie.
    assert median([Fuzzy(0.1, 0.2, 0.3), Fuzzy(0.2, 0.2, 0.2), Fuzzy(0, 0.3, 0.3)]) == \
        Fuzzy(0.2, 0.2, 0.2)


def test_single_opinion() -> None:
    r = compute([Fuzzy(1, 2, 3)])
    assert r.mean == r.median == r.best_compromise == Fuzzy(1, 2, 3)
    assert (r.max_error, r.num_experts, r.even) == (0, 1, False)


@pytest.mark.parametrize("bad", [[], [Fuzzy(3, 2, 4)], [Fuzzy(1, 5, 4)],
                                 [Fuzzy(1, 2, 3), Fuzzy(float("nan"), 2, 3)]])
def test_invalid_input_raises(bad: list[Fuzzy]) -> None:
    with pytest.raises(ValueError):
        compute(bad)


@pytest.mark.parametrize(("error", "level"), [(0, "high"), (20, "high"), (20.01, "moderate"),
                                              (40, "moderate"), (40.5, "low")])
def test_agreement_level_bands(error: float, level: str) -> None:
    assert agreement_level(error, 0, 100) == level


def test_agreement_level_uses_scale_width() -> None:
    assert agreement_level(8.2, 10, 51) == "high"  # exactly 20 %, despite float division
    assert agreement_level(3, -5, 5) == "moderate"
    assert abs(agreement_share(2.2, 0, 100) - 0.022) < 1e-12
    with pytest.raises(ValueError):
        agreement_level(1, 5, 5)


def test_derived_figures() -> None:
    r = compute(THREE)
    dist = distances_from_compromise(THREE, r.best_compromise)
    gx = r.best_compromise.centroid  # (10 + 15.333 + 21.167) / 3 = 15.5
    assert [round(d, 6) for d in dist] == [round(abs(o.centroid - gx), 6) for o in THREE]
    assert abs(dist[0] - 0.5) < 1e-9
    spread = peak_spread(THREE)
    assert (spread.min, spread.max, spread.width) == (14, 18, 4)


def stored_from(r: BecomeResult) -> dict[str, object]:
    """The app's result JSON (4.4) for a computed result."""
    def tri(f: Fuzzy) -> dict[str, float]:
        return {"lower": f.lower, "peak": f.peak, "upper": f.upper, "centroid": f.centroid}
    return {"best_compromise": tri(r.best_compromise), "arithmetic_mean": tri(r.mean),
            "median": tri(r.median), "max_error": r.max_error, "num_experts": r.num_experts,
            "likert_value": None, "likert_decision": None,
            "calculated_at": "2026-05-01T10:00:00Z"}


def test_compare_stored_consistent_within_tolerance() -> None:
    r = compute(THREE)
    stored = stored_from(r)
    stored["median"] = {"lower": 10.004, "peak": 15, "upper": 20, "centroid": 15}
    assert compare_stored(stored, r) == ()


def test_compare_stored_reports_fields() -> None:
    r = compute(FOUR)
    stale = stored_from(compute(THREE))  # e.g. a fourth opinion came after the last recompute
    assert compare_stored(stale, r) == (
        "best_compromise.lower", "best_compromise.peak", "best_compromise.upper",
        "arithmetic_mean.lower", "arithmetic_mean.peak", "arithmetic_mean.upper",
        "median.lower", "median.peak", "median.upper", "max_error", "num_experts")
    edited = stored_from(r)
    edited["median"] = {"lower": 10.5, "peak": 15.52, "upper": 21.5}
    assert compare_stored(edited, r) == ("median.peak",)
    assert compare_stored(edited, r, tol=0.05) == ()
    broken = stored_from(r)
    broken["best_compromise"] = None
    broken["num_experts"] = "4"
    assert compare_stored(broken, r) == ("best_compromise.lower", "best_compromise.peak",
                                         "best_compromise.upper", "num_experts")
