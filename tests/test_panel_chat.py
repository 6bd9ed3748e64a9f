"""The panel as a chat people like to use, in headless Chromium against the running
stack: honest waiting, the project list for anonymous visitors, the phone layout, following the
answer, which project a turn was about, readable sources, the step timeline, the language note,
the conversation across reloads, sign-in state, and the chat conveniences. Each test saves a
screenshot under test-artifacts/."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.conftest import Stack, set_script
from tests.test_panel_browser import (  # noqa: F401  (fixtures)
    ARTIFACTS,
    LAST_TURN,
    axe_violations,
    browser,
    panel_factory,
)

PHONE = (390, 844)
STATUS_LOG = """() => { window.__statuses = [];
  const node = document.getElementById('ba-status');
  const seen = () => { const t = node.innerText.trim();
    if (t && window.__statuses[window.__statuses.length - 1] !== t) window.__statuses.push(t); };
  new MutationObserver(seen).observe(node, {subtree: true, childList: true,
                                            characterData: true, attributes: true}); }"""


def screenshot(page: Any, name: str) -> None:
    """What the person sees (the docked form stays at the bottom, so not a full-page shot)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))


def sign_in(page: Any, email: str) -> None:
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill("demo-password")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_function("() => document.getElementById('demo-who').textContent"
                           ".startsWith('Signed in as')")


def no_sideways_scroll(page: Any, width: int) -> None:
    wide = page.evaluate(f"""() => Array.from(document.querySelectorAll('body *'))
        .filter((n) => n.offsetParent !== null && n.getBoundingClientRect().right > {width} + 0.5)
        .map((n) => n.tagName + '#' + n.id + '.' + n.className + ' '
             + Math.round(n.getBoundingClientRect().right))""")
    assert wide == [], wide
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def scripted_done(sources: list[dict[str, Any]], answer: str, **extra: Any) -> dict[str, Any]:
    return {"answer": answer, "sources": sources, "usage": {}, "index": "v1",
            "checks": {"citations": {"valid": True, "cited": [1], "invalid": []},
                       "numbers": {"valid": True, "unconfirmed": [], "checked": 0}}, **extra}


def play_socket(page: Any, frames: list[dict[str, Any]]) -> None:
    """The WebSocket is played by the test: every ask gets these frames (seq added)."""
    turn = "e" * 32

    def on_socket(ws: Any) -> None:
        def on_message(message: str | bytes) -> None:
            if json.loads(message)["type"] != "ask":
                return
            for seq, f in enumerate(frames):
                ws.send(json.dumps({"turn": turn, "seq": seq, **f}))
        ws.on_message(on_message)

    page.route_web_socket(re.compile(r".*/api/v1/assistant/ws.*"), on_socket)


# ---- 1. honest waiting -------------------------------------------------------------------


@pytest.mark.browser
def test_waiting_names_the_step_counts_seconds_and_reports_the_first_word(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    set_script(scripted_llm, ["The search uses BM25 [1]."], stall_s=2.4)
    p = panel_factory(scripted_stack)
    page = p.page
    p.js(STATUS_LOG)
    p.ask("How does the search work?")
    page.wait_for_function("() => /Waiting for the model… [12] s/.test("
                           "document.getElementById('ba-status').innerText)", timeout=15_000)
    assert page.locator("#ba-status .ba-spinner").is_visible(), "a spinner while waiting"
    screenshot(page, "chat-waiting.png")
    p.wait_done()
    statuses = p.js("() => window.__statuses")
    assert "Searching the documentation…" in statuses
    first_word = [s for s in statuses if s.startswith("Writing the answer")]
    assert first_word, statuses
    seconds = float(re.search(r"first word after (\d+\.\d) s", first_word[0]).group(1))
    assert 2.0 <= seconds < 10, first_word
    # The steps in the order they happened: search before waiting, waiting before writing.
    order = [next(i for i, s in enumerate(statuses) if s.startswith(prefix))
             for prefix in ("Searching", "Waiting for the model", "Writing the answer")]
    assert order == sorted(order), statuses
    assert page.inner_text("#ba-status") == "Done."
    assert not page.locator("#ba-status .ba-spinner").is_visible()
    assert not p.errors


# ---- 2. no red error for anonymous visitors -----------------------------------------------


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "cs"])
def test_anonymous_visitor_sees_a_calm_project_note(lang: str, project_stack: Stack,
                                                    panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(project_stack, query=f"?lang={lang}")
    page = p.page
    note = page.locator("#ba-project-note")
    note.wait_for(state="visible")
    expected = ("Po přihlášení se můžete ptát na své projekty." if lang == "cs"
                else "Sign in to ask about your own projects.")
    assert note.inner_text() == expected
    assert page.locator(".ba-project-error, .ba-note-error").count() == 0
    muted = note.evaluate("n => getComputedStyle(n).color")
    assert muted == page.locator(".ba-intro").evaluate("n => getComputedStyle(n).color")
    if lang == "en":
        sign_in(page, "alice@example.com")
        page.wait_for_function("() => document.querySelectorAll('#ba-project option').length > 3")
        assert not note.is_visible()
        page.get_by_role("button", name="Sign out").click()
        note.wait_for(state="visible")
        assert note.inner_text() == expected
        assert page.locator(".ba-project-error").count() == 0
    screenshot(page, f"chat-anonymous-{lang}.png")
    assert not p.errors


# ---- 3 and 4. the phone ------------------------------------------------------------------


@pytest.mark.browser
def test_phone_layout_fits_the_screen(scripted_stack: Stack, scripted_llm: str,
                                      panel_factory: Any) -> None:  # noqa: F811
    from tests.wsutil import app_token

    # Signed in (the app's token): an anonymous visitor's projects are not asked for.
    token = app_token(scripted_stack, "phone-user")
    p = panel_factory(scripted_stack, viewport=PHONE, phone=True,
                      init_script=f"localStorage.setItem('become_token', '{token}')")
    page = p.page
    long_name = "A very long project name about the regional flood plan " * 6
    page.route("**/api/v1/assistant/projects", lambda route: route.fulfill(
        status=200, content_type="application/json",
        body=json.dumps({"projects": [{"id": "p-1", "name": long_name[:120]}]})))
    p.js("() => window.__assistantPanel.panel.loadProjects()")
    page.wait_for_function("() => document.querySelectorAll('#ba-project option').length === 2")
    no_sideways_scroll(page, PHONE[0])
    title = page.locator("#demo-title").bounding_box()
    assert title and title["x"] >= 0 and title["x"] + title["width"] <= PHONE[0]
    # A tap lands on what is under the finger.
    for selector in ("#ba-ask", "#ba-project", "#ba-question", "#demo-signin"):
        page.locator(selector).scroll_into_view_if_needed()
        hit = page.locator(selector).evaluate("""(n) => { const r = n.getBoundingClientRect();
            const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            return at === n || n.contains(at); }""")
        assert hit, selector
    set_script(scripted_llm, ["The search uses BM25 [1]."])
    page.locator("#ba-question").tap()
    page.keyboard.type("How does the search work?")
    page.locator("#ba-ask").tap()
    p.wait_done()
    no_sideways_scroll(page, PHONE[0])
    screenshot(page, "chat-phone-light.png")
    assert not p.errors


@pytest.mark.browser
def test_phone_follows_the_answer_and_offers_jump_to_latest(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack, viewport=PHONE, phone=True)
    page = p.page
    set_script(scripted_llm, [f"Sentence number {i} of a long answer. " for i in range(90)]
               + ["The end [1]."], delay_s=0.06)
    p.ask("How does the search work?")
    page.wait_for_function("() => window.__assistantPanel.current.streamed.length > 1200",
                           timeout=30_000)
    page.wait_for_timeout(300)
    # The newest words are on screen, just above the docked form.
    visible = p.js(f"""() => {{ const a = document.querySelector('{LAST_TURN} .ba-answer');
        const r = a.getBoundingClientRect();
        const dock = document.querySelector('.ba-dock').getBoundingClientRect();
        return r.bottom > 0 && r.bottom <= dock.top + 30 && dock.bottom <= innerHeight + 1; }}""")
    assert visible, "the answer being written is in view"
    screenshot(page, "chat-phone-streaming.png")
    # Scrolling up stops the following and offers a way back.
    page.mouse.wheel(0, -600)
    page.wait_for_timeout(400)
    top = p.js("() => scrollY")
    jump = page.get_by_role("button", name="Jump to latest ↓")
    jump.wait_for(state="visible")
    page.wait_for_timeout(500)
    assert abs(p.js("() => scrollY") - top) < 5, "the page no longer jumps while reading"
    jump.tap()
    page.wait_for_timeout(300)
    assert p.js("() => scrollY") > top
    assert not jump.is_visible()
    p.wait_done()
    assert not p.errors


# ---- 5. which project a turn was about ------------------------------------------------------


@pytest.mark.browser
def test_turn_names_its_project_and_no_projects_is_explained(
        project_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(project_stack)
    page = p.page
    sign_in(page, "alice@example.com")
    page.wait_for_function("() => Array.from(document.querySelectorAll('#ba-project option'))"
                           ".some((o) => o.textContent === 'Office move budget')")
    page.select_option("#ba-project", label="Office move budget")
    set_script(scripted_llm, ["The best compromise is in your project data [1]."])
    p.ask("What is the result of my project?")
    p.wait_done(60_000)
    assert page.locator(f"{LAST_TURN} .ba-turn-project").inner_text() == \
        "About the project Office move budget"
    screenshot(page, "chat-project-turn.png")
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, "carol@example.com")
    note = page.locator("#ba-project-note")
    page.wait_for_function("() => document.getElementById('ba-project-note').textContent"
                           ".startsWith('You have no projects yet')")
    assert note.inner_text() == "You have no projects yet; questions go to the documentation."
    assert note.is_visible()
    assert page.locator(".ba-project-error").count() == 0
    assert not p.errors


# ---- 6 and 7. sources and the step timeline ------------------------------------------------


SOURCES = [
    {"n": 1, "title": "BeCoMe", "section": "BeCoMe > ## Running `make run` > **Options**",
     "excerpt": "and then the panel opens.\n\nThe second paragraph.", "score": 0.0328,
     "source": "docs/user/getting-started.md", "local": False,
     "url": "https://github.com/caitlon/BeCoMe/blob/main/docs/user/getting-started.md#options"},
    {"n": 2, "title": "Method", "section": "Method > The mean", "excerpt": "The mean is [...].",
     "score": 0.0164, "source": "docs/method-description.md", "local": False, "url": None},
]
EVENTS = [  # as the worker sends them: each step when it ends, a point event inside generate
    {"type": "event", "step": "language", "start_ms": 0.4, "ms": 0.6, "language": "en"},
    {"type": "event", "step": "retrieve", "start_ms": 1.2, "ms": 61.0, "passages": 2},
    {"type": "event", "step": "prompt", "start_ms": 62.5, "ms": 1.0},
    {"type": "event", "step": "first_token", "start_ms": 7305.0, "ms": 0.0},
    {"type": "token", "text": "Start it with make run [1]."},
    {"type": "event", "step": "generate", "start_ms": 102.0, "ms": 7900.0, "model": "smollm2"},
    {"type": "event", "step": "checks", "start_ms": 8003.0, "ms": 2.0},
]


@pytest.mark.browser
def test_sources_read_as_text_and_open_the_original(scripted_stack: Stack,
                                                    panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack)
    page = p.page
    play_socket(page, [{"type": "accepted"}, *EVENTS, {"type": "done", **scripted_done(
        SOURCES, "Start it with make run [1].", timing={"total_ms": 8010.0}, language="en")}])
    p.ask("How do I start it?")
    p.wait_done()
    sources = page.locator(f"{LAST_TURN} .ba-sources")
    text = sources.inner_text()
    assert "score" not in text and "0.0328" not in text and "0.0164" not in text
    first = page.locator("#ba-src-1-1")
    assert first.locator(".ba-source-section").inner_text() == "Running make run > Options"
    first.locator("summary").click()
    excerpt = first.locator(".ba-excerpt-text")
    assert excerpt.first.inner_text() == "… and then the panel opens."
    link = first.get_by_role("link", name=re.compile("Open the original"))
    assert link.get_attribute("href") == SOURCES[0]["url"]
    assert link.get_attribute("rel") == "noopener noreferrer"
    # Without a URL the file name stays text; nothing else in the panel is a link.
    page.locator("#ba-src-1-2 summary").click()
    assert page.locator("#ba-src-1-2 a").count() == 0
    assert "docs/method-description.md" in page.locator("#ba-src-1-2").inner_text()
    screenshot(page, "chat-sources.png")
    assert not p.errors


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "cs"])
def test_step_timeline_is_in_order_in_plain_words(lang: str, scripted_stack: Stack,
                                                  panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack, query=f"?lang={lang}")
    page = p.page
    play_socket(page, [{"type": "accepted"}, *EVENTS, {"type": "done", **scripted_done(
        SOURCES, "Start it with make run [1].", timing={"total_ms": 8010.0}, language="en")}])
    label, button = ("Váš dotaz", "Zeptat se") if lang == "cs" else ("Your question", "Ask")
    p.ask("How do I start it?", label=label, button=button)
    p.wait_done()
    page.locator(f"{LAST_TURN} .ba-steps summary").click()
    lines = page.locator(f"{LAST_TURN} .ba-step-text").all_inner_texts()
    if lang == "en":
        assert lines == ["Recognised the language (en): 1 ms",
                         "Searched the documentation (2 passages): 61 ms",
                         "Prepared the question for the model: 1 ms",
                         "The model wrote the answer (smollm2): 7.9 s",
                         "First word after 7.3 s",
                         "Checked citations and numbers: 2 ms"]
        assert "first token" not in " ".join(lines) and "model call" not in " ".join(lines)
    else:
        assert "Model napsal odpověď (smollm2): 7,9 s" in lines
        assert "První slovo za 7,3 s" in lines
    # Each bar spans the whole line (so its fill is not squeezed narrower than its label).
    widths = page.locator(f"{LAST_TURN} .ba-step").evaluate_all(
        "ns => ns.filter(n => n.querySelector('.ba-step-bar')).map(n => "
        "[n.querySelector('.ba-step-bar').offsetWidth, n.querySelector('.ba-step-text')"
        ".offsetWidth])")
    assert widths and all(bar >= text for bar, text in widths), widths
    screenshot(page, f"chat-steps-{lang}.png")
    assert not p.errors


# ---- 8. language ---------------------------------------------------------------------------


@pytest.mark.browser
def test_czech_question_answered_in_english_gets_a_quiet_note(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    set_script(scripted_llm, ["The search combines two methods, BM25 and embeddings [1]."])
    p = panel_factory(scripted_stack, query="?lang=cs")
    page = p.page
    p.ask("Jak funguje vyhledávání v dokumentaci?", label="Váš dotaz", button="Zeptat se")
    p.wait_done()
    done = p.last_done()
    assert done["language"] == "cs" and done["answer_language"] == "en"
    assert done["language_differs"] is True
    note = page.locator(f"{LAST_TURN} .ba-lang-note")
    assert note.inner_text() == "Místní model odpověděl v jazyce: angličtina."
    assert page.locator(f"{LAST_TURN} .ba-note-error, {LAST_TURN} .ba-warning").count() == 0
    screenshot(page, "chat-language-note-cs.png")
    page.select_option("#ba-lang", "en")
    assert note.inner_text() == "The local model answered in English."
    # The choice outlives a reload; a Czech answer to a Czech question has no note.
    page.goto(scripted_stack.base_url + "/")
    page.wait_for_selector("#ba-question")
    assert page.inner_text("#ba-ask") == "Ask"
    page.select_option("#ba-lang", "cs")
    set_script(scripted_llm, ["Vyhledávání kombinuje dva způsoby, BM25 a embeddingy [1]."])
    p.ask("Jak funguje vyhledávání v dokumentaci?", label="Váš dotaz", button="Zeptat se")
    p.wait_done()
    assert p.last_done()["language_differs"] is False
    assert not page.locator(f"{LAST_TURN} .ba-lang-note").is_visible()
    page.reload()
    page.wait_for_selector("#ba-question")
    assert page.inner_text("#ba-ask") == "Zeptat se"
    assert not p.errors


# ---- 9 and the conveniences ----------------------------------------------------------------


@pytest.mark.browser
def test_copy_regenerate_new_chat_and_export(scripted_stack: Stack, scripted_llm: str,
                                             panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack)
    p.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = p.page
    set_script(scripted_llm, ["The search uses **BM25** [1]."])
    p.ask("How does the search work?")
    p.wait_done()
    page.get_by_role("button", name="Copy answer").click()
    page.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == "The search uses BM25 [1]."
    set_script(scripted_llm, ["A second answer [1]."])
    page.get_by_role("button", name="Regenerate").click()
    p.wait_done()
    assert page.locator(".ba-turn").count() == 1, "regenerate replaces the answer"
    assert p.answer_text() == "A second answer [1]."
    asks = [f for f in p.sent if f["type"] == "ask"]
    assert asks[-1]["message"] == "How does the search work?" and asks[-1]["history"] == []
    with page.expect_download() as download:
        page.get_by_role("button", name="Export").click()
    exported = open(download.value.path(), encoding="utf-8").read()
    assert "How does the search work?" in exported and "A second answer [1]." in exported
    page.get_by_role("button", name="New chat").click()
    assert page.locator(".ba-turn").count() == 0
    assert page.locator(".ba-empty").is_visible()
    assert not p.errors


# ---- 10. sign-in state, stop, Enter while streaming -------------------------------------------


@pytest.mark.browser
def test_signed_in_shows_only_sign_out_and_enter_while_streaming_says_why(
        project_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(project_stack)
    page = p.page
    sign_in(page, "alice@example.com")
    assert page.get_by_role("button", name="Sign out").is_visible()
    assert not page.get_by_role("button", name="Sign in").is_visible()
    assert not page.get_by_label("E-mail").is_visible()
    set_script(scripted_llm, [f"Part{i} " for i in range(40)], delay_s=0.08)
    p.ask("How does the search work?")
    page.wait_for_function("() => window.__assistantPanel.current.streamed.length > 0",
                           timeout=30_000)
    page.get_by_label("Your question").fill("And another thing?")
    page.get_by_label("Your question").press("Enter")
    busy = page.locator("#ba-busy")
    assert busy.is_visible()
    assert busy.inner_text() == "An answer is still being written. Wait for it, or press Stop."
    assert page.get_by_label("Your question").input_value() == "And another thing?"
    screenshot(page, "chat-busy.png")
    page.get_by_role("button", name="Stop").click()
    p.wait_done()
    assert page.get_by_text("The answer was stopped.").count() == 1
    assert not busy.is_visible()
    page.get_by_role("button", name="Sign out").click()
    assert page.get_by_role("button", name="Sign in").is_visible()
    assert page.get_by_label("E-mail").input_value() == ""
    assert not page.get_by_role("button", name="Sign out").is_visible()
    assert not p.errors


# ---- dark mode, favicon, accessibility -------------------------------------------------------


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "cs"])
def test_dark_mode_follows_the_browser_and_passes_axe(
        lang: str, scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    from tests.test_panel_browser import ANSWERS

    p = panel_factory(scripted_stack, query=f"?lang={lang}", bypass_csp=True, dark=True)
    page = p.page
    background = page.locator("#assistant").evaluate("n => getComputedStyle(n).backgroundColor")
    assert background == "rgb(24, 28, 32)", "dark when the browser is dark"
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert icon and page.request.get(scripted_stack.base_url + icon).ok
    assert axe_violations(page) == [], "before an answer"
    set_script(scripted_llm, ANSWERS[lang])
    label, button = ("Váš dotaz", "Zeptat se") if lang == "cs" else ("Your question", "Ask")
    p.ask("Jak funguje vyhledávání v dokumentaci?" if lang == "cs"
          else "How does the search work?", label=label, button=button)
    p.wait_done()
    page.locator(f"{LAST_TURN} .ba-answer a.ba-cite").first.click()
    page.locator(f"{LAST_TURN} .ba-steps summary").click()
    assert axe_violations(page) == [], "after an answer"
    screenshot(page, f"chat-dark-{lang}.png")
    assert not p.errors


@pytest.mark.browser
def test_phone_dark_screenshot_and_axe(scripted_stack: Stack, scripted_llm: str,
                                       panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack, viewport=PHONE, phone=True, dark=True, bypass_csp=True)
    set_script(scripted_llm, ["The search uses BM25 [1] and embeddings [2]."])
    p.ask("How does the search work?")
    p.wait_done()
    no_sideways_scroll(p.page, PHONE[0])
    assert axe_violations(p.page) == []
    screenshot(p.page, "chat-phone-dark.png")
    assert not p.errors


# ---- the project chart -----------------------------------------------------------------------


def app_result(demo_app: str, project: str) -> dict[str, Any]:
    """The stored result as the BeCoMe app gives it to alice (the chart must show these)."""
    import urllib.parse
    import urllib.request

    form = urllib.parse.urlencode({"username": "alice@example.com",
                                   "password": "demo-password"}).encode()
    with urllib.request.urlopen(f"{demo_app}/api/v1/auth/login", form, timeout=10) as r:
        token = json.loads(r.read())["access_token"]
    req = urllib.request.Request(f"{demo_app}/api/v1/projects/{project}/result",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return dict(json.loads(r.read()))


@pytest.mark.browser
@pytest.mark.parametrize("phone", [False, True])
def test_project_answer_shows_a_chart_from_the_project_data(
        phone: bool, project_stack: Stack, demo_app: str, scripted_llm: str,
        panel_factory: Any) -> None:  # noqa: F811
    from demo_app.seed import FLOOD_PLAN

    p = panel_factory(project_stack, bypass_csp=True, viewport=PHONE if phone else (1280, 900),
                      phone=phone)
    page = p.page
    sign_in(page, "alice@example.com")
    page.wait_for_function("() => Array.from(document.querySelectorAll('#ba-project option'))"
                           ".some((o) => o.textContent === 'Regional flood plan')")
    page.select_option("#ba-project", label="Regional flood plan")
    # The model's text carries a made-up figure: the chart never takes numbers from it.
    set_script(scripted_llm, ["The best compromise is 999.5 percent [1]."])
    p.ask("What is the result of my project?")
    p.wait_done(60_000)
    chart = page.locator(f"{LAST_TURN} .ba-chart")
    chart.wait_for(state="visible", timeout=15_000)
    assert chart.locator("polygon.ba-chart-expert").count() == 50, "50 drawn, 10 more named"
    assert chart.locator("polygon.ba-chart-bc").count() == 1
    assert "10 more opinions are not drawn." in chart.locator("figcaption").inner_text()
    stored = app_result(demo_app, FLOOD_PLAN)
    bc = stored["best_compromise"]
    svg = chart.locator("svg")
    label = svg.get_attribute("aria-label") or ""
    assert f"Best compromise peak {round(bc['peak'], 2):g} %" in label, label
    assert "999" not in chart.inner_text() + label
    # The table behind the chart: the same figures as the app's stored result.
    chart.locator("summary").click()
    rows = {r[0]: r[1:] for r in chart.locator("tbody tr").evaluate_all(
        "rs => rs.map(r => Array.from(r.children, c => c.textContent))")}
    assert rows["Best compromise"] == [f"{round(bc[k], 2):g}" for k in ("lower", "peak", "upper")]
    assert rows["Maximum error"] == [f"{round(stored['max_error'], 2):g}"]
    assert len(rows) == 4 + 50
    # Keyboard: the figure takes focus and says what it shows.
    svg.focus()
    assert page.evaluate("document.activeElement.tagName.toLowerCase()") == "svg"
    if not phone:
        assert axe_violations(page) == []
    else:
        no_sideways_scroll(page, PHONE[0])
    chart.scroll_into_view_if_needed()
    screenshot(page, f"chat-project-chart-{'phone' if phone else 'desktop'}.png")
    assert not p.errors


@pytest.mark.browser
def test_thumbs_down_with_a_comment_is_stored_with_the_trace_without_message_text(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:  # noqa: F811
    import psycopg

    from tests.conftest import wait_for

    set_script(scripted_llm, ["The search uses BM25 [1]."])
    p = panel_factory(scripted_stack)
    page = p.page
    p.ask("How does the search work?")
    p.wait_done()
    turn = p.last_done()["turn"]
    page.get_by_role("button", name="Bad answer").click()
    comment = page.get_by_label("What was good or wrong? (optional)")
    comment.wait_for()
    assert page.get_by_role("button", name="Bad answer").get_attribute("aria-pressed") == "true"
    comment.fill("It forgot the embeddings.")
    page.get_by_role("button", name="Send comment").click()
    page.get_by_text("Thank you for the comment.").wait_for()
    screenshot(page, "chat-feedback.png")

    def stored() -> tuple[Any, ...] | None:
        with psycopg.connect(scripted_stack.settings.assistant_dsn, autocommit=True) as conn:
            return conn.execute("SELECT feedback, feedback_comment, message, answer FROM traces "
                                "WHERE turn = %s", (turn,)).fetchone()

    assert wait_for(lambda: (stored() or (None, None))[1] == "It forgot the embeddings.", 20)
    assert stored() == (-1, "It forgot the embeddings.", None, None), "no message text"
    # Someone else's turn: refused.
    from tests.wsutil import app_token

    other = app_token(scripted_stack, "someone-else")
    status = page.evaluate("""async ([turn, token]) => (await fetch('/api/v1/assistant/feedback',
        {method: 'POST', headers: {'Authorization': 'Bearer ' + token,
         'Content-Type': 'application/json'},
         body: JSON.stringify({turn: turn, rating: 'up'})})).status""", [turn, other])
    assert status == 404
    assert not p.errors
