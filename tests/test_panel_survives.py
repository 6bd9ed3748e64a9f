"""A chat that survives what people do, in headless Chromium against the running
stack: a reload mid-answer, a long outage, signing out, refusals, the chart on a phone and with
many experts, the phone's question box, a long paste, sources one per section, regenerate,
export and new chat, the thumbs. Each test saves a screenshot under test-artifacts/."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from tests.conftest import Stack, set_script
from tests.test_panel_browser import (  # noqa: F401  (fixtures)
    LAST_TURN,
    browser,
    panel_factory,
)
from tests.test_panel_chat import PHONE, play_socket, screenshot, scripted_done, sign_in

TURN_ID = "d" * 32
STATUS = "() => document.getElementById('ba-status').innerText"
STORED_KEYS = """() => Object.keys(sessionStorage).filter((k) => k.startsWith('become-assistant'))"""
PICKER_HAS = ("(label) => Array.from(document.querySelectorAll('#ba-project option'))"
              ".some((o) => o.textContent === label)")


def wait_words(p: Any, n: int) -> None:
    p.page.wait_for_function(
        "(n) => window.__assistantPanel.current && "
        "window.__assistantPanel.current.streamed.split(' ').length > n", arg=n, timeout=30_000)


# ---- 1. a reload mid-answer -----------------------------------------------------------------


@pytest.mark.browser
def test_reload_mid_answer_keeps_the_question_and_carries_on_signed_in(
        project_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    chunks = [f"Word{i} " for i in range(50)] + ["and the end [1]."]
    p = panel_factory(project_stack)
    page = p.page
    sign_in(page, "alice@example.com")
    set_script(scripted_llm, chunks, delay_s=0.08)
    p.ask("How does the search work?")
    wait_words(p, 8)
    page.reload()
    page.wait_for_selector("#ba-question")
    # The demo sign-in survived the reload; the question is there and the answer goes on.
    assert page.inner_text("#demo-who") == "Signed in as alice@example.com."
    assert page.locator(".ba-turn").count() == 1
    assert page.inner_text(f"{LAST_TURN} .ba-user-text") == "How does the search work?"
    assert page.inner_text(f"{LAST_TURN} .ba-answer").startswith("Word0 Word1")
    p.wait_done()
    done = p.last_done()
    assert done["answer"] == "".join(chunks)
    current = p.js("() => ({streamed: window.__assistantPanel.current.streamed, "
                   "seqs: window.__assistantPanel.current.seqLog})")
    assert current["streamed"] == done["answer"], "nothing lost, nothing doubled"
    assert current["seqs"] == list(range(current["seqs"][0], done["seq"] + 1))
    assert current["seqs"][0] > 1, "carried on after the last seq, not from the start"
    resumes = [f for f in p.sent if f["type"] == "resume"]
    assert resumes and resumes[-1]["turn"] == done["turn"] and resumes[-1]["after"] > 0
    assert page.inner_text("#ba-status") == "Done."
    # Finished, it is a saved turn like any other: a second reload shows it, once.
    page.reload()
    page.wait_for_selector("#ba-question")
    assert page.locator(".ba-turn").count() == 1
    assert "and the end" in page.inner_text(f"{LAST_TURN} .ba-answer")
    screenshot(page, "survive-reload.png")
    assert not p.errors


@pytest.mark.browser
def test_reload_mid_answer_carries_on_for_an_anonymous_visitor(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    chunks = [f"Part{i} " for i in range(40)] + ["done [1]."]
    p = panel_factory(scripted_stack)
    set_script(scripted_llm, chunks, delay_s=0.08)
    p.ask("How does the search work?")
    wait_words(p, 6)
    p.page.reload()
    p.page.wait_for_selector("#ba-question")
    assert p.page.inner_text(f"{LAST_TURN} .ba-user-text") == "How does the search work?"
    p.wait_done()
    assert p.last_done()["answer"] == "".join(chunks)
    assert p.js("() => window.__assistantPanel.current.streamed") == "".join(chunks)
    assert p.page.locator(".ba-note-error").count() == 0
    assert not p.errors


# ---- 2. a long outage -------------------------------------------------------------------------


@pytest.mark.browser
def test_a_thirty_second_outage_then_online_finishes_the_answer(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    # Long enough (12 s) to be still running at the drop, which comes 2 s after 6 words.
    chunks = [f"Word{i} " for i in range(120)] + ["with a source [1]."]
    set_script(scripted_llm, chunks, delay_s=0.1)
    p = panel_factory(scripted_stack)
    page = p.page
    resumed_at: list[float] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: resumed_at.append(
        time.monotonic()) if json.loads(payload)["type"] == "resume" else None))
    p.ask("How does the search work?")
    wait_words(p, 6)
    time.sleep(2)  # the question is older than the drop: the seconds below count from the drop
    assert not p.js("() => window.__assistantPanel.current.finished")
    p.context.set_offline(True)
    p.js("() => window.__assistantPanel.dropSocket()")
    dropped = time.monotonic()
    page.wait_for_timeout(30_000)
    status = page.inner_text("#ba-status")
    counting = re.search(r"Reconnecting… (\d+) s", status)
    assert counting, status  # the drop is shown (it was not, once: tests/js/transport.test.js)
    seconds = int(counting.group(1))
    assert 28 <= seconds <= 31, status
    assert page.get_by_role("button", name="Reconnect now").is_visible()
    assert page.locator(".ba-note:visible").count() == 0, "the turn has not ended"
    screenshot(page, "survive-outage.png")
    p.context.set_offline(False)
    online = time.monotonic()
    p.wait_done(20_000)
    done = p.last_done()
    assert done["answer"] == "".join(chunks)
    assert p.js("() => window.__assistantPanel.current.streamed") == done["answer"]
    # Coming back online tried at once, not after the pause of the back-off (15 s).
    assert resumed_at and resumed_at[-1] - online < 5, (resumed_at, online, dropped)
    assert page.inner_text("#ba-status") == "Done."
    assert not page.get_by_role("button", name="Reconnect now").is_visible()
    assert not p.errors


# ---- 3. sign-out -----------------------------------------------------------------------------


@pytest.mark.browser
def test_sign_out_clears_the_chat_and_the_tab_storage_also_after_reload(
        project_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(project_stack, viewport=(1280, 900))
    page = p.page
    downloads: list[Any] = []
    page.on("download", lambda d: downloads.append(d))
    sign_in(page, "alice@example.com")
    page.wait_for_function("() => Array.from(document.querySelectorAll('#ba-project option'))"
                           ".some((o) => o.textContent === 'Office move budget')")
    page.select_option("#ba-project", label="Office move budget")
    set_script(scripted_llm, ["The best compromise is in your project data [1]."])
    p.ask("What is the result of my project?")
    p.wait_done(60_000)
    page.locator(f"{LAST_TURN} .ba-chart").wait_for(state="visible", timeout=15_000)
    page.reload()
    page.wait_for_selector("#ba-question")
    assert page.locator(".ba-turn").count() == 1
    page.locator(".ba-chart").wait_for(state="visible")
    page.get_by_role("button", name="Sign out").click()
    assert page.locator(".ba-turn, .ba-chart").count() == 0
    assert page.locator(".ba-empty").is_visible()
    assert p.js(STORED_KEYS) == [], "the tab's storage is empty"
    export = page.get_by_role("button", name="Export")
    assert export.get_attribute("aria-disabled") == "true"
    export.dispatch_event("click")  # a click anyway: nothing happens
    page.reload()
    page.wait_for_selector("#ba-question")
    assert page.locator(".ba-turn").count() == 0
    assert page.get_by_role("button", name="Sign in").is_visible()
    page.get_by_role("button", name="Export").dispatch_event("click")
    page.wait_for_timeout(500)
    assert downloads == [], "nothing to export"
    screenshot(page, "survive-signed-out.png")
    assert not p.errors


@pytest.mark.browser
def test_the_picked_project_comes_back_after_a_reload_and_goes_with_sign_out(
        project_stack: Stack, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(project_stack, viewport=(1280, 900))
    page = p.page
    sign_in(page, "alice@example.com")
    page.wait_for_function(PICKER_HAS, arg="Office move budget")
    page.select_option("#ba-project", label="Office move budget")
    picked = page.input_value("#ba-project")
    assert picked
    page.reload()
    page.wait_for_selector("#ba-question")
    page.wait_for_function(PICKER_HAS, arg="Office move budget")
    # Still the project picked before, in the picker and in what the next question carries.
    page.wait_for_function("(v) => document.getElementById('ba-project').value === v", arg=picked,
                           timeout=5_000)
    assert p.js("() => window.__assistantPanel.panel.projectId") == picked
    page.get_by_role("button", name="Sign out").click()
    assert p.js(STORED_KEYS) == [], "the picked project went with the sign-out"
    page.reload()
    page.wait_for_selector("#ba-question")
    sign_in(page, "alice@example.com")
    page.wait_for_function(PICKER_HAS, arg="Office move budget")
    assert page.input_value("#ba-project") == ""
    assert p.js("() => window.__assistantPanel.panel.projectId") is None
    assert not p.errors


# ---- 4. refusals -----------------------------------------------------------------------------


@pytest.mark.browser
def test_refusals_say_what_happened_and_when_to_try_again(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack)
    page = p.page
    # A refused ticket: the server's sentence, a Try again, no "could not be finished".
    page.route("**/api/v1/assistant/tickets", lambda route: route.fulfill(
        status=503, content_type="application/json",
        body=json.dumps({"error": {"code": 503, "message": "The assistant is unavailable right "
                                   "now. Please try again later."}})))
    p.ask("How does the search work?")
    p.wait_done()
    note = page.locator(f"{LAST_TURN} .ba-note")
    assert note.inner_text() == "The assistant is unavailable right now. Please try again later."
    assert page.inner_text("#ba-status") == ""
    assert page.get_by_role("button", name="Try again").is_visible()
    assert page.get_by_role("button", name="Regenerate").count() == 0
    # Try again asks the same question in its place.
    page.unroute("**/api/v1/assistant/tickets")
    set_script(scripted_llm, ["The search uses BM25 [1]."])
    page.get_by_role("button", name="Try again").click()
    p.wait_done()
    assert page.locator(".ba-turn").count() == 1
    assert p.last_done()["answer"] == "The search uses BM25 [1]."
    assert not p.errors


@pytest.mark.browser
def test_a_refused_demo_token_and_the_anonymous_project_list(
        scripted_stack: Stack, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack, query="?lang=cs")
    page = p.page
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url)
            if "/api/v1/assistant/projects" in r.url else None)
    page.reload()
    page.wait_for_selector("#ba-question")
    page.locator("#ba-project-note").wait_for(state="visible")
    assert asked == [], "an anonymous visitor's projects are not asked for"
    assert page.locator(".ba-project-error").count() == 0
    page.route("**/api/v1/dev/token", lambda route: route.fulfill(
        status=404, content_type="application/json",
        body=json.dumps({"error": {"code": 404, "message": "Not found."}})))
    p.ask("Jak funguje vyhledávání?", label="Váš dotaz", button="Zeptat se")
    p.wait_done()
    note = page.locator(f"{LAST_TURN} .ba-note")
    assert note.inner_text() == ("Dotazy zde vyžadují přihlášení: přihlaste se do aplikace "
                                 "BeCoMe a zkuste to znovu.")
    assert "Spojení" not in note.inner_text()
    assert page.inner_text("#ba-status") == ""
    screenshot(page, "survive-refused-cs.png")
    assert not p.errors


@pytest.mark.browser
def test_the_third_parallel_answer_waits_once_and_retries_on_its_own(
        scripted_stack: Stack, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack)
    page = p.page
    asks: list[float] = []
    busy = ("You already have 2 answers in progress, the most allowed at once. Please try "
            "again in 2 seconds, once one has finished.")

    def on_socket(ws: Any) -> None:
        def on_message(message: str | bytes) -> None:
            if json.loads(message)["type"] != "ask":
                return
            asks.append(time.monotonic())
            if len(asks) == 1:
                ws.send(json.dumps({"type": "error", "turn": None, "seq": None, "code": 429,
                                    "message": busy, "retry_after": 2}))
                return
            for seq, f in enumerate([{"type": "accepted"}, {"type": "token", "text": "Now [1]."},
                                     {"type": "done", **scripted_done([], "Now [1].")}]):
                ws.send(json.dumps({"turn": TURN_ID, "seq": seq, **f}))
        ws.on_message(on_message)

    page.route_web_socket(re.compile(r".*/api/v1/assistant/ws.*"), on_socket)
    p.ask("How does the search work?")
    note = page.locator(f"{LAST_TURN} .ba-note")
    note.wait_for(state="visible")
    assert note.inner_text() == busy, "the wait is said once"
    assert "could not be finished" not in page.inner_text("#assistant")
    assert page.get_by_role("button", name="Try again").is_visible()
    assert page.get_by_role("button", name="Regenerate").count() == 0
    assert re.fullmatch(r"Trying again by itself in [12] s\.",
                        page.inner_text(f"{LAST_TURN} .ba-countdown"))
    screenshot(page, "survive-busy.png")
    page.wait_for_function("() => window.__assistantPanel.lastDone", timeout=10_000)
    assert len(asks) == 2 and 1.5 <= asks[1] - asks[0] <= 5
    assert page.locator(".ba-turn").count() == 1
    assert p.answer_text() == "Now [1]."
    assert not p.errors


# ---- 5. the chart on a phone and with many experts -------------------------------------------


CHART_LABELS = """() => { const svg = document.querySelector('.ba-turn .ba-chart-svg');
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return Array.from(svg.querySelectorAll('text'), (t) => ({text: t.textContent,
    px: parseFloat(getComputedStyle(t).fontSize) * scale})); }"""


@pytest.mark.browser
@pytest.mark.parametrize("phone", [True, False])
def test_chart_labels_are_readable_the_compromise_labelled_and_drawn_once_per_project(
        phone: bool, project_stack: Stack, scripted_llm: str,
        panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(project_stack, viewport=PHONE if phone else (1280, 800), phone=phone,
                      dark=phone)
    page = p.page
    sign_in(page, "alice@example.com")
    page.wait_for_function("() => Array.from(document.querySelectorAll('#ba-project option'))"
                           ".some((o) => o.textContent === 'Regional flood plan')")
    page.select_option("#ba-project", label="Regional flood plan")
    set_script(scripted_llm, ["The result is in your project data [1]."])
    p.ask("What is the result of my project?")
    p.wait_done(60_000)
    chart = page.locator(f"{LAST_TURN} .ba-chart")
    chart.wait_for(state="visible", timeout=15_000)
    labels = p.js(CHART_LABELS)
    assert labels and all(label["px"] >= 11 for label in labels), labels
    texts = [label["text"] for label in labels]
    bc = next(t for t in texts if t.startswith("Best compromise "))
    assert re.fullmatch(r"Best compromise \d+(\.\d+)? %", bc), bc
    assert any(t.startswith("Maximum error ±") for t in texts)
    # 50 opinions drawn fainter (no fill) than the three results.
    assert chart.locator("polygon.ba-chart-expert-many").count() == 50
    fill = chart.locator("polygon.ba-chart-expert").first.evaluate(
        "n => getComputedStyle(n).fill")
    assert fill == "none"
    chart.scroll_into_view_if_needed()
    screenshot(page, f"survive-chart-{'phone' if phone else 'desktop'}.png")
    # A second question about the same project: its chart folded, one chart on screen.
    set_script(scripted_llm, ["The experts agree roughly [1]."])
    p.ask("And the experts?")
    p.wait_done(60_000)
    fold = page.locator(f"{LAST_TURN} details.ba-chart-fold")
    fold.wait_for(timeout=15_000)
    assert fold.get_attribute("open") is None
    assert "Regional flood plan" in fold.locator(":scope > summary").inner_text()
    visible = page.locator(".ba-chart").evaluate_all(
        "ns => ns.filter((n) => n.checkVisibility()).length")
    assert visible == 1
    fold.locator(":scope > summary").click()
    assert page.locator(f"{LAST_TURN} .ba-chart").is_visible()
    assert all(label["px"] >= 11 for label in p.js(CHART_LABELS))
    assert not p.errors


# ---- 6 and 7. the phone's question box, a long paste --------------------------------------


@pytest.mark.browser
def test_phone_question_box_is_one_line_that_grows_and_the_hint_shows(
        scripted_stack: Stack, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack, viewport=PHONE, phone=True)
    page = p.page
    hint = page.locator(".ba-empty")
    box = hint.bounding_box()
    dock = page.locator(".ba-dock").bounding_box()
    assert box and dock and box["y"] >= 0 and box["y"] + box["height"] <= dock["y"], (box, dock)
    assert dock["height"] <= 170, dock
    question = page.locator("#ba-question")
    one_line = question.bounding_box()["height"]
    assert one_line <= 52
    # The project picker is a chip on the row of Ask.
    chip = page.locator("#ba-project").bounding_box()
    ask = page.locator("#ba-ask").bounding_box()
    assert abs((chip["y"] + chip["height"] / 2) - (ask["y"] + ask["height"] / 2)) < 6
    assert page.locator("#ba-project").evaluate("n => getComputedStyle(n).borderRadius") \
        .startswith("999")
    screenshot(page, "survive-phone-empty.png")
    question.tap()
    page.keyboard.type("A longer question that wraps over several lines " * 4)
    assert question.bounding_box()["height"] > one_line + 40
    assert not p.errors


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "cs"])
def test_a_long_paste_is_kept_whole_counted_and_not_sent(
        lang: str, scripted_stack: Stack, scripted_llm: str,
        panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack, query=f"?lang={lang}")
    page = p.page
    question = page.locator("#ba-question")
    question.fill("x" * 5000)
    assert len(question.input_value()) == 5000, "nothing cut"
    counter = page.locator("#ba-counter")
    expected = {"en": "Your question has 5,000 characters; the assistant takes at most 4,000. "
                      "Please shorten it by 1,000 before sending.",
                "cs": "Váš dotaz má 5\u00a0000 znaků; asistent přijme nejvýše 4\u00a0000. "
                      "Před odesláním ho prosím zkraťte o 1\u00a0000."}[lang]
    assert counter.inner_text() == expected
    screenshot(page, f"survive-too-long-{lang}.png")
    page.locator("#ba-ask").click()
    page.wait_for_timeout(300)
    assert page.locator(".ba-turn").count() == 0 and not p.sent
    assert len(question.input_value()) == 5000
    question.fill("y" * 3900)
    assert counter.inner_text() == ("3,900 of 4,000 characters" if lang == "en"
                                    else "3\u00a0900 z 4\u00a0000 znaků")
    question.fill("short")
    assert not counter.is_visible()
    assert not p.errors


# ---- 8. sources: one per section, excerpts rendered -------------------------------------------


@pytest.mark.browser
def test_sources_one_entry_per_section_with_rendered_excerpts(
        scripted_stack: Stack, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack)
    page = p.page
    sources = [
        {"n": 1, "title": "BeCoMe", "section": "BeCoMe > Options", "source": "docs/a.md",
         "excerpt": "The **best compromise** is the *average* of three.\n\n- one\n- two",
         "local": False, "url": None},
        {"n": 2, "title": "Method", "section": "Method > Mean", "source": "docs/b.md",
         "excerpt": "Raw <b>html</b> stays text.", "local": False, "url": None},
        {"n": 3, "title": "BeCoMe", "section": "BeCoMe > Options", "source": "docs/a.md",
         "excerpt": "Another passage of the same section.", "local": False, "url": None},
    ]
    play_socket(page, [{"type": "accepted"}, {"type": "token", "text": "It is [1] and [3]."},
                       {"type": "done", **scripted_done(sources, "It is [1] and [3].")}])
    p.ask("What is the best compromise?")
    p.wait_done()
    entries = page.locator(f"{LAST_TURN} .ba-source")
    assert entries.count() == 2
    assert entries.first.locator(".ba-source-n").inner_text() == "[1, 3]"
    page.locator(f"{LAST_TURN} .ba-answer a.ba-cite", has_text="[3]").click()
    excerpt = entries.first.locator(".ba-excerpt")
    excerpt.wait_for(state="visible")
    assert excerpt.locator("strong").inner_text() == "best compromise"
    assert excerpt.locator("em").inner_text() == "average"
    assert excerpt.locator("li").count() == 2
    assert "**" not in excerpt.inner_text()
    entries.nth(1).locator("summary").click()
    assert entries.nth(1).locator(".ba-excerpt-text").inner_text() == \
        "Raw <b>html</b> stays text."
    assert entries.nth(1).locator(".ba-excerpt b").count() == 0
    screenshot(page, "survive-sources.png")
    assert not p.errors


# ---- 9 and 10. regenerate, export, new chat, thumbs --------------------------------------------


@pytest.mark.browser
def test_regenerate_says_why_export_is_dated_new_chat_undoes_and_thumbs_are_icons(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack)
    page = p.page
    downloads: list[Any] = []
    page.on("download", lambda d: downloads.append(d))
    export = page.get_by_role("button", name="Export")
    assert export.get_attribute("aria-disabled") == "true"
    export.dispatch_event("click")  # a click anyway: nothing happens
    page.wait_for_timeout(300)
    assert downloads == [], "an empty chat exports nothing"
    answer = ["The maximum error is 987.65 [1]."]
    set_script(scripted_llm, answer)
    p.ask("What is the maximum error?")
    p.wait_done()
    assert page.locator(f"{LAST_TURN} .ba-warning").is_visible()
    # Thumbs are drawn icons with names, not emoji.
    for name in ("Good answer", "Bad answer"):
        thumb = page.get_by_role("button", name=name)
        assert thumb.locator("svg").count() == 1 and thumb.inner_text().strip() == ""
    set_script(scripted_llm, answer)
    page.get_by_role("button", name="Regenerate").click()
    p.wait_done()
    note = page.locator(f"{LAST_TURN} .ba-same-note")
    assert note.is_visible()
    assert note.inner_text().startswith("The same answer as before: the assistant answers the "
                                        "same question")
    assert p.last_done()["deterministic"] is True
    screenshot(page, "survive-regenerate.png")
    with page.expect_download() as download:
        export.click()
    exported = open(download.value.path(), encoding="utf-8").read()
    assert re.search(r"Exported on \w+ \d+, 20\d\d", exported), exported[:200]
    assert "Please verify" in exported and "987.65" in exported
    assert re.fullmatch(r"become-assistant-conversation-20\d\d-\d\d-\d\d\.md",
                        download.value.suggested_filename)
    page.get_by_role("button", name="New chat").click()
    assert page.locator(".ba-turn").count() == 0
    undo = page.get_by_role("button", name="Undo")
    assert undo.is_visible()
    assert "The chat was cleared." in page.inner_text(".ba-undo")
    screenshot(page, "survive-undo.png")
    undo.click()
    assert page.locator(".ba-turn").count() == 1
    assert "987.65" in page.inner_text(f"{LAST_TURN} .ba-answer")
    assert not undo.is_visible()
    page.reload()
    page.wait_for_selector("#ba-question")
    assert page.locator(".ba-turn").count() == 1, "the undone chat is saved again"
    assert not p.errors
