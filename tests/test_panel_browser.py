"""The page at / answers in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, Stack

ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or "/usr/bin/chromium"
    assert Path(executable).exists(), "Debian chromium is required (make test installs it)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.mark.browser
@pytest.mark.realmodel
def test_panel_answers_with_sources(real_stack: Stack, browser: object) -> None:
    page = browser.new_page()  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(real_stack.base_url + "/")
    page.get_by_label("Your question").fill("How does the search work?")
    page.get_by_role("button", name="Ask").click()
    page.wait_for_selector("#answer[data-done='1']", timeout=180_000)
    answer = page.inner_text("#answer")
    sources = page.locator("#sources li")
    assert len(answer) > 20
    assert sources.count() >= 1
    assert "How the BeCoMe assistant works" in sources.first.inner_text()
    assert page.inner_text("#status") == "Done."
    assert not errors
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "panel-skeleton-en.png"), full_page=True)
    page.close()
