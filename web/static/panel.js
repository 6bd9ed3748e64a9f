// The BeCoMe assistant panel (protocol v1): ticket -> WebSocket -> ask -> streamed frames.
// Embeddable in any page: load panel-i18n.js, panel-render.js and this file (and panel.css),
// then either put data-become-assistant on an element or call BecomeAssistant.mount(element,
// options). Everything the server sends is written with text nodes and a fixed set of
// elements; nothing is ever parsed as HTML.
"use strict";

(function () {
  const I18N = window.BecomeAssistantI18n;
  const Render = window.BecomeAssistantRender;
  const LANGS = ["en", "cs"];
  const LANG_NAMES = {en: "English", cs: "Čeština"};
  const HISTORY_MESSAGES = 20;
  const HISTORY_CHARS = 6000;
  const BACKOFF_MS = [500, 1000, 2000, 4000, 4000];  // five tries, then give up
  const CANCELLED = 499;
  const CZECH_LETTERS = /[ěščřžýáíéůúťďňĚŠČŘŽÝÁÍÉŮÚŤĎŇ]/;
  let panelCount = 0;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function fill(template, params) {
    return template.replace(/\{(\w+)\}/g, (m, name) =>
      params && params[name] !== undefined ? String(params[name]) : m);
  }

  function translate(lang, key, params) {
    const table = I18N[lang] || I18N.en;
    const text = table[key] !== undefined ? table[key] : I18N.en[key];
    return fill(text === undefined ? key : text, params);
  }

  function normLang(value) {
    const code = String(value || "").trim().toLowerCase().slice(0, 2);
    return LANGS.includes(code) ? code : null;
  }

  // The interface language: option, ?lang=, the host page's <html lang>, the browser's.
  function pickLang(opts) {
    const fromOption = normLang(opts.lang);
    if (fromOption) return fromOption;
    const fromQuery = normLang(new URLSearchParams(window.location.search).get("lang"));
    if (fromQuery) return fromQuery;
    const html = document.documentElement;
    if (html.dataset.baLang !== "auto") {
      const fromPage = normLang(html.getAttribute("lang"));
      if (fromPage) return fromPage;
    }
    for (const l of navigator.languages || [navigator.language]) {
      const fromBrowser = normLang(l);
      if (fromBrowser) return fromBrowser;
    }
    return "en";
  }

  // "Title > Section > Subsection" without Markdown heading marks, the title not repeated.
  function sectionPath(section, title) {
    const parts = String(section || "").split(" > ")
      .map((part) => part.replace(/^#+\s*/, "").trim()).filter((part) => part);
    if (parts.length && parts[0] === String(title || "").trim()) parts.shift();
    return parts.join(" > ");
  }

  class PanelError extends Error {
    constructor(message, code, retryAfter, retryable) {
      super(message);
      this.code = code;
      this.retryAfter = retryAfter;
      this.retryable = retryable;
    }
  }

  async function errorFrom(resp, fallback) {
    let body = null;
    try { body = await resp.json(); } catch (err) { body = null; }
    const e = body && body.error ? body.error : {};
    return new PanelError(e.message || fallback, e.code || resp.status, e.retry_after,
                          resp.status >= 500);
  }

  // The anonymous demo token (dev and test profiles), fetched once per page.
  let demoToken = null;
  async function anonymousToken(baseUrl) {
    if (demoToken) return demoToken;
    const resp = await fetch(baseUrl + "/api/v1/dev/token", {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({user: "demo"}),
    });
    if (!resp.ok) throw await errorFrom(resp, "Could not sign in.");
    demoToken = (await resp.json()).access_token;
    return demoToken;
  }

  // The BeCoMe app keeps its access token in localStorage under become_token.
  function appStoredToken() {
    try { return window.localStorage.getItem("become_token"); } catch (err) { return null; }
  }

  // ---- one turn ----------------------------------------------------------------------

  class Turn {
    constructor(panel, question, index) {
      this.panel = panel;
      this.question = question;
      this.index = index;
      this.turnId = null;
      this.seq = -1;
      this.text = "";
      this.streamed = "";  // the tokens since the last restart, as they came
      this.events = [];
      this.passages = null;
      this.done = null;
      this.error = null;
      this.finished = false;
      this.ws = null;
      this.tries = 0;
      this.cancelRequested = false;
      this.cancelSent = false;
      this.rafPending = false;
      this.seqLog = [];
      this.resumes = 0;
      this.build();
    }

    t(key, params) { return this.panel.t(key, params); }

    build() {
      const art = el("article", "ba-turn");
      art.dataset.turnIndex = String(this.index);
      const user = el("div", "ba-msg ba-msg-user");
      this.youLabel = el("p", "ba-who");
      const userText = el("p", "ba-user-text", this.question);  // plain text, always
      user.append(this.youLabel, userText);
      const bot = el("div", "ba-msg ba-msg-assistant");
      this.botLabel = el("p", "ba-who");
      this.answerEl = el("div", "ba-answer");
      this.answerEl.dataset.state = "waiting";
      this.answerEl.addEventListener("click", (ev) => this.onCitationClick(ev));
      this.noteEl = el("p", "ba-note");
      this.noteEl.hidden = true;
      this.chromeEl = el("div", "ba-chrome");
      this.stepsEl = el("details", "ba-steps");
      this.stepsSummary = el("summary");
      this.stepsList = el("ol", "ba-step-list");
      this.stepsEl.append(this.stepsSummary, this.stepsList);
      this.stepsEl.hidden = true;
      bot.append(this.botLabel, this.answerEl, this.noteEl, this.chromeEl, this.stepsEl);
      art.append(user, bot);
      this.root = art;
      this.relabel();
    }

    // ---- connection ----

    start(askFrame) {
      this.askFrame = askFrame;
      this.panel.setStatus("status.connecting");
      this.connect(() => this.askFrame);
    }

    async connect(firstFrame) {
      let ticket;
      try {
        ticket = await this.panel.ticket();
      } catch (err) {
        if (this.finished) return;
        if (err instanceof PanelError && !err.retryable) {
          this.finishError({code: err.code, message: err.message, retry_after: err.retryAfter});
        } else {
          this.dropped();
        }
        return;
      }
      if (this.finished) return;
      const ws = new WebSocket(this.panel.wsUrl(ticket));
      this.ws = ws;
      ws.onopen = () => {
        if (ws !== this.ws) return;
        ws.send(JSON.stringify(firstFrame()));
        if (this.cancelRequested && this.turnId) this.sendCancel();
      };
      ws.onmessage = (ev) => {
        if (ws !== this.ws) return;
        let frame;
        try { frame = JSON.parse(ev.data); } catch (err) { return; }
        if (frame && typeof frame === "object") this.onFrame(frame);
      };
      ws.onclose = () => {
        if (ws !== this.ws) return;
        this.ws = null;
        if (!this.finished) this.dropped();
      };
      ws.onerror = () => {};  // onclose follows and decides
    }

    // The socket closed before the terminal frame: a new ticket, resume after the last seq.
    dropped() {
      if (this.finished) return;
      if (!this.turnId) {
        this.finishError({code: 0, message: this.t("error.connection"), local: "error.connection"});
        return;
      }
      if (this.tries >= BACKOFF_MS.length) {
        this.finishError({code: 0, message: this.t("error.lost"), local: "error.lost"});
        return;
      }
      const delay = BACKOFF_MS[this.tries++];
      this.panel.setStatus("status.reconnecting");
      window.setTimeout(() => {
        if (this.finished) return;
        this.resumes++;
        this.connect(() => ({type: "resume", turn: this.turnId, after: this.seq}));
      }, delay);
    }

    dropSocket() {  // test hook: what a dropped network connection does
      if (this.ws) this.ws.close();
    }

    cancel() {
      if (this.finished || this.cancelRequested) return;
      this.cancelRequested = true;
      this.panel.setStatus("status.stopping");
      if (this.turnId && this.ws && this.ws.readyState === WebSocket.OPEN) this.sendCancel();
    }

    sendCancel() {
      if (this.cancelSent) return;
      this.cancelSent = true;
      this.ws.send(JSON.stringify({type: "cancel", turn: this.turnId}));
    }

    closeSocket() {
      const ws = this.ws;
      this.ws = null;
      if (ws) ws.close();
    }

    // ---- frames ----

    onFrame(f) {
      if (this.finished || f.type === "ping" || f.type === "pong") return;
      if (typeof f.seq === "number") {
        if (f.seq <= this.seq) return;  // already seen (a resume may repeat frames)
        this.seq = f.seq;
        this.seqLog.push(f.seq);
        this.tries = 0;
      }
      switch (f.type) {
        case "accepted":
          this.turnId = f.turn;
          this.panel.setStatus(this.cancelRequested ? "status.stopping" : "status.thinking");
          if (this.cancelRequested && this.ws) this.sendCancel();
          break;
        case "event":
          this.events.push(f);
          if (f.step === "retrieve" && typeof f.passages === "number") this.passages = f.passages;
          this.renderSteps();
          break;
        case "token":
          this.text += typeof f.text === "string" ? f.text : "";
          this.streamed += typeof f.text === "string" ? f.text : "";
          if (!this.cancelRequested) this.panel.setStatus("status.answering");
          this.answerEl.dataset.state = "streaming";
          this.scheduleRender();
          break;
        case "restart":  // the worker died and the turn runs again: its text starts over
          this.text = "";
          this.streamed = "";
          this.events.push({step: "restart", attempt: f.attempt, restart: true});
          this.panel.setStatus("status.restart");
          this.renderSteps();
          this.scheduleRender();
          break;
        case "done":
          this.finishDone(f);
          break;
        case "error":
          if (f.seq === null || f.seq === undefined) {
            // A refusal of a client frame. A refused cancel means the turn already ended;
            // its terminal frame still comes.
            if (this.cancelSent && this.turnId && f.code !== CANCELLED && f.code !== 429) return;
          }
          this.finishError(f);
          break;
        default:
          break;
      }
    }

    finishDone(f) {
      this.finished = true;
      this.done = f;
      this.text = typeof f.answer === "string" ? f.answer : this.text;
      this.closeSocket();
      this.answerEl.dataset.state = "done";
      this.answerEl.dataset.done = "1";
      this.renderAll();
      this.panel.turnEnded(this, "done");
    }

    finishError(f) {
      this.finished = true;
      this.error = f;
      this.closeSocket();
      const stopped = f.code === CANCELLED;
      this.answerEl.dataset.state = stopped ? "stopped" : "error";
      this.renderAll();
      this.panel.turnEnded(this, stopped ? "stopped" : "error");
    }

    errorText() {
      const f = this.error;
      if (!f) return "";
      if (f.local) return this.t(f.local);
      if (f.code === CANCELLED) return this.t("status.stopped");
      let text = f.message || this.t("status.failed");
      // The server's sentence, unless the interface is Czech and the sentence is not.
      if (this.panel.lang === "cs" && !CZECH_LETTERS.test(text) &&
          I18N.cs["error.code." + f.code]) {
        text = this.t("error.code." + f.code);
      }
      if (f.retry_after) text += " " + this.t("error.retryAfter", {seconds: f.retry_after});
      return text;
    }

    // ---- rendering ----

    scheduleRender() {
      if (this.rafPending) return;
      this.rafPending = true;
      window.requestAnimationFrame(() => {
        this.rafPending = false;
        if (!this.finished) this.renderAnswer();
      });
    }

    sourceAnchor(n) { return this.panel.idPrefix + "src-" + this.index + "-" + n; }

    citationState(n) {
      if (this.done) {
        return (this.done.sources || []).some((s) => s.n === n) ? "valid" : "invalid";
      }
      if (this.error) return "plain";
      if (this.passages !== null && (n < 1 || n > this.passages)) return "invalid";
      return n < 1 ? "invalid" : "valid";
    }

    // An unlabelled [a, b, c]: three citations when the server's check read them so (or, before
    // the answer is done, when all are passage numbers), else a fuzzy triple left as text.
    tripleIsCitation(nums) {
      const checked = this.done && this.done.checks && this.done.checks.citations;
      if (checked && Array.isArray(checked.cited)) return nums.every((n) => checked.cited.includes(n));
      return this.passages !== null && nums.every((n) => n >= 1 && n <= this.passages);
    }

    citation(n) {
      const state = this.citationState(n);
      const label = "[" + n + "]";
      if (state === "plain") return document.createTextNode(label);
      if (state === "invalid") {
        const s = el("s", "ba-cite-invalid", label);
        s.appendChild(el("span", "ba-vh", " (" + this.t("cite.invalid") + ")"));
        return s;
      }
      const a = el("a", "ba-cite", label);
      a.setAttribute("href", "#" + this.sourceAnchor(n));
      a.dataset.n = String(n);
      const source = this.done && (this.done.sources || []).find((s) => s.n === n);
      a.title = this.t("cite.link", {n: n}) + (source ? ": " + source.title : "");
      return a;
    }

    renderAnswer() {
      const frag = Render.render(this.text, {citation: (n) => this.citation(n),
        tripleIsCitation: (nums) => this.tripleIsCitation(nums)});
      this.answerEl.replaceChildren(frag);
      this.panel.renders++;
    }

    onCitationClick(ev) {
      const link = ev.target.closest && ev.target.closest("a.ba-cite");
      if (!link || !this.answerEl.contains(link)) return;
      ev.preventDefault();
      this.openSource(Number(link.dataset.n));
    }

    openSource(n) {
      const item = document.getElementById(this.sourceAnchor(n));
      if (!item) return;
      const details = item.querySelector("details");
      if (details) details.open = true;
      item.classList.add("ba-source-target");
      window.setTimeout(() => item.classList.remove("ba-source-target"), 1600);
      const summary = item.querySelector("summary");
      if (summary) summary.focus({preventScroll: true});
      item.scrollIntoView({block: "nearest"});
    }

    relabel() {
      this.youLabel.textContent = this.t("turn.you");
      this.botLabel.textContent = this.t("turn.assistant");
    }

    renderAll() {
      this.relabel();
      this.renderAnswer();
      this.renderNote();
      this.renderChrome();
      this.renderSteps();
    }

    renderNote() {
      if (!this.error) {
        this.noteEl.hidden = true;
        return;
      }
      this.noteEl.hidden = false;
      this.noteEl.className = this.error.code === CANCELLED ? "ba-note ba-note-calm"
        : "ba-note ba-note-error";
      this.noteEl.textContent = this.errorText();
    }

    renderChrome() {
      const openSources = new Set(Array.from(
        this.chromeEl.querySelectorAll(".ba-source details[open]"),
        (d) => d.closest(".ba-source").dataset.n));
      this.chromeEl.replaceChildren();
      const d = this.done;
      if (!d) return;
      const structured = d.structured || null;
      if (structured && structured.outcome === "dont_know" && structured.clarifying_question) {
        this.chromeEl.appendChild(el("p", "ba-clarify",
          this.t("dontKnow.clarify", {text: structured.clarifying_question})));
      }
      const warnings = this.warnings(d);
      if (warnings.length) {
        const box = el("div", "ba-warning");
        box.setAttribute("role", "note");
        const title = el("p", "ba-warning-title");
        const icon = el("span", "ba-warning-icon", "⚠");
        icon.setAttribute("aria-hidden", "true");
        title.append(icon, document.createTextNode(" " + this.t("checks.title")));
        const list = el("ul", "ba-warning-list");
        for (const w of warnings) list.appendChild(el("li", "", w));
        box.append(title, list);
        this.chromeEl.appendChild(box);
      }
      if (structured && Array.isArray(structured.quotes) && structured.quotes.length) {
        this.chromeEl.appendChild(this.quotesSection(structured.quotes));
      }
      const sources = Array.isArray(d.sources) ? d.sources : [];
      if (sources.length) this.chromeEl.appendChild(this.sourcesSection(sources, openSources));
    }

    warnings(d) {
      const out = [];
      const checks = d.checks || {};
      const numbers = checks.numbers || {};
      if (numbers.valid === false) {
        const list = (numbers.unconfirmed || []).map(String);
        out.push(list.length ? this.t("checks.numbers", {list: list.join(", ")})
          : this.t("checks.numbersNone"));
      }
      const citations = checks.citations || {};
      if (citations.valid === false) {
        const bad = (citations.invalid || []).map((n) => "[" + n + "]");
        out.push(this.t(bad.length > 1 ? "checks.citationsMany" : "checks.citations",
          {list: bad.join(", ")}));
      }
      const quotes = checks.quotes || {};
      if (quotes.valid === false && (quotes.not_found || []).length) {
        out.push(this.t("checks.quotes",
          {list: quotes.not_found.map((q) => "“" + q + "”").join(", ")}));
      }
      const paths = checks.source_paths || {};
      if (paths.valid === false && (paths.invalid || []).length) {
        out.push(this.t("checks.paths", {list: paths.invalid.join(", ")}));
      }
      return out;
    }

    quotesSection(quotes) {
      const section = el("section", "ba-quotes");
      const headingId = this.panel.idPrefix + "quotes-" + this.index;
      section.setAttribute("aria-labelledby", headingId);
      const h = el("h3", "ba-subhead", this.t("quotes.title"));
      h.id = headingId;
      const list = el("ul", "ba-quote-list");
      for (const q of quotes) {
        const li = el("li", q.found === false ? "ba-quote ba-quote-missing" : "ba-quote");
        li.appendChild(el("q", "", String(q.text || "")));
        if (q.n) li.appendChild(el("span", "ba-quote-from", " " + this.t("quotes.from", {n: q.n})));
        if (q.found === false) {
          li.appendChild(el("span", "ba-quote-mark", " ⚠ " + this.t("quotes.notFound")));
        }
        list.appendChild(li);
      }
      section.append(h, list);
      return section;
    }

    sourcesSection(sources, openSources) {
      const section = el("section", "ba-sources");
      const headingId = this.panel.idPrefix + "sources-" + this.index;
      section.setAttribute("aria-labelledby", headingId);
      const h = el("h3", "ba-subhead", this.t("sources.title"));
      h.id = headingId;
      const list = el("ul", "ba-source-list");
      for (const s of sources) {
        const li = el("li", "ba-source");
        li.id = this.sourceAnchor(s.n);
        li.dataset.n = String(s.n);
        const details = el("details");
        if (openSources.has(String(s.n))) details.open = true;
        const summary = el("summary");
        summary.append(el("span", "ba-source-n", "[" + s.n + "]"), document.createTextNode(" "),
                       el("span", "ba-source-title", String(s.title || "")));
        const section = sectionPath(s.section, s.title);
        if (section) {
          summary.append(document.createTextNode(" — "), el("span", "ba-source-section", section));
        }
        if (s.local) summary.append(document.createTextNode(" "),
                                    el("span", "ba-badge", this.t("sources.local")));
        if (typeof s.score === "number") {
          summary.append(document.createTextNode(" "), el("span", "ba-score",
            this.t("sources.score", {score: Number(s.score.toPrecision(3))})));
        }
        const body = el("div", "ba-excerpt");
        for (const para of String(s.excerpt || "").split(/\n\s*\n/)) {
          const text = para.replace(/\s+/g, " ").trim();
          if (text) body.appendChild(el("p", "ba-excerpt-text", text));
        }
        if (!s.local && s.source) {
          body.appendChild(el("p", "ba-path", this.t("sources.path", {path: s.source})));
        }
        details.append(summary, body);
        li.appendChild(details);
        list.appendChild(li);
      }
      section.append(h, list);
      return section;
    }

    renderSteps() {
      const events = this.events;
      if (!events.length) {
        this.stepsEl.hidden = true;
        return;
      }
      this.stepsEl.hidden = false;
      const timed = events.filter((e) => !e.restart);
      this.stepsSummary.textContent = this.t("steps.title", {count: timed.length});
      const total = this.done && this.done.timing && this.done.timing.total_ms
        ? this.done.timing.total_ms
        : Math.max(1, ...timed.map((e) => (Number(e.start_ms) || 0) + (Number(e.ms) || 0)));
      const items = [];
      for (const e of events) {
        const li = el("li", "ba-step");
        if (e.restart) {
          li.textContent = this.t("steps.restart", {attempt: e.attempt});
          li.classList.add("ba-step-restart");
          items.push(li);
          continue;
        }
        const key = "step." + e.step;
        const name = I18N.en[key] ? this.t(key) : String(e.step);
        const extra = [];
        if (e.language) extra.push(String(e.language));
        if (typeof e.passages === "number") extra.push(this.t("steps.passages", {n: e.passages}));
        if (e.model) extra.push(String(e.model));
        if (e.tool) {  // agent and hybrid modes: which tool, with what, and what came back
          const arg = e.args && (e.args.query || e.args.id);
          extra.push(String(e.tool) + (arg ? ": " + String(arg) : ""));
          extra.push(e.ok ? this.t("steps.chars", {n: Number(e.chars) || 0})
            : this.t("steps.tool_error", {error: String(e.error || "")}));
          li.classList.add(e.ok ? "ba-step-tool" : "ba-step-tool-error");
        }
        const label = (extra.length ? name + " (" + extra.join(", ") + ")" : name);
        const start = Math.round(Number(e.start_ms) || 0);
        const ms = Math.round(Number(e.ms) || 0);
        const text = e.ms ? this.t("steps.line", {name: label, start: start, ms: ms})
          : this.t("steps.point", {name: label, start: start});
        const bar = el("span", "ba-step-bar");
        bar.setAttribute("aria-hidden", "true");
        const fillEl = el("span", "ba-step-fill");
        // CSSOM, not a style attribute: allowed by the page's style-src 'self'.
        fillEl.style.marginLeft = Math.min(100, (100 * start) / total) + "%";
        fillEl.style.width = Math.max(0.5, Math.min(100, (100 * ms) / total)) + "%";
        bar.appendChild(fillEl);
        li.append(el("span", "ba-step-text", text), bar);
        items.push(li);
      }
      if (this.done && this.done.timing && typeof this.done.timing.total_ms === "number") {
        items.push(el("li", "ba-step ba-step-total",
          this.t("steps.total", {ms: Math.round(this.done.timing.total_ms)})));
      }
      this.stepsList.replaceChildren(...items);
    }

    visibleText() {  // the answer as a reader sees it (without screen-reader-only text)
      const clone = this.answerEl.cloneNode(true);
      clone.querySelectorAll(".ba-vh").forEach((n) => n.remove());
      clone.querySelectorAll("br").forEach((n) => n.replaceWith("\n"));
      return Array.from(clone.children, (c) => c.textContent).join("\n\n");
    }
  }

  // ---- the panel -----------------------------------------------------------------------

  class Panel {
    constructor(root, opts) {
      this.root = root;
      this.opts = opts || {};
      this.baseUrl = (this.opts.baseUrl || "").replace(/\/$/, "");
      this.idPrefix = this.opts.idPrefix || (panelCount++ ? "ba" + panelCount + "-" : "ba-");
      this.lang = pickLang(this.opts);
      this.ownsDocument = this.opts.setDocumentLang !== undefined ? !!this.opts.setDocumentLang
        : document.documentElement.dataset.baLang === "auto";
      this.turns = [];
      this.history = [];
      this.current = null;
      this.renders = 0;
      this.bindings = [];
      this.lastDone = null;
      this.projectId = this.opts.projectId !== undefined ? this.opts.projectId : null;
      this.build();
      this.applyLang();
      if (this.opts.projectPicker) this.loadProjects();
    }

    t(key, params) { return translate(this.lang, key, params); }

    bind(node, key, attr) {
      this.bindings.push({node: node, key: key, attr: attr});
      return node;
    }

    id(name) { return this.idPrefix + name; }

    build() {
      const root = this.root;
      root.classList.add("ba-panel");
      root.replaceChildren();
      const header = el("div", "ba-header");
      const heading = el(this.opts.headingLevel ? "h" + this.opts.headingLevel : "h2", "ba-title");
      heading.id = this.id("title");
      this.bind(heading, "panel.title");
      if (!root.getAttribute("aria-labelledby") && !root.getAttribute("aria-label")) {
        root.setAttribute("aria-labelledby", heading.id);
      }
      const langBox = el("div", "ba-lang");
      const langLabel = this.bind(el("label"), "panel.language");
      langLabel.htmlFor = this.id("lang");
      const langSelect = el("select");
      langSelect.id = this.id("lang");
      for (const code of LANGS) {
        const option = el("option", "", LANG_NAMES[code]);
        option.value = code;
        option.lang = code;
        langSelect.appendChild(option);
      }
      langSelect.addEventListener("change", () => this.setLang(langSelect.value));
      this.langSelect = langSelect;
      langBox.append(langLabel, langSelect);
      header.append(heading, langBox);
      const intro = this.bind(el("p", "ba-intro"), "panel.intro");

      const conversation = el("section", "ba-conversation");
      conversation.id = this.id("conversation");
      this.bind(conversation, "panel.conversation", "aria-label");
      this.emptyEl = this.bind(el("p", "ba-empty"), "panel.empty");
      conversation.appendChild(this.emptyEl);
      this.conversation = conversation;

      this.statusEl = el("p", "ba-status");
      this.statusEl.id = this.id("status");
      // Screen readers hear the finished answer once, not every token.
      this.announceEl = el("div", "ba-vh");
      this.announceEl.id = this.id("announce");
      this.announceEl.setAttribute("aria-live", "polite");
      this.announceEl.setAttribute("aria-atomic", "true");

      const form = el("form", "ba-form");
      form.id = this.id("form");
      form.noValidate = true;
      if (this.opts.projectPicker) {
        const row = el("div", "ba-field ba-project");
        const label = this.bind(el("label"), "form.project");
        label.htmlFor = this.id("project");
        const select = el("select");
        select.id = this.id("project");
        select.addEventListener("change", () => { this.projectId = select.value || null; });
        this.projectSelect = select;
        this.projectNote = el("p", "ba-project-note");
        this.projectNote.hidden = true;
        row.append(label, select, this.projectNote);
        form.appendChild(row);
      }
      const qLabel = this.bind(el("label"), "form.label");
      qLabel.htmlFor = this.id("question");
      const question = el("textarea");
      question.id = this.id("question");
      question.name = "question";
      question.rows = 3;
      question.maxLength = 4000;
      question.setAttribute("aria-describedby", this.id("hint"));
      question.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing && !ev.ctrlKey &&
            !ev.altKey && !ev.metaKey) {
          ev.preventDefault();
          this.submit();
        }
      });
      const hint = this.bind(el("p", "ba-hint"), "form.hint");
      hint.id = this.id("hint");
      const actions = el("div", "ba-actions");
      const ask = this.bind(el("button", "ba-ask"), "form.ask");
      ask.type = "submit";
      ask.id = this.id("ask");
      const stop = this.bind(el("button", "ba-stop"), "form.stop");
      stop.type = "button";
      stop.id = this.id("stop");
      stop.hidden = true;
      stop.addEventListener("click", () => { if (this.current) this.current.cancel(); });
      actions.append(ask, stop);
      form.append(qLabel, question, hint, actions);
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        this.submit();
      });
      this.question = question;
      this.askButton = ask;
      this.stopButton = stop;

      root.append(header, intro, conversation, this.statusEl, this.announceEl, form);
    }

    setLang(lang) {
      const code = normLang(lang);
      if (!code || code === this.lang) return;
      this.lang = code;
      this.applyLang();
      for (const turn of this.turns) {
        if (turn.finished) turn.renderAll();
        else { turn.relabel(); turn.renderSteps(); }
      }
      if (this.statusKey) this.setStatus(this.statusKey);
      if (this.projectSelect) this.fillProjects(this.projects || []);
      this.root.dispatchEvent(new CustomEvent("ba-languagechange",
        {bubbles: true, detail: {lang: code}}));
    }

    applyLang() {
      this.root.lang = this.lang;
      if (this.ownsDocument) document.documentElement.lang = this.lang;
      this.langSelect.value = this.lang;
      for (const b of this.bindings) {
        if (b.attr) b.node.setAttribute(b.attr, this.t(b.key));
        else b.node.textContent = this.t(b.key);
      }
    }

    setStatus(key, params) {
      this.statusKey = key;
      this.statusEl.textContent = key ? this.t(key, params) : "";
    }

    announce(text) {
      this.announceEl.textContent = "";
      // A fresh text node after a tick, so the same words are announced again.
      window.setTimeout(() => { this.announceEl.textContent = text; }, 50);
    }

    // ---- tokens, tickets, projects ----

    // getToken({fresh: true}) asks the host page for a new token: the one it gave has expired
    // or was signed out (the app's tokens live 15 minutes).
    async token(fresh) {
      if (this.opts.getToken) return this.opts.getToken({fresh: !!fresh});
      return appStoredToken() || anonymousToken(this.baseUrl);
    }

    async ticket() {
      let resp = await this.requestTicket(await this.token(false));
      if (resp.status === 401 && this.opts.getToken) {
        resp = await this.requestTicket(await this.token(true));
      }
      if (resp.status === 401) {
        throw new PanelError(this.t("error.signedOut"), 401, undefined, false);
      }
      if (!resp.ok) throw await errorFrom(resp, this.t("error.ticket"));
      return (await resp.json()).ticket;
    }

    requestTicket(token) {
      // A project turn's token is confirmed with the app before the ticket is issued.
      const body = this.projectId ? JSON.stringify({project_id: this.projectId}) : undefined;
      const headers = {"Authorization": "Bearer " + token};
      if (body) headers["Content-Type"] = "application/json";
      return fetch(this.baseUrl + "/api/v1/assistant/tickets",
                   {method: "POST", headers: headers, body: body});
    }

    wsUrl(ticket) {
      const base = this.baseUrl ? new URL(this.baseUrl) : window.location;
      const scheme = base.protocol === "https:" ? "wss://" : "ws://";
      return scheme + base.host + "/api/v1/assistant/ws?ticket=" + encodeURIComponent(ticket);
    }

    async loadProjects() {
      if (!this.projectSelect) return;
      if (!this.projects) this.fillProjects([]);
      try {
        const token = await this.token();
        const resp = await fetch(this.baseUrl + "/api/v1/assistant/projects", {
          headers: {"Authorization": "Bearer " + token},
        });
        if (!resp.ok) throw await errorFrom(resp, this.t("form.projectsFailed"));
        const body = await resp.json();
        this.fillProjects(Array.isArray(body.projects) ? body.projects : []);
        this.projectNote.hidden = true;
      } catch (err) {
        this.projectNote.textContent = this.t("form.projectsFailed");
        this.projectNote.hidden = false;
      }
    }

    fillProjects(projects) {
      this.projects = projects;
      const select = this.projectSelect;
      const keep = this.projectId;
      const none = el("option", "", this.t("form.noProject"));
      none.value = "";
      const options = [none];
      for (const p of projects) {
        const option = el("option", "", String(p.name || p.id));
        option.value = String(p.id);
        options.push(option);
      }
      select.replaceChildren(...options);
      select.value = keep && projects.some((p) => String(p.id) === keep) ? keep : "";
      this.projectId = select.value || null;
    }

    // ---- conversation ----

    // At most the last 20 messages and about 6,000 characters, oldest dropped first (B-19);
    // earlier answers lose their [n] markers.
    historyForAsk() {
      const messages = this.history.slice(-HISTORY_MESSAGES).map((m) => ({
        role: m.role,
        content: m.role === "assistant" ? Render.stripCitations(m.content) : m.content,
      }));
      let total = messages.reduce((sum, m) => sum + m.content.length, 0);
      while (messages.length && total > HISTORY_CHARS) total -= messages.shift().content.length;
      return messages;
    }

    submit() {
      const text = this.question.value.trim();
      if (this.current && !this.current.finished) return;
      if (!text) {
        this.setStatus("form.empty");
        this.question.focus();
        return;
      }
      this.question.value = "";
      this.ask(text);
    }

    ask(text) {
      const history = this.historyForAsk();
      const turn = new Turn(this, text, this.turns.length + 1);
      this.turns.push(turn);
      this.current = turn;
      this.lastAsk = {message: text, history: history, project_id: this.projectId};
      this.emptyEl.hidden = true;
      this.conversation.appendChild(turn.root);
      this.conversation.setAttribute("aria-busy", "true");
      this.askButton.setAttribute("aria-disabled", "true");
      this.stopButton.hidden = false;
      turn.start({type: "ask", message: text, history: history, project_id: this.projectId});
      return turn;
    }

    turnEnded(turn, outcome) {
      if (turn !== this.current) return;
      this.conversation.removeAttribute("aria-busy");
      this.askButton.removeAttribute("aria-disabled");
      const stopHadFocus = document.activeElement === this.stopButton;
      this.stopButton.hidden = true;
      if (stopHadFocus) this.question.focus();
      if (outcome === "done") {
        this.history.push({role: "user", content: turn.question},
                          {role: "assistant", content: turn.done.answer || ""});
        this.lastDone = turn.done;
        this.setStatus("status.done");
        this.announce(this.t("announce.done", {text: turn.visibleText()}));
      } else if (outcome === "stopped") {
        this.setStatus("status.stopped");
        this.announce(this.t("announce.stopped"));
      } else {
        this.setStatus("status.failed");
        this.announce(this.t("announce.error", {text: turn.errorText()}));
      }
    }
  }

  function mount(root, opts) {
    const panel = new Panel(root, opts);
    // For tests and embedding pages: the last panel, its last done frame, a socket drop.
    window.__assistantPanel = {
      panel: panel,
      get lastDone() { return panel.lastDone; },
      get current() { return panel.current; },
      dropSocket() { if (panel.current) panel.current.dropSocket(); },
      answerText() { return panel.current ? panel.current.visibleText() : ""; },
    };
    return panel;
  }

  window.BecomeAssistant = {mount: mount, t: translate, pickLang: pickLang};

  function autoMount() {
    document.querySelectorAll("[data-become-assistant]").forEach((node) => {
      if (!node.classList.contains("ba-panel")) {
        mount(node, {projectId: node.dataset.projectId || null,
                     projectPicker: node.dataset.projectPicker === "true"});
      }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", autoMount);
  else autoMount();
})();
