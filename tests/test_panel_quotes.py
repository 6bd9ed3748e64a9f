"""The quotes answer form in the panel, in headless Chromium against the running
stack, the socket played by the test with the worker's frames: quotations with their sources
and original links, "I don't know" with buttons that ask again, the project's figures above the
chart; desktop, phone, dark mode, English and Czech. Screenshots go to test-artifacts/."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from shared.language import quote_marks
from tests.conftest import Stack
from tests.quotes_frames import (
    DONT_KNOW,
    LEAD,
    NEAREST,
    OFF_TOPIC,
    QUESTIONS,
    QUOTES,
    SOURCES,
    project_lines,
    quotes_done,
    token_frames,
)
from tests.test_panel_browser import (  # noqa: F401  (fixtures)
    ARTIFACTS,
    LAST_TURN,
    axe_violations,
    browser,
    panel_factory,
)
from tests.test_panel_chat import PHONE, app_result, no_sideways_scroll

DESKTOP = (1280, 800)
UI = {"en": ("Your question", "Ask"), "cs": ("Váš dotaz", "Zeptat se")}
EVENTS = [{"type": "event", "step": "language", "start_ms": 0.3, "ms": 0.5},
          {"type": "event", "step": "retrieve", "start_ms": 1.0, "ms": 30.0, "passages": 3}]


class Socket:
    """Plays the assistant's WebSocket: each ask gets its reply (accepted, events, tokens); the
    done frame follows at once, or when the test calls finish()."""

    def __init__(self, page: Any, replies: list[dict[str, Any]], hold: bool = False) -> None:
        self.replies = replies
        self.hold = hold
        self.asked: list[dict[str, Any]] = []
        self.ws: Any = None
        self.seq = 0
        page.route_web_socket(re.compile(r".*/api/v1/assistant/ws.*"), self._open)

    def _send(self, frame: dict[str, Any]) -> None:
        self.ws.send(json.dumps({"turn": "d" * 32, "seq": self.seq, **frame}))
        self.seq += 1

    def _open(self, ws: Any) -> None:
        def on_message(message: str | bytes) -> None:
            ask = json.loads(message)
            if ask["type"] != "ask":
                return
            self.ws = ws
            self.seq = 0
            self.asked.append(ask)
            done = self.replies[min(len(self.asked), len(self.replies)) - 1]
            for f in [{"type": "accepted"}, *EVENTS, *token_frames(done["answer"])]:
                self._send(f)
            if not self.hold:
                self.finish()

        ws.on_message(on_message)

    def finish(self) -> None:
        """Send the done frame of the last ask."""
        self._send({"type": "done", **self.replies[min(len(self.asked), len(self.replies)) - 1]})


def app_login(demo_app: str, email: str) -> str:
    """An access token from the demo app's own form login."""
    import urllib.parse
    import urllib.request

    form = urllib.parse.urlencode({"username": email, "password": "demo-password"}).encode()
    with urllib.request.urlopen(f"{demo_app}/api/v1/auth/login", form, timeout=10) as r:
        return str(json.loads(r.read())["access_token"])


def shot(page: Any, name: str, top: str = f"{LAST_TURN} .ba-msg-assistant") -> None:
    """What the person sees with the answer scrolled to the top of the screen (the form stays
    docked at the bottom)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(top).evaluate("n => n.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(ARTIFACTS / name))


def ask(p: Any, lang: str, question: str) -> None:
    label, button = UI[lang]
    p.ask(question, label=label, button=button)


def focus_ring(page: Any, selector: str) -> str:
    """The outline a focused control shows, as the browser computes it."""
    return page.locator(selector).evaluate("n => getComputedStyle(n).outlineStyle + ' ' + "
                                           "getComputedStyle(n).outlineWidth")


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "cs"])
@pytest.mark.parametrize("phone", [False, True])
def test_quotes_stream_as_text_then_show_as_quotations_with_their_sources(
        lang: str, phone: bool, scripted_stack: Stack, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack, query=f"?lang={lang}", bypass_csp=True,
                      viewport=PHONE if phone else DESKTOP, phone=phone)
    page = p.page
    done = quotes_done(lang)
    sock = Socket(page, [done], hold=True)
    ask(p, lang, QUESTIONS[lang])
    answer = page.locator(f"{LAST_TURN} .ba-answer")
    # While it streams: the plain text, quote marks and [n] as streamed, no quotation yet.
    page.wait_for_function("(a) => window.__assistantPanel.current && "
                           "window.__assistantPanel.current.streamed === a", arg=done["answer"])
    page.wait_for_function(f"""() => document.querySelector('{LAST_TURN} .ba-answer')
        .textContent.includes('Higher agreement among experts')""")
    assert answer.get_attribute("data-state") == "streaming"
    assert page.locator(f"{LAST_TURN} .ba-quotation").count() == 0
    opening, closing = quote_marks(lang)
    assert opening + QUOTES[lang][0]["text"][:20] in answer.inner_text()
    sock.finish()
    p.wait_done()
    # Done: the lead-in, then one blockquote per quote with its source under it.
    assert answer.locator(".ba-lead-in").inner_text() == LEAD[lang]
    quotes = answer.locator("figure.ba-quotation")
    assert quotes.count() == 2
    first, second = quotes.nth(0), quotes.nth(1)
    assert first.locator("blockquote").inner_text() == QUOTES[lang][0]["text"]
    assert first.locator("figcaption").inner_text().startswith(
        "[1] Reading the result › The four figures")
    link = first.locator("figcaption a.ba-open")
    assert link.get_attribute("href") == SOURCES[0]["url"]
    assert link.get_attribute("target") == "_blank"
    assert link.get_attribute("rel") == "noopener noreferrer"
    assert first.locator("blockquote").get_attribute("cite") == SOURCES[0]["url"]
    assert second.locator("figcaption").inner_text().startswith(
        "[2] Method description › Step 4: calculate the maximum error (Δmax)")
    assert second.locator("figcaption a.ba-open").count() == 0, "source 2 has no URL"
    # The passage's Markdown is shown as such; a bracket inside a quote is never a citation.
    assert second.locator("blockquote strong").inner_text() == "Lower Δmax"
    assert second.locator("blockquote a").count() == 0
    if lang == "en":
        assert second.locator("blockquote code").count() == 2
        assert "[1, 2]" in second.locator("blockquote").inner_text()
    else:  # an English-only page quoted for a Czech question says so, quietly
        assert second.locator(".ba-quote-note").inner_text() == QUOTES["cs"][1]["note"]
        assert second.get_attribute("lang") == "en"
        assert first.get_attribute("lang") == "cs"
    assert page.locator(f"{LAST_TURN} .ba-quote-note").count() == (1 if lang == "cs" else 0)
    # No second list of the same quotes, no question back; the sources stay below.
    assert page.locator(f"{LAST_TURN} .ba-quotes, {LAST_TURN} .ba-clarify").count() == 0
    assert page.locator(f"{LAST_TURN} .ba-source").count() == 3
    assert page.locator(f"{LAST_TURN} .ba-answer-figures").is_hidden()
    # A quote's [n] opens its source.
    first.locator("a.ba-cite").click()
    page.locator("#ba-src-1-1 .ba-excerpt").wait_for(state="visible")
    # What a reader copies and a screen reader hears: the quotes with their sources, in the
    # answer's own quotation marks (Czech „…“, as the worker streams them).
    text = p.answer_text()
    assert text.startswith(LEAD[lang] + "\n\n" + opening + QUOTES[lang][0]["text"] + closing
                           + "\n[1] Reading")
    assert SOURCES[0]["url"] in text
    if phone:
        no_sideways_scroll(page, PHONE[0])
    assert axe_violations(page) == []
    shot(page, f"quotes-{lang}-{'phone' if phone else 'desktop'}.png")
    # The conversation comes back after a reload, shown as quotations again.
    page.reload()
    page.wait_for_selector(f"{LAST_TURN} figure.ba-quotation")
    assert page.locator(f"{LAST_TURN} figure.ba-quotation").count() == 2
    assert not p.errors


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "cs"])
@pytest.mark.parametrize("phone", [False, True])
def test_dont_know_shows_its_question_and_nearest_sections_that_ask_again(
        lang: str, phone: bool, scripted_stack: Stack, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack, query=f"?lang={lang}", bypass_csp=True,
                      viewport=PHONE if phone else DESKTOP, phone=phone)
    page = p.page
    sock = Socket(page, [quotes_done(lang, "dont_know"), quotes_done(lang)])
    ask(p, lang, DONT_KNOW[lang]["question"])
    p.wait_done()
    turn = page.locator(LAST_TURN)
    assert turn.locator(".ba-dont-know-said").inner_text() == DONT_KNOW[lang]["said"]
    assert turn.locator(".ba-clarify").inner_text() == DONT_KNOW[lang]["clarify"]
    assert turn.locator(".ba-quotation").count() == 0
    group = turn.get_by_role("group", name=re.compile(
        "nearest sections" if lang == "en" else "Nejbližší oddíly"))
    buttons = group.get_by_role("button")
    assert buttons.all_inner_texts() == [
        "Reading the result › The four figures", "Worked example › The result",
        "Method description › Step 4: calculate the maximum error (Δmax)"]
    assert [b.evaluate("n => n.tagName + ':' + n.type") for b in buttons.all()] == \
        ["BUTTON:button"] * 3
    if phone:
        no_sideways_scroll(page, PHONE[0])
    assert axe_violations(page) == []
    shot(page, f"dont-know-{lang}-{'phone' if phone else 'desktop'}.png")
    # Keyboard: the second button takes focus with a visible ring, Enter asks its question.
    buttons.nth(1).focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Worked example › The result"
    assert focus_ring(page, f"{LAST_TURN} .ba-ask-again >> nth=1").startswith("solid")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelectorAll('.ba-turn').length === 2")
    p.wait_done()
    assert sock.asked[1]["message"] == NEAREST[1]["ask"]
    assert page.locator(f"{LAST_TURN} .ba-user-text").inner_text() == NEAREST[1]["ask"]
    assert page.locator(f"{LAST_TURN} figure.ba-quotation").count() == 2
    # The history sent with it holds the earlier exchange.
    assert [m["role"] for m in sock.asked[1]["history"]] == ["user", "assistant"]
    assert not p.errors


@pytest.mark.browser
def test_quotes_in_dark_mode_pass_axe(scripted_stack: Stack, panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack, bypass_csp=True, viewport=DESKTOP, dark=True)
    page = p.page
    Socket(page, [quotes_done("cs")])
    ask(p, "en", QUESTIONS["cs"])
    p.wait_done()
    quote = page.locator(f"{LAST_TURN} .ba-quote-text").first
    assert quote.evaluate("n => getComputedStyle(n).backgroundColor") == "rgb(38, 44, 51)"
    assert axe_violations(page) == []
    shot(page, "quotes-dark-desktop.png")
    assert not p.errors


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "cs"])
@pytest.mark.parametrize("phone", [False, True])
def test_project_figures_sit_above_the_chart_and_the_quotes_below(
        lang: str, phone: bool, project_stack: Stack, demo_app: str,
        panel_factory: Any) -> None:  # noqa: F811
    from demo_app.seed import FLOOD_PLAN

    lines = project_lines(app_result(demo_app, FLOOD_PLAN), lang)
    # Signed in as the BeCoMe app signs people in: its token in localStorage.become_token.
    token = app_login(demo_app, "alice@example.com")
    p = panel_factory(project_stack, query=f"?lang={lang}", bypass_csp=True,
                      viewport=PHONE if phone else DESKTOP, phone=phone,
                      init_script=f"localStorage.setItem('become_token', '{token}')")
    page = p.page
    page.wait_for_function("() => Array.from(document.querySelectorAll('#ba-project option'))"
                           ".some((o) => o.textContent === 'Regional flood plan')")
    page.select_option("#ba-project", label="Regional flood plan")
    Socket(page, [quotes_done(lang, project=lines)])
    ask(p, lang, "Jaký je výsledek mého projektu?" if lang == "cs"
        else "What is the result of my project?")
    p.wait_done()
    turn = page.locator(LAST_TURN)
    chart = turn.locator(".ba-chart")
    chart.wait_for(state="visible", timeout=15_000)
    figures = turn.locator(".ba-project-figures")
    assert figures.locator(".ba-figure-line").all_inner_texts() == lines
    heading = "From your project's data" if lang == "en" else "Z dat vašeho projektu"
    assert figures.get_by_role("heading").inner_text() == heading
    # Reading order: figures, chart, lead-in and quotes, then the sources.
    order = page.evaluate(f"""() => ['.ba-project-figures', '.ba-chart', '.ba-lead-in',
        '.ba-quotation', '.ba-sources'].map((s) =>
        document.querySelector('{LAST_TURN} ' + s).getBoundingClientRect().top)""")
    assert order == sorted(order), order
    # The figures are not repeated under the chart.
    assert lines[0] not in turn.locator(".ba-answer").inner_text()
    assert p.answer_text().startswith("\n".join(lines) + "\n\n" + LEAD[lang])
    if phone:
        no_sideways_scroll(page, PHONE[0])
    assert axe_violations(page) == []
    shot(page, f"project-{lang}-{'phone' if phone else 'desktop'}.png")
    shot(page, f"project-{lang}-{'phone' if phone else 'desktop'}-quotes.png",
         f"{LAST_TURN} .ba-lead-in")
    assert not p.errors


@pytest.mark.browser
def test_a_nearest_section_that_is_its_pages_whole_title_is_named_once(
        scripted_stack: Stack, panel_factory: Any) -> None:  # noqa: F811
    """A page's opening section has the page's title as its only heading: the button says
    "What BeCoMe does", not "What BeCoMe does › What BeCoMe does"."""
    p = panel_factory(scripted_stack, bypass_csp=True)
    page = p.page
    done = quotes_done("en", "dont_know")
    done["structured"] = {**done["structured"], "nearest": [
        {"title": "What BeCoMe does", "section": "# What BeCoMe does",
         "source": "docs/user/what-it-does.md",
         "ask": "What does the documentation say about “What BeCoMe does”?"},
        dict(NEAREST[0])]}
    Socket(page, [done])
    p.ask("Is there a Chrome extension?")
    p.wait_done()
    buttons = page.locator(f"{LAST_TURN} .ba-nearest button")
    assert buttons.all_inner_texts() == ["What BeCoMe does",
                                         "Reading the result › The four figures"]
    assert not p.errors


@pytest.mark.browser
def test_a_quote_from_a_code_block_is_shown_as_code(scripted_stack: Stack,
                                                     panel_factory: Any) -> None:  # noqa: F811
    """A file tree's entry is code: `__init__.py` stays itself, never bold "init"."""
    p = panel_factory(scripted_stack, bypass_csp=True)
    page = p.page
    done = quotes_done("en")
    entry = "__init__.py # Package marker with version"
    done["structured"] = {**done["structured"], "quotes": [
        {**QUOTES["en"][0], "text": entry, "code": True, "path": "src/__init__.py"},
        dict(QUOTES["en"][1]),
        {**QUOTES["en"][0], "text": "# Build for production\nnpm run build", "code": True}]}
    Socket(page, [done])
    p.ask("Where is the version kept?")
    p.wait_done()
    quotes = page.locator(f"{LAST_TURN} figure.ba-quotation blockquote")
    assert quotes.nth(0).locator("code").inner_text() == entry
    # A comment with the command under it: two lines, as the block has them.
    assert quotes.nth(2).locator("code").inner_text() == "# Build for production\nnpm run build"
    assert quotes.nth(0).locator("strong, em").count() == 0
    # A tree's entry says where it lives; the copied text too.
    assert quotes.nth(0).locator(".ba-quote-path").inner_text() == "src/__init__.py"
    assert "“" + entry + "”\n(src/__init__.py)\n[1] Reading" in p.answer_text()
    # A quote without the flag is the passage's Markdown, as before.
    assert quotes.nth(1).locator("strong").inner_text() == "Lower Δmax"
    assert axe_violations(page) == []
    shot(page, "quotes-code-desktop.png")
    assert not p.errors


@pytest.mark.browser
def test_an_interface_texts_group_follows_its_section(scripted_stack: Stack,
                                                      panel_factory: Any) -> None:  # noqa: F811
    """"A quality metric ..." under "Results" is the maximum error's description: the quote
    names its group after its section, in the caption, the link's spoken name and the copied
    text; a quote without one is named as before."""
    p = panel_factory(scripted_stack, bypass_csp=True)
    page = p.page
    done = quotes_done("en")
    done["structured"] = {**done["structured"], "quotes": [
        {**QUOTES["en"][0], "group": "Maximum Error of Estimate"}, dict(QUOTES["en"][1])]}
    Socket(page, [done])
    p.ask("What is the maximum error?")
    p.wait_done()
    where = page.locator(f"{LAST_TURN} figure.ba-quotation .ba-quote-where")
    assert where.nth(0).inner_text() == \
        "Reading the result › The four figures › Maximum Error of Estimate"
    assert "Maximum Error" not in where.nth(1).inner_text()
    assert "[1] Reading the result › The four figures › Maximum Error of Estimate" \
        in p.answer_text()
    assert not p.errors


@pytest.mark.browser
def test_a_hedged_answer_says_so_above_its_quotes(scripted_stack: Stack,
                                                  panel_factory: Any) -> None:  # noqa: F811
    """Quotes that barely answer: their lead-in (the worker's words) is marked as a caution,
    in dark mode too; the usual lead-in is not."""
    p = panel_factory(scripted_stack, bypass_csp=True, dark=True)
    page = p.page
    done = quotes_done("en")
    hedge = ("The documentation may not answer this exactly; the closest it says, in its own "
             "words:")
    done["structured"] = {**done["structured"], "lead_in": hedge, "hedged": True}
    Socket(page, [done, quotes_done("en")])
    p.ask("How long does the reset e-mail take?")
    p.wait_done()
    lead = page.locator(f"{LAST_TURN} .ba-lead-in")
    assert lead.inner_text() == hedge
    assert "ba-hedged" in (lead.get_attribute("class") or "")
    assert hedge in p.answer_text()
    assert axe_violations(page) == []
    shot(page, "quotes-hedged-dark.png")
    p.ask("What does the maximum error mean?")
    p.wait_done()
    assert "ba-hedged" not in (page.locator(f"{LAST_TURN} .ba-lead-in")
                               .get_attribute("class") or "")
    assert not p.errors


@pytest.mark.browser
def test_structured_prose_figures_only_and_sources_off_answers(scripted_stack: Stack,
                                                       panel_factory: Any) -> None:  # noqa: F811
    p = panel_factory(scripted_stack, bypass_csp=True)
    page = p.page
    structured = {**quotes_done("en", "dont_know"), "answer_form": "structured",
                  "answer": "I don't know. Did you mean reading the result?"}
    structured["structured"] = {**structured["structured"], "nearest": [],
                                "quotes": [{"n": 1, "text": "Δmax is read against your scale",
                                            "found": True}]}
    prose = {**quotes_done("en"), "answer_form": "prose", "structured": None,
             "answer": "The maximum error is read **against the scale** [1]."}
    figures_only = quotes_done("en", project=["The best compromise is 14.17 %."])
    figures_only["structured"]["quotes"] = []
    figures_only["answer"] = "The best compromise is 14.17 %."
    sources_off = {**quotes_done("cs"), "sources": [],
                   "answer": quotes_done("cs")["answer"].replace(" [1]", "").replace(" [2]", "")}
    Socket(page, [structured, prose, figures_only, sources_off])
    p.ask("What does the maximum error tell me?")
    p.wait_done()
    turn = page.locator(LAST_TURN)
    # The structured form: its text as written, its quotes in a list, the question back.
    assert turn.locator(".ba-answer").inner_text() == structured["answer"]
    assert turn.locator(".ba-quotes li q").inner_text() == "Δmax is read against your scale"
    assert turn.locator(".ba-clarify").inner_text() == \
        "A question back: " + DONT_KNOW["en"]["clarify"]
    assert turn.locator(".ba-quotation, .ba-nearest, .ba-lead-in").count() == 0
    p.ask("And in prose?")
    p.wait_done()
    turn = page.locator(LAST_TURN)
    assert turn.locator(".ba-answer strong").inner_text() == "against the scale"
    assert turn.locator(".ba-answer a.ba-cite").inner_text() == "[1]"
    assert turn.locator(".ba-quotation, .ba-quotes, .ba-clarify").count() == 0
    assert p.answer_text() == "The maximum error is read against the scale [1]."
    # A quotes answer with the project's figures and no quote: no lead-in over nothing.
    p.ask("And my project?")
    p.wait_done()
    turn = page.locator(LAST_TURN)
    assert turn.locator(".ba-figure-line").inner_text() == "The best compromise is 14.17 %."
    assert turn.locator(".ba-lead-in, .ba-quotation").count() == 0
    assert p.answer_text() == "The best compromise is 14.17 %."
    # Sources off: the quotes stand without naming a source (no [n] struck as invalid).
    p.ask("Co mi říká maximální chyba?")
    p.wait_done()
    turn = page.locator(LAST_TURN)
    assert turn.locator("figure.ba-quotation").count() == 2
    assert turn.locator("figcaption, .ba-cite, .ba-cite-invalid, .ba-sources").count() == 0
    assert turn.locator(".ba-quote-note").inner_text() == QUOTES["cs"][1]["note"]
    assert "[1]" not in p.answer_text()
    assert not p.errors


# ---- the real stack: the worker's own quotes turns ------------------------------------------


def plain(text: str) -> str:
    """A quote as the page shows it: Markdown marks gone, whitespace folded."""
    return " ".join(re.sub(r"\*\*|__|`", "", text).split())


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "cs"])
def test_a_real_quotes_turn_then_i_dont_know_and_a_nearest_section_asked_again(
        lang: str, quotes_stack: Stack, panel_factory: Any) -> None:  # noqa: F811
    from tests.wsutil import app_token

    # A signed-in user (the stack has the default settings: no anonymous demo tokens).
    p = panel_factory(quotes_stack, query=f"?lang={lang}", bypass_csp=True, viewport=DESKTOP,
                      init_script="localStorage.setItem('become_token', "
                                  f"'{app_token(quotes_stack, f'panel-{lang}')}')")
    page = p.page
    ask(p, lang, "How does the search work?")
    p.wait_done(90_000)
    done = p.last_done()
    assert done["answer_form"] == "quotes" and done["structured"]["outcome"] == "answer"
    assert p.js("() => window.__assistantPanel.current.streamed") == done["answer"]
    turn = page.locator(LAST_TURN)
    assert turn.locator(".ba-lead-in").inner_text() == done["structured"]["lead_in"]
    quotes = done["structured"]["quotes"]
    shown = turn.locator("figure.ba-quotation")
    assert shown.count() == len(quotes) >= 1
    for i, q in enumerate(quotes):
        source = next(s for s in done["sources"] if s["n"] == q["n"])
        assert plain(shown.nth(i).locator("blockquote").inner_text()) == plain(q["text"])
        parts = [plain(x.lstrip("#")) for x in source["section"].split(" > ")]
        if parts[0] != source["title"]:
            parts.insert(0, source["title"])
        caption = shown.nth(i).locator("figcaption").inner_text()
        assert caption == f"[{q['n']}] " + " › ".join(parts), (caption, source)
    # No chat model wrote it: the timeline names the quotes step, not the model's.
    turn.locator(".ba-steps summary").click()
    steps = turn.locator(".ba-steps").inner_text()
    name = "Chose the documentation's own words" if lang == "en" else \
        "Výběr vlastních slov dokumentace"
    assert name in steps and "The model wrote" not in steps and "Model napsal" not in steps
    assert axe_violations(page) == []
    shot(page, f"real-quotes-{lang}-desktop.png")
    # Off the documentation: "I don't know", its question, buttons that ask again.
    ask(p, lang, OFF_TOPIC)
    p.wait_done(90_000)
    done = p.last_done()
    block = done["structured"]
    assert block["outcome"] == "dont_know"
    turn = page.locator(LAST_TURN)
    assert turn.locator(".ba-clarify").inner_text() == block["clarifying_question"]
    assert done["answer"].startswith(turn.locator(".ba-dont-know-said").inner_text())
    buttons = turn.locator(".ba-nearest button")
    assert buttons.count() == len(block["nearest"]) >= 1
    assert axe_violations(page) == []
    shot(page, f"real-dont-know-{lang}-desktop.png")
    buttons.first.click()
    page.wait_for_function("() => document.querySelectorAll('.ba-turn').length === 3")
    p.wait_done(90_000)
    assert page.locator(f"{LAST_TURN} .ba-user-text").inner_text() == block["nearest"][0]["ask"]
    assert p.last_done()["answer_form"] == "quotes"
    assert not p.errors


@pytest.mark.browser
@pytest.mark.parametrize(("lang", "phone"), [("en", False), ("cs", True)])
def test_a_real_project_turn_puts_its_figures_above_the_chart(
        lang: str, phone: bool, quotes_stack: Stack, panel_factory: Any) -> None:  # noqa: F811
    from demo_app.seed import DEMO_USERS
    from tests.wsutil import app_token

    token = app_token(quotes_stack, DEMO_USERS["alice@example.com"])
    p = panel_factory(quotes_stack, query=f"?lang={lang}", bypass_csp=True,
                      viewport=PHONE if phone else DESKTOP, phone=phone,
                      init_script=f"localStorage.setItem('become_token', '{token}')")
    page = p.page
    page.wait_for_function("() => Array.from(document.querySelectorAll('#ba-project option'))"
                           ".some((o) => o.textContent === 'Regional flood plan')")
    page.select_option("#ba-project", label="Regional flood plan")
    ask(p, lang, "Jaký je nejlepší kompromis v tomto projektu a jak se experti shodují?"
        if lang == "cs" else
        "What is the best compromise in this project and how much do the experts agree?")
    p.wait_done(90_000)
    done = p.last_done()
    lines = done["structured"]["project"]["lines"]
    turn = page.locator(LAST_TURN)
    turn.locator(".ba-chart").wait_for(state="visible", timeout=15_000)
    assert turn.locator(".ba-figure-line").all_inner_texts() == [plain(x) for x in lines]
    assert done["answer"].startswith(lines[0])
    below = ".ba-lead-in" if done["structured"]["quotes"] else ".ba-chart"
    order = page.evaluate(f"""() => ['.ba-project-figures', '.ba-chart', '{below}'].map((s) =>
        document.querySelector('{LAST_TURN} ' + s).getBoundingClientRect().top)""")
    assert order == sorted(order), order
    if phone:
        no_sideways_scroll(page, PHONE[0])
    assert axe_violations(page) == []
    shot(page, f"real-project-{lang}-{'phone' if phone else 'desktop'}.png")
    assert not p.errors


def test_the_panels_quotation_marks_are_the_workers() -> None:
    """The panel's copy of the marks (a static file cannot import Python) is the table the
    worker streams with."""
    from pathlib import Path

    source = (Path(__file__).resolve().parent.parent / "web" / "static" /
              "panel-quotes.js").read_text(encoding="utf-8")
    table = re.search(r"const MARKS = (\{.*?\});", source)
    assert table is not None
    marks = json.loads(re.sub(r"(\w+):", r'"\1":', table.group(1)))
    assert marks == {lang: list(quote_marks(lang)) for lang in ("en", "cs")}
