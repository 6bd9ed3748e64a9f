"""The demo page hosting the panel."""

from __future__ import annotations

from flask import Blueprint, render_template

from web.auth import settings

bp = Blueprint("panel", __name__)


@bp.get("/")
def index() -> str:
    """The minimal panel (plain HTML, CSS and JavaScript)."""
    s = settings()
    # The demo accounts exist only in the demo app a dev stack signs in to: never named on a
    # production page.
    return render_template("index.html",
                           demo_guide=not s.production and s.dev_login and bool(s.app_api_url))
