"""The demo page hosting the panel."""

from __future__ import annotations

from flask import Blueprint, render_template

bp = Blueprint("panel", __name__)


@bp.get("/")
def index() -> str:
    """The minimal panel (plain HTML, CSS and JavaScript)."""
    return render_template("index.html")
