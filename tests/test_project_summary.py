"""The quotes form's project summary: figures equal to the app's own /result for every demo
project, the farthest expert right, in English and Czech."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from assistant_cli.client import http_json
from demo_app.seed import DEMO_USERS, INJECTION_PROJECT, PROJECTS
from shared.auth import mint_access_token
from shared.figures import ProjectFigures, format_number
from shared.turn_request import ProjectBlock, TurnRequest
from tests.conftest import TEST_ENV
from web.project.app_api import AppApi, read_project_context
from worker.pipeline.project_summary import summary_lines

ALICE = DEMO_USERS["alice@example.com"]  # a member of every demo project


def _get(base: str, token: str, path: str) -> Any:
    status, body = http_json("GET", f"{base}{path}", headers={
        "Authorization": f"Bearer {token}"})
    assert status == 200, (path, status)
    return body


@pytest.fixture(scope="module")
def alice(demo_app: str) -> str:
    return mint_access_token(ALICE, TEST_ENV["ASSISTANT_APP_JWT_SECRET"])


@pytest.mark.parametrize("project", [p.id for p in PROJECTS])
def test_figures_equal_the_apps_result(demo_app: str, alice: str, project: str) -> None:
    context, _ = read_project_context(AppApi(demo_app, 5.0), alice, project)
    result = _get(demo_app, alice, f"/api/v1/projects/{project}/result")
    figures = context.figures
    if project == INJECTION_PROJECT:
        assert result is None and figures is None  # no opinions, nothing to summarise
        return
    assert figures is not None and figures.origin == "stored"
    for mine, theirs in (("best_compromise", "best_compromise"), ("mean", "arithmetic_mean"),
                         ("median", "median")):
        tri = getattr(figures, mine)
        for part in ("lower", "peak", "upper", "centroid"):
            assert getattr(tri, part) == pytest.approx(result[theirs][part]), (mine, part)
    assert figures.max_error == pytest.approx(result["max_error"])
    assert figures.experts == result["num_experts"]
    # The farthest expert, found here from the opinions endpoint on its own.
    opinions = _get(demo_app, alice, f"/api/v1/projects/{project}/opinions")
    centre = result["best_compromise"]["centroid"]
    far = max(opinions, key=lambda o: abs(o["centroid"] - centre))
    name = f"{far['user_first_name']} {far['user_last_name'] or ''}".strip()
    assert figures.farthest is not None and figures.farthest.name == name
    assert figures.farthest.distance == pytest.approx(abs(far["centroid"] - centre))
    for lang in ("en", "cs"):
        text = " ".join(summary_lines(figures, lang))
        for value in (result["best_compromise"]["lower"], result["best_compromise"]["peak"],
                      result["best_compromise"]["upper"], result["max_error"]):
            assert format_number(value, lang) in text, (lang, value, text)
        assert name in text
        assert str(result["num_experts"]) in text


# The real project: 14.17 / 23.33 / 38.33 % with a maximum error of 1.39.
FIGURES = ProjectFigures.from_json({
    "origin": "stored", "experts": 3, "scale_min": 0, "scale_max": 100, "unit": "%",
    "best_compromise": {"lower": 14.17, "peak": 23.33, "upper": 38.33, "centroid": 25.28},
    "mean": {"lower": 15, "peak": 25, "upper": 40, "centroid": 26.67},
    "median": {"lower": 13.33, "peak": 21.67, "upper": 36.67, "centroid": 23.89},
    "max_error": 1.39, "share": 0.0139, "agreement": "high",
    "farthest": {"name": "Bob Fischer", "distance": 12.5}})


def test_the_summary_says_the_agreement_level_and_its_caveat() -> None:
    figures = FIGURES
    en = summary_lines(figures, "en", "Why did Bob choose 40?")
    assert en[0].startswith("This project counts 3 experts' opinions. The best compromise is "
                            "14.17 / 23.33 / 38.33 %")
    assert "1.39 % of the scale width 100: by the app's rule, high agreement" in en[1]
    assert "does not by itself mean that the experts agree" in en[1]
    assert "Bob Fischer" in en[2] and "12.5 %" in en[2]
    assert "not their reasons" in en[-1]
    cs = summary_lines(figures, "cs", "Proč Bob zvolil 40?")
    assert "14,17 / 23,33 / 38,33 %" in cs[0] and "projekt počítá: 3." in cs[0]
    assert "vysoká shoda" in cs[1] and "ne jejich důvody" in cs[-1]


def test_figures_cross_the_turn_request_and_old_blocks_still_read() -> None:
    figures = dataclasses.replace(FIGURES, origin="computed", farthest=None)
    req = TurnRequest(turn="t", user="u", message="m", language="en", mode="workflow",
                      project=ProjectBlock("text", ("1",), 3.0, figures))
    assert TurnRequest.loads(req.dumps()) == req
    old = TurnRequest(turn="t", user="u", message="m", language="en", mode="workflow",
                      project=ProjectBlock("text", ("1",), 3.0))
    assert "figures" not in old.dumps() and TurnRequest.loads(old.dumps()) == old


def test_the_likert_verdict_is_said_only_where_the_app_shows_one() -> None:
    """The app stores a Likert verdict for every 0-100 project, but only an empty unit makes
    a scale Likert (docs/user/running-a-decision.md in the corpus): a budget in kCZK or a
    share in percent gets no "agreement scale" line; an agreement question gets it, in
    Czech in the app's Czech words."""
    verdict = dataclasses.replace(FIGURES, scale_min=0.0, scale_max=100.0, likert_value=50.0,
                                  likert_decision="Neutral")
    for unit in ("kCZK", "%"):
        lines = summary_lines(dataclasses.replace(verdict, unit=unit), "en", "Result?")
        assert not any("agreement scale" in line for line in lines), lines
    likert = dataclasses.replace(verdict, unit="", likert_value=75.0,
                                 likert_decision="Rather agree")
    assert any("reads this as “Rather agree”" in line
               for line in summary_lines(likert, "en", "Result?"))
    assert any("čte jako „Spíše souhlasím“" in line
               for line in summary_lines(likert, "cs", "Výsledek?"))
