"""The browser panel at / in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright)
against the running stack: streaming, sources, safe rendering, checks, resume, stop, Czech,
keyboard use and an axe-core accessibility scan."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant_cli.client import http_json
from tests.conftest import REPO, Stack, set_script

ARTIFACTS = REPO / "test-artifacts"
AXE = REPO / "tests" / "js" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
# The only elements an answer may contain (docs/spec/behaviour.md B-31); spans only as
# screen-reader text in <s>.
ANSWER_TAGS = {"P", "STRONG", "EM", "UL", "OL", "LI", "CODE", "BR", "A", "S", "SPAN"}
LAST_TURN = ".ba-turn:last-child"
DONE = "() => !!(window.__assistantPanel && window.__assistantPanel.current " \
       "&& window.__assistantPanel.current.finished)"
WALK_ANSWER = """(root) => Array.from(root.querySelectorAll('*'), (n) => ({
  tag: n.tagName, cls: n.className, parent: n.parentElement.tagName,
  href: n.getAttribute('href'),
  attrs: Array.from(n.attributes, (a) => a.name)}))"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or "/usr/bin/chromium"
    assert Path(executable).exists(), "Debian chromium is required (make test installs it)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Panel:
    """One page with the panel, its page errors and the WebSocket frames it sent."""

    def __init__(self, browser: Any, stack: Stack, query: str = "", locale: str = "en-US",
                 bypass_csp: bool = False, init_script: str | None = None,
                 viewport: tuple[int, int] = (900, 900), dark: bool = False,
                 phone: bool = False) -> None:
        self.context = browser.new_context(
            locale=locale, bypass_csp=bypass_csp, color_scheme="dark" if dark else "light",
            viewport={"width": viewport[0], "height": viewport[1]},
            is_mobile=phone, has_touch=phone)
        if init_script:
            self.context.add_init_script(init_script)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.sent: list[dict[str, Any]] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("websocket", self._watch_socket)
        self.page.goto(stack.base_url + "/" + query)
        self.page.wait_for_selector("#ba-question")

    def _watch_socket(self, ws: Any) -> None:
        ws.on("framesent", lambda payload: self.sent.append(json.loads(payload)))

    def ask(self, question: str, label: str = "Your question", button: str = "Ask") -> None:
        self.page.get_by_label(label).fill(question)
        self.page.get_by_role("button", name=button, exact=True).click()

    def wait_done(self, timeout_ms: int = 30_000) -> None:
        self.page.wait_for_function(DONE, timeout=timeout_ms)

    def js(self, expression: str, arg: Any = None) -> Any:
        return self.page.evaluate(expression, arg)

    def answer_text(self) -> str:
        return str(self.js("() => window.__assistantPanel.answerText()"))

    def last_done(self) -> dict[str, Any]:
        return self.js("() => window.__assistantPanel.lastDone")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def panel_factory(browser: Any) -> Iterator[Any]:
    opened: list[Panel] = []

    def make(stack: Stack, **kwargs: Any) -> Panel:
        p = Panel(browser, stack, **kwargs)
        opened.append(p)
        return p

    yield make
    for p in opened:
        p.close()


def last_stream_request(scripted_llm: str) -> dict[str, Any]:
    status, requests = http_json("GET", f"{scripted_llm}/_requests")
    assert status == 200
    streamed = [r for r in requests if r["body"].get("stream")]
    assert streamed, "the worker made no streamed model call"
    return streamed[-1]["body"]


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_panel_code_never_parses_strings_as_html() -> None:
    """The panel builds the DOM from text nodes and elements only (docs/spec/behaviour.md B-31)."""
    unsafe = re.compile(r"\.(innerHTML|outerHTML)\s*[+]?=|insertAdjacentHTML\s*\(|document\.write"
                        r"|DOMParser|createContextualFragment|\beval\s*\(|new Function\s*\(")
    for path in sorted((REPO / "web" / "static").glob("*.js")):
        code = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                         if not line.lstrip().startswith("//"))
        assert not unsafe.search(code), f"{path.name}: {unsafe.search(code)}"


def test_panel_transport_and_turn_state_pass_their_node_tests() -> None:
    """The transport and the turn state, each on its own under node (tests/js/*.test.js)."""
    node = shutil.which("node")
    assert node, "node is required (make tests/js/node_modules installs npm with it)"
    files = sorted(str(path) for path in (REPO / "tests" / "js").glob("*.test.js"))
    assert len(files) >= 2, files
    run = subprocess.run([node, "--test", *files], cwd=REPO, capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    passed = re.search(r"^# pass (\d+)$", run.stdout, re.MULTILINE)
    assert passed and int(passed.group(1)) >= 20, run.stdout[-2000:]


# ---- the real model ------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.realmodel
def test_question_streams_and_ends_with_sources(real_stack: Stack, panel_factory: Any) -> None:
    p = panel_factory(real_stack)
    page = p.page
    p.ask("How does the search work?")
    # Tokens appear while the answer is still streaming, before the done frame.
    page.wait_for_function(f"""() => {{
        const a = document.querySelector('{LAST_TURN} .ba-answer');
        return a && a.dataset.state === 'streaming' && a.textContent.trim().length > 0; }}""",
                           timeout=120_000)
    p.wait_done(180_000)
    done = p.last_done()
    assert done["type"] == "done" and len(done["answer"]) > 20
    assert page.inner_text("#ba-status") == "Done."
    sources = page.locator(f"{LAST_TURN} .ba-source")
    sections = {(s.get("source") or s["title"], s["section"]) for s in done["sources"]}
    assert sources.count() == len(sections) >= 1
    assert "How the BeCoMe assistant works" in sources.first.inner_text()
    # The streamed tokens are the answer; the text on screen is the answer's text.
    assert p.js("() => window.__assistantPanel.current.streamed") == done["answer"]
    cites = page.locator(f"{LAST_TURN} .ba-answer a.ba-cite")
    # Without the prompt's example sentence the 135M model often cites nothing; what
    # it does cite is a link (the scripted tests hold the rendering of every marker).
    if re.search(r"\[\d+\]", done["answer"]):
        assert cites.count() >= 1, f"a marker was not linked: {done['answer']!r}"
    if cites.count():
        first = cites.first
        n = int(first.get_attribute("data-n") or 0)
        excerpt = page.locator(f"#ba-src-1-{n} .ba-excerpt")
        assert not excerpt.is_visible(), "the excerpt opens on click"
        first.click()
        excerpt.wait_for(state="visible")
        source = next(s for s in done["sources"] if s["n"] == n)
        shown = " ".join(excerpt.locator(".ba-excerpt-text").all_inner_texts())
        # Rendered: no emphasis marks, a cut start marked with "…".
        plain = re.sub(r"(\*\*|__|`)", "", source["excerpt"])
        assert " ".join(shown.replace("… ", "", 1).split())[:50] == \
            " ".join(plain.split())[:50]
        assert page.evaluate("document.activeElement.tagName") == "SUMMARY"
    assert not p.errors
    screenshot(page, "panel-real-en.png")


# ---- rendering and checks (scripted model) ------------------------------------------------


@pytest.mark.browser
def test_model_markup_is_never_run_and_links_are_only_citations(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:
    # Without the page's CSP, so an unsafe renderer would really run the payload.
    set_script(scripted_llm, [
        "Intro <scr", "ipt>window.__pwned=1</script> **bold** and ",
        '<img src=x onerror="window.__pwned=2"> then a ',
        "[x](http://evil.example) link and ![alt](http://evil.example/i.png) ",
        "image, `<b>code</b>` and [1].\n\n- one\n- *two*\n\n# Heading\n\n| a | b |\n|---|---|"
        "\n| 1 | 2 |"])
    p = panel_factory(scripted_stack, bypass_csp=True)
    p.ask("How does the search work?")
    p.wait_done()
    page = p.page
    assert page.evaluate("typeof window.__pwned") == "undefined"
    answer = page.locator(f"{LAST_TURN} .ba-answer")
    nodes = answer.evaluate(WALK_ANSWER)
    assert nodes, "the answer rendered elements"
    for node in nodes:
        assert node["tag"] in ANSWER_TAGS, node
        assert not [a for a in node["attrs"] if a.startswith("on") or a in ("src", "style")]
        if node["tag"] == "A":
            assert node["cls"] == "ba-cite" and re.fullmatch(r"#ba-src-1-\d+", node["href"])
        if node["tag"] == "SPAN":
            assert node["cls"] == "ba-vh" and node["parent"] == "S", node
    assert {"P", "STRONG", "EM", "UL", "LI", "CODE", "A"} <= {n["tag"] for n in nodes}
    # No link anywhere in the panel except the in-page citations; no image, no new script.
    hrefs = page.eval_on_selector_all("#assistant [href]", "ns => ns.map(n => n.getAttribute('href'))")
    assert hrefs and all(h.startswith("#ba-src-") for h in hrefs), hrefs
    assert page.locator("img").count() == 0
    assert page.locator("body script").count() == 0
    text = answer.inner_text()
    assert "<script>window.__pwned=1</script>" in text, "raw HTML is shown as text"
    assert '<img src=x onerror="window.__pwned=2">' in text
    assert "evil.example" not in text and " x link" in text and "alt image" in text
    assert "Heading" in text and "#" not in text and "a · b" in text
    assert not p.errors


@pytest.mark.browser
def test_invalid_citation_is_struck_and_unconfirmed_number_warned(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:
    set_script(scripted_llm, ["The maximum error is ", "987.65 [7]."])
    p = panel_factory(scripted_stack)
    p.ask("How does the search work?")
    p.wait_done()
    page = p.page
    done = p.last_done()
    assert done["checks"]["numbers"]["valid"] is False
    assert done["checks"]["citations"]["invalid"] == [7]
    struck = page.locator(f"{LAST_TURN} .ba-answer s.ba-cite-invalid")
    assert struck.count() == 1
    assert "[7]" in struck.inner_text()
    assert struck.evaluate("n => getComputedStyle(n).textDecorationLine") == "line-through"
    assert "invalid citation" in struck.text_content()
    assert page.locator(f"{LAST_TURN} .ba-answer a").count() == 0
    warning = page.locator(f"{LAST_TURN} .ba-warning")
    assert warning.is_visible()
    text = warning.inner_text()
    assert "987.65" in text and "[7]" in text and "Please verify" in text
    assert warning.evaluate("n => getComputedStyle(n).borderLeftColor") == "rgb(224, 123, 0)"
    assert not p.errors


@pytest.mark.browser
def test_every_citation_form_is_linked_or_struck(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:
    # The panel reads the same forms as the server's check, one link per number.
    set_script(scripted_llm, ["It is [Source 1] and [Zdroj 2], also 【1】 and [1-2], ",
                              "[doc1], [Источник 1], but not [Source 7]; a triple [0, 1]."])
    p = panel_factory(scripted_stack)
    p.ask("How does the search work?")
    p.wait_done()
    done = p.last_done()
    assert done["checks"]["citations"]["invalid"] == [7]
    answer = p.page.locator(f"{LAST_TURN} .ba-answer")
    links = answer.locator("a.ba-cite")
    assert [links.nth(i).get_attribute("data-n") for i in range(links.count())] == \
        ["1", "2", "1", "1", "2", "1", "1"]
    struck = answer.locator("s.ba-cite-invalid")
    assert struck.count() == 1 and "[7]" in struck.inner_text()
    assert "[0, 1]" in answer.inner_text(), "an interval stays text"
    assert not p.errors


@pytest.mark.browser
def test_sources_off_shows_no_markers_and_no_source_list(
        strict_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:
    set_script(scripted_llm, ["The search uses BM25 [1] and ", "embeddings [", "2]."])
    p = panel_factory(strict_stack)
    p.ask("How does the search work?")
    p.wait_done()
    done = p.last_done()
    assert done["sources"] == [] and "[" not in done["answer"]
    page = p.page
    assert p.answer_text() == done["answer"]
    assert " ".join(done["answer"].replace(" .", ".").split()) == \
        "The search uses BM25 and embeddings."
    assert page.locator(f"{LAST_TURN} .ba-cite, {LAST_TURN} .ba-cite-invalid").count() == 0
    assert page.locator(f"{LAST_TURN} .ba-sources, {LAST_TURN} .ba-warning").count() == 0
    assert not p.errors


@pytest.mark.browser
def test_dropped_socket_resumes_and_ends_with_the_done_answer(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:
    chunks = [f"Word{i} " for i in range(40)] + ["with a source [1]."]
    set_script(scripted_llm, chunks, delay_s=0.06)
    p = panel_factory(scripted_stack)
    p.ask("How does the search work?")
    p.page.wait_for_function(
        "() => window.__assistantPanel.current && "
        "window.__assistantPanel.current.streamed.split(' ').length > 6", timeout=30_000)
    p.js("() => window.__assistantPanel.dropSocket()")
    p.wait_done()
    current = p.js("() => ({resumes: window.__assistantPanel.current.resumes, "
                   "seqs: window.__assistantPanel.current.seqLog, "
                   "streamed: window.__assistantPanel.current.streamed})")
    done = p.last_done()
    assert current["resumes"] >= 1
    assert current["seqs"] == list(range(len(current["seqs"]))), "no gap, no duplicate"
    assert current["seqs"][-1] == done["seq"]
    assert done["answer"] == "".join(chunks)
    assert current["streamed"] == done["answer"]
    assert p.answer_text() == done["answer"]
    resumes = [f for f in p.sent if f["type"] == "resume"]
    assert resumes and resumes[0]["turn"] == done["turn"] and resumes[0]["after"] > 0
    assert p.page.inner_text("#ba-status") == "Done."
    assert not p.errors


@pytest.mark.browser
def test_without_websockets_the_answer_streams_over_sse_and_resumes(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:
    """A browser where no WebSocket gets through: the same turn over SSE, resumed after a drop."""
    chunks = [f"Word{i} " for i in range(40)] + ["with a source [1]."]
    set_script(scripted_llm, chunks, delay_s=0.06)
    p = panel_factory(scripted_stack, init_script="delete window.WebSocket;")
    requests: list[tuple[str, str]] = []
    p.page.on("request", lambda r: requests.append((r.method, r.url)))
    p.ask("How does the search work?")
    p.page.wait_for_function(
        "() => window.__assistantPanel.current && "
        "window.__assistantPanel.current.streamed.split(' ').length > 6", timeout=30_000)
    p.js("() => window.__assistantPanel.dropSocket()")
    p.wait_done()
    current = p.js("() => ({resumes: window.__assistantPanel.current.resumes, "
                   "seqs: window.__assistantPanel.current.seqLog, "
                   "streamed: window.__assistantPanel.current.streamed})")
    done = p.last_done()
    assert current["resumes"] >= 1
    assert current["seqs"] == list(range(len(current["seqs"]))), "no gap, no duplicate"
    assert current["seqs"][-1] == done["seq"]
    assert done["answer"] == "".join(chunks)
    assert current["streamed"] == done["answer"]
    assert p.answer_text() == done["answer"]
    assert not p.sent, "no WebSocket frame"
    assert ("POST", f"{scripted_stack.base_url}/api/v1/assistant/chat/stream") in requests
    resumed = [url for method, url in requests
               if method == "GET" and f"/api/v1/assistant/turns/{done['turn']}/events" in url]
    assert resumed and int(resumed[0].rsplit("after=", 1)[1]) > 0, requests
    # One entry per section: a section the server lists twice is shown once.
    sections = {(s.get("source") or s["title"], s["section"]) for s in done["sources"]}
    assert p.page.locator(f"{LAST_TURN} .ba-source").count() == len(sections) > 0
    assert p.page.inner_text("#ba-status") == "Done."
    assert not p.errors


@pytest.mark.browser
def test_stop_ends_the_answer_calmly(scripted_stack: Stack, scripted_llm: str,
                                     panel_factory: Any) -> None:
    set_script(scripted_llm, [f"Part{i} " for i in range(60)], delay_s=0.1)
    p = panel_factory(scripted_stack)
    p.ask("How does the search work?")
    p.page.wait_for_function("() => window.__assistantPanel.current.streamed.length > 0",
                             timeout=30_000)
    p.page.get_by_role("button", name="Stop").click()
    p.wait_done()
    assert any(f["type"] == "cancel" for f in p.sent)
    note = p.page.locator(f"{LAST_TURN} .ba-note")
    assert note.inner_text() == "The answer was stopped."
    assert "ba-note-calm" in (note.get_attribute("class") or "")
    assert p.page.locator(".ba-note-error").count() == 0
    # Said once, in the turn's note, not again in the status line.
    assert p.page.inner_text("#ba-status") == ""
    # Screen readers hear it from the live region (filled 50 ms after the end): wait for that,
    # so the count below does not depend on how fast it runs, then count what is on screen.
    p.page.wait_for_function("() => document.getElementById('ba-announce').textContent"
                             " === 'The answer was stopped.'")
    on_screen = p.page.get_by_text("The answer was stopped.").and_(
        p.page.locator(":not(#ba-announce)"))
    assert on_screen.count() == 1
    assert not p.page.get_by_role("button", name="Stop").is_visible()
    assert not p.errors


@pytest.mark.browser
def test_conversation_is_sent_as_history_and_kept_across_reload(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:
    set_script(scripted_llm, ["The search uses BM25 [1]."])
    p = panel_factory(scripted_stack)
    p.ask("How does the search work?")
    p.wait_done()
    set_script(scripted_llm, ["Because it is fast [1]."])
    p.page.get_by_label("Your question").fill("And why is that?")
    p.page.get_by_label("Your question").press("Enter")  # Enter sends
    p.page.wait_for_function("() => document.querySelectorAll('.ba-turn').length === 2")
    p.wait_done()
    asks = [f for f in p.sent if f["type"] == "ask"]
    assert asks[0]["history"] == [] and asks[0]["project_id"] is None
    assert asks[1]["history"] == [
        {"role": "user", "content": "How does the search work?"},
        {"role": "assistant", "content": "The search uses BM25."}]
    body = last_stream_request(scripted_llm)
    contents = [m["content"] for m in body["messages"]]
    assert "How does the search work?" in contents and "The search uses BM25." in contents
    # At most the last 20 messages and ~6,000 characters, oldest dropped first.
    trimmed = p.js("""() => { const panel = window.__assistantPanel.panel;
        const saved = panel.history;
        panel.history = Array.from({length: 30}, (_, i) => ({
          role: i % 2 ? 'assistant' : 'user', content: String(i).padEnd(500, '.')}));
        const out = panel.historyForAsk(); panel.history = saved; return out; }""")
    assert len(trimmed) == 12 and sum(len(m["content"]) for m in trimmed) <= 6000
    assert trimmed[0]["content"].startswith("18") and trimmed[-1]["content"].startswith("29")
    # The tab keeps the conversation across a reload; new chat clears it.
    p.page.reload()
    p.page.wait_for_selector("#ba-question")
    assert p.page.locator(".ba-turn").count() == 2
    assert p.js("() => window.__assistantPanel.panel.history.length") == 4
    assert "Because it is fast" in p.page.locator(LAST_TURN).inner_text()
    p.page.get_by_role("button", name="New chat").click()
    assert p.page.locator(".ba-turn").count() == 0
    p.page.reload()
    p.page.wait_for_selector("#ba-question")
    assert p.page.locator(".ba-turn").count() == 0
    assert p.js("() => window.__assistantPanel.panel.history.length") == 0
    assert not p.errors


@pytest.mark.browser
def test_czech_interface_and_czech_language_line(scripted_stack: Stack, scripted_llm: str,
                                                 panel_factory: Any) -> None:
    set_script(scripted_llm, ["Vyhledávání kombinuje **dva způsoby** [1]."])
    p = panel_factory(scripted_stack, query="?lang=cs")
    page = p.page
    assert page.get_attribute("html", "lang") == "cs"
    assert page.inner_text("#ba-ask") == "Zeptat se"
    assert page.inner_text("label[for=ba-question]") == "Váš dotaz"
    p.ask("Jak funguje vyhledávání v dokumentaci?", label="Váš dotaz", button="Zeptat se")
    p.wait_done()
    assert p.last_done()["language"] == "cs"
    system = last_stream_request(scripted_llm)["messages"][0]
    assert system["role"] == "system" and "Answer in Czech." in system["content"]
    assert page.inner_text("#ba-status") == "Hotovo."
    assert page.locator(f"{LAST_TURN} .ba-sources h3").inner_text() == "Zdroje"
    # The switch turns the interface to English; nothing of the conversation is lost.
    page.select_option("#ba-lang", "en")
    assert page.get_attribute("html", "lang") == "en"
    assert page.inner_text("#ba-ask") == "Ask"
    assert page.locator(f"{LAST_TURN} .ba-sources h3").inner_text() == "Sources"
    assert "dva způsoby" in p.answer_text()
    assert not p.errors


@pytest.mark.browser
def test_a_repeated_answer_and_a_prompt_echo_are_warned_in_english_and_czech(
        scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:
    """The tiny model copied its first answer into every later one, and echoed the
    prompt's markup; the server's checks flag both and the panel warns in orange."""
    first = ("The assistant searches the documentation by meaning and by words, and the "
             "answer cites the passages it used [1].")
    set_script(scripted_llm, [first])
    p = panel_factory(scripted_stack)
    p.ask("How does the search work?")
    p.wait_done()
    assert p.page.locator(f"{LAST_TURN} .ba-warning").count() == 0
    set_script(scripted_llm, [first])
    p.ask("What is the capital of France?")
    p.page.wait_for_function("() => document.querySelectorAll('.ba-turn').length === 2")
    p.wait_done()
    assert p.last_done()["checks"]["repeat"]["valid"] is False
    warning = p.page.locator(f"{LAST_TURN} .ba-warning")
    assert "repeats an earlier answer of this conversation" in warning.inner_text()
    assert warning.evaluate("n => getComputedStyle(n).borderLeftColor") == "rgb(224, 123, 0)"

    set_script(scripted_llm, ["<passage>\nVyhledávání\n</passage> Cite only numbers of ",
                              "passages given below."])
    cs = panel_factory(scripted_stack, query="?lang=cs")
    cs.ask("Jak funguje vyhledávání v dokumentaci?", label="Váš dotaz", button="Zeptat se")
    cs.wait_done()
    assert cs.last_done()["checks"]["prompt_echo"]["valid"] is False
    text = cs.page.locator(f"{LAST_TURN} .ba-warning").inner_text()
    assert "Ověřte prosím" in text and "opakuje pokyny asistenta" in text
    assert not p.errors and not cs.errors


def _answer_with_sources(page: Any, turn: str, answer: str,
                         sources: Callable[[], list[dict[str, Any]]]) -> None:
    """The panel's socket answers every ask with `answer` and the sources `sources()` gives
    then (each a source frame entry's own fields over a plain page's)."""
    def on_socket(ws: Any) -> None:
        def on_message(message: str | bytes) -> None:
            if json.loads(message)["type"] != "ask":
                return
            listed = [{"n": n, "title": f"Page {n}", "section": f"Page {n} > Part",
                       "excerpt": "Text.", "score": 0.5, "source": f"docs/{n}.md",
                       "local": False, "url": None, "weak": False, "strategy": "hybrid",
                       **extra}
                      for n, extra in enumerate(sources(), start=1)]
            for seq, f in enumerate(({"type": "accepted"}, {"type": "token", "text": answer},
                                     {"type": "done", "answer": answer, "sources": listed,
                                      "checks": {"citations": {"valid": True, "cited": [],
                                                               "invalid": []},
                                                 "numbers": {"valid": True, "unconfirmed": [],
                                                             "checked": 0}},
                                      "usage": {}, "timing": {"total_ms": 5.0}, "index": "v1",
                                      "language": "en"})):
                ws.send(json.dumps({"turn": turn, "seq": seq, **f}))

        ws.on_message(on_message)

    page.route_web_socket(re.compile(r".*/api/v1/assistant/ws.*"), on_socket)


@pytest.mark.browser
def test_weak_matches_are_labelled_and_warned_on_a_scripted_socket(
        scripted_stack: Stack, panel_factory: Any) -> None:
    """A done frame whose every source is a weak match: each wears the badge, and the
    warning says the documentation has no close match (one close match: no warning)."""
    p = panel_factory(scripted_stack)
    page = p.page
    weak = [True, True]
    _answer_with_sources(page, "e" * 32, "Not in the documentation.",
                         lambda: [{"weak": w} for w in weak])
    p.ask("What is the capital of France?")
    p.wait_done()
    badges = page.locator(f"{LAST_TURN} .ba-badge-weak")
    assert badges.count() == 2 and badges.first.inner_text() == "weak match"
    assert "no close match" in page.locator(f"{LAST_TURN} .ba-warning").inner_text()
    weak[0] = False
    p.ask("And BeCoMe?")
    p.wait_done()
    assert page.locator(f"{LAST_TURN} .ba-badge-weak").count() == 1
    assert page.locator(f"{LAST_TURN} .ba-warning").count() == 0
    assert not p.errors


@pytest.mark.browser
def test_the_reranks_verdict_is_shown_beside_each_source(
        scripted_stack: Stack, panel_factory: Any) -> None:
    """The optional rerank (docs/spec/behaviour.md B-15) scored each source: the panel says which
    answers the question and which is related, in the panel's language; a source without a rerank
    score wears no such badge."""
    p = panel_factory(scripted_stack)
    page = p.page
    _answer_with_sources(page, "f" * 32, "Hybrid.",
                         lambda: [{"rerank": 2}, {"rerank": 1}, {}])
    p.ask("How does the search work?")
    p.wait_done()
    rows = page.locator(f"{LAST_TURN} .ba-source summary")
    assert rows.count() == 3
    assert "answers the question" in rows.nth(0).inner_text()
    assert "related" in rows.nth(1).inner_text()
    assert rows.nth(2).locator(".ba-badge").count() == 0
    # The search's score, inside the details, says what kind of score it is (docs/spec/behaviour.md
    # B-15).
    rows.nth(0).click()
    score = page.locator(f"{LAST_TURN} .ba-source .ba-score").first
    assert score.inner_text().startswith("Search score 0.50 (rank fusion")
    assert not p.errors


@pytest.mark.browser
def test_language_defaults_to_the_browsers(scripted_stack: Stack, panel_factory: Any) -> None:
    cs = panel_factory(scripted_stack, locale="cs-CZ")
    assert cs.page.inner_text("#ba-ask") == "Zeptat se"
    assert cs.page.inner_text("#demo-title") == "Asistent BeCoMe: ukázka"
    en = panel_factory(scripted_stack, locale="en-GB")
    assert en.page.inner_text("#ba-ask") == "Ask"


@pytest.mark.browser
def test_demo_sign_in_project_picker_and_app_token(scripted_stack: Stack, scripted_llm: str,
                                                   panel_factory: Any) -> None:
    from tests.wsutil import app_token

    token = app_token(scripted_stack, "appuser")
    p = panel_factory(scripted_stack,
                      init_script=f"localStorage.setItem('become_token', '{token}')")
    page = p.page
    auth: list[str] = []
    page.on("request", lambda r: auth.append(r.headers.get("authorization", ""))
            if r.url.endswith("/api/v1/assistant/tickets") else None)
    page.route("**/api/v1/assistant/projects", lambda route: route.fulfill(
        status=200, content_type="application/json",
        body=json.dumps({"projects": [{"id": "p-1", "name": "Flood plan <b>2026</b>"}]})))
    # No app to sign in to on this stack: dev/login is 404 and the demo falls back.
    page.get_by_label("E-mail").fill("demo@example.com")
    page.get_by_label("Password").fill("secret")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_function("() => document.getElementById('demo-who').textContent"
                           ".includes('not available')")
    page.wait_for_function("() => document.querySelectorAll('#ba-project option').length === 2")
    assert page.locator("#ba-project option").nth(1).inner_text() == "Flood plan <b>2026</b>"
    page.select_option("#ba-project", "p-1")
    set_script(scripted_llm, ["Scripted answer [1]."])
    p.ask("What is the result of my project?")
    p.wait_done()
    ask = next(f for f in p.sent if f["type"] == "ask")
    assert ask["project_id"] == "p-1"
    # This stack has no app API: the refusal is shown as the server's plain sentence.
    note = page.locator(f"{LAST_TURN} .ba-note-refusal")
    assert note.inner_text() == "Project data is not available on this server."
    # The demo sign-in replaced the app's stored token (an anonymous demo token).
    assert auth and auth[-1].startswith("Bearer ") and auth[-1] != f"Bearer {token}"
    page.get_by_role("button", name="Sign out").click()
    page.select_option("#ba-project", "")
    set_script(scripted_llm, ["Scripted answer [1]."])
    p.ask("How does the search work?")
    p.wait_done()
    assert auth[-1] == f"Bearer {token}", "the BeCoMe app's token is used when present"
    assert p.last_done()["type"] == "done"
    assert not p.errors


@pytest.mark.browser
def test_refusal_shows_when_to_try_again(scripted_stack: Stack, panel_factory: Any) -> None:
    p = panel_factory(scripted_stack)
    p.page.route("**/api/v1/assistant/tickets", lambda route: route.fulfill(
        status=429, content_type="application/json", headers={"Retry-After": "42"},
        body=json.dumps({"error": {"code": 429, "message": "Too many questions.",
                                   "retry_after": 42}})))
    p.ask("How does the search work?")
    p.wait_done()
    note = p.page.locator(f"{LAST_TURN} .ba-note-refusal")
    assert note.inner_text() == "Too many questions. You can try again in 42 seconds."
    assert not p.errors


@pytest.mark.browser
def test_keyboard_order_labels_and_visible_focus(scripted_stack: Stack, scripted_llm: str,
                                                 panel_factory: Any) -> None:
    p = panel_factory(scripted_stack)
    page = p.page
    page.focus("#demo-email")
    order = []
    for _ in range(9):
        order.append(page.evaluate("document.activeElement.id"))
        page.keyboard.press("Tab")
    assert order == ["demo-email", "demo-password", "demo-signin", "ba-lang", "ba-new",
                     "ba-export", "ba-project", "ba-question", "ba-ask"]
    page.focus("#ba-question")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid", "focus is visible"
    page.keyboard.type("First line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    assert page.input_value("#ba-question") == "First line\nsecond line"
    assert page.locator(".ba-turn").count() == 0
    set_script(scripted_llm, ["Answer [1]."], delay_s=0.3)
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelectorAll('.ba-turn').length === 1")
    assert page.inner_text(f"{LAST_TURN} .ba-user-text") == "First line\nsecond line"
    p.wait_done()
    live = page.locator("#ba-announce")
    assert live.get_attribute("aria-live") == "polite"
    page.wait_for_function("() => document.getElementById('ba-announce').textContent"
                           ".startsWith('The answer is ready.')")
    # The answer itself is not a live region (tokens are not announced one by one).
    assert page.locator(".ba-answer[aria-live]").count() == 0
    assert not p.errors


@pytest.mark.browser
def test_restart_pings_duplicates_and_refusals_on_a_scripted_socket(
        scripted_stack: Stack, panel_factory: Any) -> None:
    """The socket is played by the test (tickets still come from the stack)."""
    p = panel_factory(scripted_stack)
    page = p.page
    sockets: list[Any] = []
    turn = "f" * 32

    def frame(seq: int | None, kind: str, **fields: Any) -> str:
        return json.dumps({"type": kind, "turn": turn, "seq": seq, **fields})

    def on_socket(ws: Any) -> None:
        sockets.append(ws)

        def on_message(message: str | bytes) -> None:
            if json.loads(message)["type"] != "ask":
                return
            if len(sockets) == 1:
                for f in (frame(0, "accepted"), frame(1, "event", step="retrieve", start_ms=1.0,
                                                      ms=2.0, passages=1),
                          json.dumps({"type": "ping"}), frame(2, "token", text="Old partial "),
                          frame(2, "token", text="Old partial "), frame(3, "token", text="text")):
                    ws.send(f)
            else:
                ws.send(frame(None, "error", code=429, message="Please wait a moment.",
                              retry_after=30))

        ws.on_message(on_message)

    page.route_web_socket(re.compile(r".*/api/v1/assistant/ws.*"), on_socket)
    answer = page.locator(f"{LAST_TURN} .ba-answer")
    p.ask("How does the search work?")
    page.wait_for_function("() => window.__assistantPanel.current.seq === 3")
    # The text is drawn on the next animation frame: wait for it, then compare.
    page.wait_for_function("() => window.__assistantPanel.answerText().length >= 16")
    assert p.answer_text() == "Old partial text", "a repeated seq is dropped, pings ignored"
    sockets[0].send(frame(4, "restart", attempt=2))
    page.wait_for_function("() => window.__assistantPanel.current.seq === 4")
    page.wait_for_function(f"() => document.querySelector('{LAST_TURN} .ba-answer')"
                           ".textContent === ''")
    assert page.inner_text("#ba-status") == "The answer is starting over."
    sockets[0].send(frame(5, "token", text="New answer [1]."))
    sockets[0].send(frame(6, "done", answer="New answer [1].", sources=[
        {"n": 1, "title": "Local work", "section": "Local work > Results", "excerpt": "Text.",
         "score": 0.5, "source": "works/local.pdf", "local": True}],
        checks={"citations": {"valid": True, "cited": [1], "invalid": []},
                "numbers": {"valid": True, "unconfirmed": [], "checked": 0}},
        usage={}, timing={"total_ms": 9.0}, index="v1", language="en"))
    p.wait_done()
    assert answer.inner_text() == "New answer [1]."
    assert page.locator(f"{LAST_TURN} .ba-warning").count() == 0
    source = page.locator(f"{LAST_TURN} .ba-source")
    assert "local copy" in source.inner_text() and "works/local.pdf" not in source.inner_text()
    assert "Results" in source.inner_text()
    assert "restart (attempt 2)" in page.locator(f"{LAST_TURN} .ba-steps").text_content()
    p.ask("And again?")
    p.wait_done()
    note = page.locator(f"{LAST_TURN} .ba-note-refusal")
    assert note.inner_text() == "Please wait a moment. You can try again in 30 seconds."
    assert not p.errors


# ---- accessibility and screenshots ----------------------------------------------------------


def axe_violations(page: Any) -> list[dict[str, Any]]:
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                       nodes: v.nodes.map(n => n.target.join(' '))})); }""")
    return [v for v in result if v["impact"] in ("serious", "critical")]


ANSWERS = {
    "en": ["The search works in **two ways** at once [1]:\n\n",
           "- a *meaning* search with embeddings in `pgvector` [1]\n",
           "- a word search with BM25 [2]\n\n",
           "The two rankings are merged by reciprocal rank fusion, and the 3 best passages ",
           "go to the model [3]. Its maximum error is 987.65 [7]."],
    "cs": ["Vyhledávání pracuje **dvěma způsoby** najednou [1]:\n\n",
           "- podle *významu*, s embeddingy v `pgvector` [1]\n",
           "- podle slov, metodou BM25 [2]\n\n",
           "Obě pořadí se sloučí metodou reciprocal rank fusion a 3 nejlepší pasáže ",
           "dostane model [3]. Maximální chyba je 987,65 [7]."],
}


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "cs"])
def test_axe_finds_no_serious_violations_and_screenshot(
        lang: str, scripted_stack: Stack, scripted_llm: str, panel_factory: Any) -> None:
    assert AXE.exists(), "run `npm ci --prefix tests/js` (make test does)"
    # axe is injected as an inline script, which the page's CSP (rightly) blocks.
    p = panel_factory(scripted_stack, query=f"?lang={lang}", bypass_csp=True)
    page = p.page
    assert axe_violations(page) == [], "before an answer"
    set_script(scripted_llm, ANSWERS[lang])
    label, button = ("Váš dotaz", "Zeptat se") if lang == "cs" else ("Your question", "Ask")
    question = ("Jak funguje vyhledávání v dokumentaci?" if lang == "cs"
                else "How does the search work?")
    p.ask(question, label=label, button=button)
    p.wait_done()
    page.locator(f"{LAST_TURN} .ba-answer a.ba-cite").first.click()
    page.locator(f"{LAST_TURN} .ba-steps summary").click()
    assert page.locator(f"{LAST_TURN} .ba-warning").is_visible()
    assert page.locator(f"{LAST_TURN} .ba-step").count() >= 5
    assert axe_violations(page) == [], "after an answer"
    page.locator("#ba-question").focus()
    screenshot(page, f"panel-{lang}.png")
    assert not p.errors
