// The BeCoMe assistant panel (protocol v1): ticket -> WebSocket -> ask -> streamed frames.
// This file is the view: the DOM, its texts in English and Czech, storage and the panel's own
// requests. A turn's frames go through its state machine (panel-turn.js) and its connection
// (panel-transport.js); both know nothing of the DOM.
// Embeddable in any page: load panel-i18n.js, panel-render.js and this file (and panel.css);
// panel-transport.js, panel-turn.js and panel-quotes.js are loaded from beside this file unless
// the page has loaded them already. Then either put data-become-assistant on an element or call
// BecomeAssistant.mount(element, options). Everything the server sends is written with text
// nodes and a fixed set of elements; nothing is ever parsed as HTML.
"use strict";

(function () {
  const I18N = window.BecomeAssistantI18n;
  const Render = window.BecomeAssistantRender;
  const LANGS = ["en", "cs"];
  const LANG_NAMES = {en: "English", cs: "Čeština"};
  const HISTORY_MESSAGES = 20;
  const HISTORY_CHARS = 6000;
  const CANCELLED = 499;  // a stopped answer's error code
  const CZECH_LETTERS = /[ěščřžýáíéůúťďňĚŠČŘŽÝÁÍÉŮÚŤĎŇ]/;
  const LANG_KEY = "become-assistant.lang";  // the person's explicit choice (localStorage)
  const SAVE_KEY = "become-assistant.conversation";  // this tab's conversation (sessionStorage)
  const FOLLOW_SLACK_PX = 48;
  // The scripts this one needs, by the global each defines; loaded from where this one came.
  const COMPANIONS = {BecomeAssistantTransport: "panel-transport.js",
    BecomeAssistantTurnState: "panel-turn.js", BecomeAssistantQuotes: "panel-quotes.js"};
  const SCRIPT_DIR = document.currentScript && document.currentScript.src
    ? document.currentScript.src.replace(/[^/]*$/, "") : "";
  let panelCount = 0;

  function companion(name) { return window[name]; }

  // fn() once the companions are there: at once on pages that load them, else after they are
  // loaded here (in order, once per page).
  let companionsLoading = null;
  function whenCompanions(fn, failed) {
    const missing = Object.keys(COMPANIONS).filter((name) => !window[name]);
    if (!missing.length) {
      fn();
      return;
    }
    if (!companionsLoading) {
      companionsLoading = Promise.all(missing.map((name) => new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = SCRIPT_DIR + COMPANIONS[name];
        script.async = false;
        script.onload = resolve;
        script.onerror = reject;
        document.head.appendChild(script);
      })));
    }
    companionsLoading.then(fn, failed || (() => {}));
  }

  function storageGet(kind, key) {
    try { return window[kind].getItem(key); } catch (err) { return null; }
  }

  function storageSet(kind, key, value) {
    try {
      if (value === null) window[kind].removeItem(key);
      else window[kind].setItem(key, value);
    } catch (err) { /* storage off (private mode): the feature just does not persist */ }
  }

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
    const chosen = normLang(storageGet("localStorage", LANG_KEY));
    if (chosen) return chosen;
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

  // A heading as plain text: no heading marks, backticks, emphasis or link syntax.
  function plainHeading(text) {
    return String(text || "").replace(/^#+\s*/, "").replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/`+/g, "").replace(/(\*\*|__|\*|_)(\S(?:.*?\S)?)\1/g, "$2")
      .replace(/\s+/g, " ").trim();
  }

  // "Title > Section > Subsection" as plain text, the title not repeated.
  function sectionPath(section, title) {
    const parts = String(section || "").split(" > ")
      .map(plainHeading).filter((part) => part);
    if (parts.length && parts[0] === plainHeading(title)) parts.shift();
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

  // ---- one turn: the view of a TurnState (panel-turn.js) fed by a Transport (panel-transport.js)

  class Turn {
    constructor(panel, question, index, state) {
      this.panel = panel;
      this.question = question;
      this.index = index;
      this.state = state;
      this.project = state.project;  // {id, name} of the project asked about, or null
      this.link = null;  // the Transport while the turn runs
      this.rafPending = false;
      this.build();
    }

    // The state's fields where the view and the tests (window.__assistantPanel) read them.
    get finished() { return this.state.finished; }
    get done() { return this.state.done; }
    get error() { return this.state.error; }
    get text() { return this.state.text; }
    get streamed() { return this.state.streamed; }
    get seq() { return this.state.seq; }
    get seqLog() { return this.state.seqLog; }
    get turnId() { return this.state.turnId; }
    get startedAt() { return this.state.startedAt; }
    get resumes() { return this.link ? this.link.resumes : 0; }

    t(key, params) { return this.panel.t(key, params); }

    build() {
      const art = el("article", "ba-turn");
      art.dataset.turnIndex = String(this.index);
      const user = el("div", "ba-msg ba-msg-user");
      this.youLabel = el("p", "ba-who");
      const userText = el("p", "ba-user-text", this.question);  // plain text, always
      this.projectEl = el("p", "ba-turn-project");
      this.projectEl.hidden = !this.project;
      user.append(this.youLabel, userText, this.projectEl);
      const bot = el("div", "ba-msg ba-msg-assistant");
      this.botLabel = el("p", "ba-who");
      // The quotes form's project figures, above the chart (the answer follows the chart).
      this.figuresEl = el("div", "ba-answer-figures");
      this.figuresEl.hidden = true;
      this.figuresEl.addEventListener("click", (ev) => this.onCitationClick(ev));
      this.answerEl = el("div", "ba-answer");
      this.answerEl.dataset.state = "waiting";
      this.answerEl.addEventListener("click", (ev) => this.onCitationClick(ev));
      this.noteEl = el("p", "ba-note");
      this.noteEl.hidden = true;
      this.langNoteEl = el("p", "ba-lang-note");
      this.langNoteEl.hidden = true;
      this.toolsEl = el("div", "ba-turn-tools");
      this.toolsEl.hidden = true;
      this.chartEl = el("div", "ba-chart-box");
      this.chartEl.hidden = true;
      this.chart = null;  // the project chart's data, fetched after a project answer
      this.chromeEl = el("div", "ba-chrome");
      this.stepsEl = el("details", "ba-steps");
      this.stepsSummary = el("summary");
      this.stepsList = el("ol", "ba-step-list");
      this.stepsEl.append(this.stepsSummary, this.stepsList);
      this.stepsEl.hidden = true;
      bot.append(this.botLabel, this.figuresEl, this.answerEl, this.noteEl, this.langNoteEl,
                 this.chartEl, this.chromeEl, this.toolsEl, this.stepsEl);
      art.append(user, bot);
      this.root = art;
      this.relabel();
    }

    // ---- connection and frames ----

    start(askFrame) {
      const panel = this.panel;
      this.link = new (companion("BecomeAssistantTransport").Transport)({
        ticket: () => panel.ticket(),
        wsUrl: (ticket) => panel.wsUrl(ticket),
        WebSocket: window.WebSocket,
        fetch: window.fetch ? window.fetch.bind(window) : null,
        baseUrl: panel.baseUrl,
        token: (fresh) => panel.token(fresh),
        setTimeout: (fn, ms) => window.setTimeout(fn, ms),
        net: panel.net,
      }, {
        frame: (f) => this.apply(this.state.accept(f)),
        reconnecting: () => this.apply(this.state.reconnecting()),
        failed: (f) => this.apply(this.state.fail(
          f.local ? Object.assign({message: this.t(f.local)}, f) : f)),
      });
      this.apply(this.state.start());
      this.link.start(askFrame);
    }

    // Show what the turn's state says has changed.
    apply(changes) {
      for (const c of changes) {
        if (c.type === "status") {
          this.panel.setStatus(c.key, c.key === "status.writing"
            ? {s: this.panel.seconds(this.state.firstWordMs)} : undefined);
        } else if (c.type === "steps") {
          this.renderSteps();
        } else if (c.type === "text") {
          if (this.state.phase === "streaming") this.answerEl.dataset.state = "streaming";
          this.scheduleRender();
        } else if (c.type === "end") {
          if (this.link) this.link.close();
          this.answerEl.dataset.state = c.outcome;
          if (c.outcome === "done") this.answerEl.dataset.done = "1";
          this.renderAll();
          this.panel.turnEnded(this, c.outcome);
        }
      }
    }

    dropSocket() {  // test hook: what a dropped network connection does
      if (this.link) this.link.drop();
    }

    cancel() {
      const changes = this.state.cancel();
      if (!changes.length) return;
      this.apply(changes);
      if (this.link) this.link.cancel();
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

    citation(n) {
      const state = this.state.citationState(n);
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

    renderCtx() {
      return {citation: (n) => this.citation(n),
        tripleIsCitation: (nums) => this.state.tripleIsCitation(nums)};
    }

    // A quotes answer is streamed as plain text and, once done, shown from its structured block.
    quotesForm() {
      return !!(this.done && companion("BecomeAssistantQuotes").applies(this.done));
    }

    renderAnswer() {
      const figures = this.quotesForm() ? this.renderQuotes() : null;
      if (!this.quotesForm()) {
        this.answerEl.replaceChildren(Render.render(this.text, this.renderCtx()));
      }
      this.figuresEl.replaceChildren(...(figures ? [figures] : []));
      this.figuresEl.hidden = !figures;
      // The chart sits under the project's figures when there are any, else under the answer.
      const chartAfter = figures ? this.figuresEl : this.langNoteEl;
      if (chartAfter.nextSibling !== this.chartEl) chartAfter.after(this.chartEl);
      this.panel.renders++;
      if (!this.finished) this.panel.followAnswer();
    }

    // The quotes form: the answer element gets the lead-in and quotations (or "I don't know");
    // the project's figures, if any, are returned for the element above the chart.
    renderQuotes() {
      const Quotes = companion("BecomeAssistantQuotes");
      const ctx = {
        t: (key, params) => this.t(key, params),
        id: (name) => this.panel.idPrefix + name + "-" + this.index,
        citation: (n) => this.citation(n),
        render: this.renderCtx(),
        ask: (text) => this.panel.askAgain(text, this.project ? this.project.id : null),
      };
      this.answerEl.replaceChildren(Quotes.body(this.done, ctx));
      return Quotes.summary(this.done, ctx);
    }

    onCitationClick(ev) {
      const link = ev.target.closest && ev.target.closest("a.ba-cite");
      if (!link || !ev.currentTarget.contains(link)) return;
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
      if (this.project) {
        this.projectEl.textContent = this.t("turn.project", {name: this.project.name});
      }
    }

    renderAll() {
      this.relabel();
      this.renderAnswer();
      this.renderNote();
      this.renderLangNote();
      this.renderChart();
      this.renderChrome();
      this.renderTools();
      this.renderSteps();
    }

    // The project chart, drawn from the project data (never from the model's text).
    renderChart() {
      const Chart = window.BecomeAssistantChart;
      if (!this.done || !this.project || !Chart) {
        this.chartEl.hidden = true;
        return;
      }
      if (!this.chart) {
        if (!this.chartRequested) {
          this.chartRequested = true;
          this.panel.projectChart(this.project.id).then((data) => {
            this.chart = data;
            this.renderChart();
            this.panel.save();
          }).catch(() => { /* no chart: the answer stands on its own */ });
        }
        return;
      }
      const figure = Chart.build(this.chart, (key, params) => this.t(key, params),
                                 (v) => this.panel.number(v));
      this.chartEl.replaceChildren(...(figure ? [figure] : []));
      this.chartEl.hidden = !figure;
    }

    // A quiet note when the answer is in another language than the question (B-33).
    renderLangNote() {
      const d = this.done;
      // Not for quotes: no model wrote them, and each quote in another language says so.
      const differs = !!(d && d.language_differs && LANGS.includes(d.answer_language) &&
                         !this.quotesForm());
      this.langNoteEl.hidden = !differs;
      if (differs) {
        this.langNoteEl.textContent = this.t("note.language",
          {lang: this.t("lang." + d.answer_language)});
      }
    }

    // Copy and regenerate under a finished answer (regenerate only under the last one).
    renderTools() {
      this.toolsEl.replaceChildren();
      this.toolsEl.hidden = !this.finished;
      if (!this.finished) return;
      if (this.done) {
        const copy = el("button", "ba-tool ba-copy", this.t("tools.copy"));
        copy.type = "button";
        copy.addEventListener("click", () => this.copy(copy));
        this.toolsEl.appendChild(copy);
      }
      if (this.done && this.ratedTurn()) this.toolsEl.appendChild(this.feedbackBox());
      if (this.panel.turns[this.panel.turns.length - 1] === this) {
        const again = el("button", "ba-tool ba-regenerate", this.t("tools.regenerate"));
        again.type = "button";
        again.addEventListener("click", () => this.panel.regenerate(this));
        this.toolsEl.appendChild(again);
      }
    }

    ratedTurn() { return this.turnId || (this.done && this.done.turn) || null; }

    // Thumbs up or down, then an optional comment; stored with the turn's trace.
    feedbackBox() {
      const box = el("div", "ba-feedback");
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", this.t("feedback.label"));
      for (const [rating, icon] of [["up", "👍"], ["down", "👎"]]) {
        const b = el("button", "ba-tool ba-thumb", icon);
        b.type = "button";
        b.dataset.rating = rating;
        b.setAttribute("aria-label", this.t("feedback." + rating));
        b.setAttribute("aria-pressed", String(this.rating === rating));
        b.addEventListener("click", () => this.rate(rating, ""));
        box.appendChild(b);
      }
      if (this.rating) {
        const form = el("form", "ba-feedback-form");
        const id = this.panel.idPrefix + "fb-" + this.index;
        const label = el("label", "ba-vh", this.t("feedback.comment"));
        label.htmlFor = id;
        const input = el("input");
        input.id = id;
        input.type = "text";
        input.maxLength = 1000;
        input.placeholder = this.t("feedback.comment");
        input.value = this.ratingComment || "";
        const send = el("button", "ba-tool", this.t("feedback.send"));
        send.type = "submit";
        form.addEventListener("submit", (ev) => {
          ev.preventDefault();
          this.rate(this.rating, input.value.trim());
        });
        form.append(label, input, send);
        box.appendChild(form);
      }
      if (this.ratingNote) box.appendChild(el("span", "ba-feedback-note", this.t(this.ratingNote)));
      return box;
    }

    async rate(rating, comment) {
      this.rating = rating;
      this.ratingComment = comment;
      let ok = false;
      try {
        const token = await this.panel.token();
        const resp = await fetch(this.panel.baseUrl + "/api/v1/assistant/feedback", {
          method: "POST",
          headers: {"Authorization": "Bearer " + token, "Content-Type": "application/json"},
          body: JSON.stringify({turn: this.ratedTurn(), rating: rating, comment: comment}),
        });
        ok = resp.ok;
      } catch (err) { ok = false; }
      this.ratingNote = ok ? (comment ? "feedback.thanksComment" : "feedback.thanks")
        : "feedback.failed";
      this.renderTools();
      const focus = this.toolsEl.querySelector(comment ? ".ba-feedback-note"
        : ".ba-feedback-form input");
      if (focus && focus.tagName === "INPUT") focus.focus();
    }

    async copy(button) {
      const text = this.visibleText();
      let ok = false;
      try {
        await navigator.clipboard.writeText(text);
        ok = true;
      } catch (err) { ok = false; }
      button.textContent = this.t(ok ? "tools.copied" : "tools.copyFailed");
      window.setTimeout(() => { button.textContent = this.t("tools.copy"); }, 2000);
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
      const quotesForm = this.quotesForm();  // its quotes and question are in the answer itself
      const structured = quotesForm ? null : d.structured || null;
      if (structured && structured.outcome === "dont_know" && structured.clarifying_question) {
        this.chromeEl.appendChild(el("p", "ba-clarify",
          this.t("dontKnow.clarify", {text: structured.clarifying_question})));
      }
      const warnings = this.warnings();
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

    warnings() {
      return this.state.warnings().map((w) => this.t(w.key, w.params));
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
        // A weak match is shown as one, never as plain support.
        if (s.weak === true) summary.append(document.createTextNode(" "),
                                            el("span", "ba-badge ba-badge-weak",
                                               this.t("sources.weak")));
        // No score: a rank-fusion score is not a relevance people could read.
        const body = el("div", "ba-excerpt");
        const paras = String(s.excerpt || "").split(/\n\s*\n/)
          .map((para) => para.replace(/\s+/g, " ").trim()).filter((para) => para);
        paras.forEach((text, k) => {
          // An excerpt cut mid-sentence says so.
          const cut = k === 0 && /^[a-zà-ž,;)]/.test(text);
          body.appendChild(el("p", "ba-excerpt-text", (cut ? "… " : "") + text));
        });
        const url = typeof s.url === "string" && /^https:\/\//.test(s.url) ? s.url : null;
        if (url) {
          const p = el("p", "ba-path");
          const a = el("a", "ba-open", this.t("sources.open", {path: s.source || s.title}));
          a.href = url;
          a.target = "_blank";
          a.rel = "noopener noreferrer";
          p.appendChild(a);
          body.appendChild(p);
        } else if (!s.local && s.source) {
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
      const events = this.state.events;
      if (!events.length) {
        this.stepsEl.hidden = true;
        return;
      }
      this.stepsEl.hidden = false;
      const timed = events.filter((e) => !e.restart);
      this.stepsSummary.textContent = this.t("steps.title", {count: timed.length});
      // In the order the steps started (a point event arrives before the step around it ends).
      const ordered = [];
      let run = [];
      for (const e of events) {
        if (e.restart) {
          ordered.push(...run.sort((a, b) => (Number(a.start_ms) || 0) - (Number(b.start_ms) || 0)), e);
          run = [];
        } else {
          run.push(e);
        }
      }
      ordered.push(...run.sort((a, b) => (Number(a.start_ms) || 0) - (Number(b.start_ms) || 0)));
      const total = this.done && this.done.timing && this.done.timing.total_ms
        ? this.done.timing.total_ms
        : Math.max(1, ...timed.map((e) => (Number(e.start_ms) || 0) + (Number(e.ms) || 0)));
      const items = [];
      for (const e of ordered) {
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
        const text = e.ms ? this.t("steps.line", {name: label, took: this.panel.duration(ms)})
          : this.t("steps.point", {name: label, at: this.panel.duration(start)});
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
          this.t("steps.total", {took: this.panel.duration(this.done.timing.total_ms)})));
      }
      this.stepsList.replaceChildren(...items);
    }

    visibleText() {  // the answer as a reader sees it (without screen-reader-only text)
      if (this.quotesForm()) {
        return companion("BecomeAssistantQuotes").text(this.done, (k, p) => this.t(k, p));
      }
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
      this.follow = true;  // keep the newest words in view until the person scrolls up
      this.clock = null;
      this.net = {wsWorked: false, sse: false};  // what the turns' transports found out
      this.ready = false;  // panel-transport.js and panel-turn.js are there
      this.build();
      this.applyLang();
      whenCompanions(() => {
        this.ready = true;
        this.restore();
      }, () => this.setStatus("error.connection"));
      if (this.opts.projectPicker) this.loadProjects();
      window.addEventListener("scroll", () => this.onScroll(), {passive: true});
    }

    // "4.2" in English, "4,2" in Czech.
    seconds(ms) {
      return new Intl.NumberFormat(this.lang, {minimumFractionDigits: 1, maximumFractionDigits: 1})
        .format(Math.max(0, ms) / 1000);
    }

    // A figure of the project's scale, in the interface's number format.
    number(v) {
      return new Intl.NumberFormat(this.lang, {maximumFractionDigits: 2}).format(v);
    }

    async projectChart(projectId) {
      const token = await this.token();
      const resp = await fetch(this.baseUrl + "/api/v1/assistant/projects/" +
        encodeURIComponent(projectId) + "/chart", {headers: {"Authorization": "Bearer " + token}});
      if (!resp.ok) throw await errorFrom(resp, this.t("error.connection"));
      return resp.json();
    }

    duration(ms) {
      return ms < 1000 ? this.t("time.ms", {n: Math.round(ms)})
        : this.t("time.s", {n: this.seconds(ms)});
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
      const toolbar = el("div", "ba-toolbar");
      const newChat = this.bind(el("button", "ba-tool ba-new"), "tools.newChat");
      newChat.type = "button";
      newChat.id = this.id("new");
      newChat.addEventListener("click", () => this.newChat());
      const exportChat = this.bind(el("button", "ba-tool ba-export"), "tools.export");
      exportChat.type = "button";
      exportChat.id = this.id("export");
      exportChat.addEventListener("click", () => this.exportChat());
      toolbar.append(newChat, exportChat);
      this.toolbar = toolbar;
      header.append(heading, langBox, toolbar);
      const intro = this.bind(el("p", "ba-intro"), "panel.intro");

      const conversation = el("section", "ba-conversation");
      conversation.id = this.id("conversation");
      this.bind(conversation, "panel.conversation", "aria-label");
      this.emptyEl = this.bind(el("p", "ba-empty"), "panel.empty");
      conversation.appendChild(this.emptyEl);
      this.conversation = conversation;

      this.statusEl = el("p", "ba-status");
      this.statusEl.id = this.id("status");
      this.spinnerEl = el("span", "ba-spinner");
      this.spinnerEl.setAttribute("aria-hidden", "true");
      this.spinnerEl.hidden = true;
      this.statusText = el("span", "ba-status-text");
      this.statusEl.append(this.spinnerEl, this.statusText);
      this.jumpButton = this.bind(el("button", "ba-jump"), "tools.jump");
      this.jumpButton.type = "button";
      this.jumpButton.id = this.id("jump");
      this.jumpButton.hidden = true;
      this.jumpButton.addEventListener("click", () => {
        this.follow = true;
        this.scrollToLatest();
        this.question.focus({preventScroll: true});
      });
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
        this.projectNote.id = this.id("project-note");
        select.setAttribute("aria-describedby", this.projectNote.id);
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
      this.busyNote = this.bind(el("p", "ba-busy"), "form.busy");
      this.busyNote.id = this.id("busy");
      this.busyNote.setAttribute("role", "status");
      this.busyNote.hidden = true;
      actions.append(ask, stop);
      form.append(qLabel, question, hint, actions, this.busyNote);
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        this.submit();
      });
      this.question = question;
      this.askButton = ask;
      this.stopButton = stop;

      const dock = el("div", "ba-dock");  // the status and the form, fixed at the bottom
      dock.append(this.jumpButton, this.statusEl, form);
      root.append(header, intro, conversation, this.announceEl, dock);
    }

    setLang(lang) {
      const code = normLang(lang);
      if (!code || code === this.lang) return;
      this.lang = code;
      storageSet("localStorage", LANG_KEY, code);
      this.applyLang();
      for (const turn of this.turns) {
        if (turn.finished) turn.renderAll();
        else { turn.relabel(); turn.renderSteps(); }
      }
      if (this.statusKey) this.renderStatus();
      if (this.projectNoteKey) this.setProjectNote(this.projectNoteKey, this.projectNoteError);
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

    // The status line; while a turn runs it shows a spinner and, after a second, the seconds.
    setStatus(key, params) {
      this.statusKey = key;
      this.statusParams = params || null;
      this.renderStatus();
    }

    renderStatus() {
      const running = !!(this.current && !this.current.finished);
      let text = this.statusKey ? this.t(this.statusKey, this.statusParams) : "";
      if (running && this.statusKey !== "status.writing") {
        const elapsed = Math.floor((performance.now() - this.current.startedAt) / 1000);
        if (elapsed >= 1) text += " " + this.t("status.elapsed", {n: elapsed});
      }
      this.statusText.textContent = text;
      this.spinnerEl.hidden = !running || this.statusKey === "status.writing";
      if (running && !this.clock) this.clock = window.setInterval(() => this.renderStatus(), 250);
      if (!running && this.clock) {
        window.clearInterval(this.clock);
        this.clock = null;
      }
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
      let token;
      try {
        token = await this.token();
      } catch (err) {  // no token to be had: a visitor who has not signed in
        this.fillProjects([]);
        this.setProjectNote("form.projectsSignIn", false);
        return;
      }
      try {
        const resp = await fetch(this.baseUrl + "/api/v1/assistant/projects", {
          headers: {"Authorization": "Bearer " + token},
        });
        if (resp.status === 401 || resp.status === 403) {
          // Not signed in (an anonymous visitor): nothing went wrong, there is just no list.
          this.fillProjects([]);
          this.setProjectNote("form.projectsSignIn", false);
          return;
        }
        if (!resp.ok) throw await errorFrom(resp, this.t("form.projectsFailed"));
        const body = await resp.json();
        const projects = Array.isArray(body.projects) ? body.projects : [];
        this.fillProjects(projects);
        this.setProjectNote(projects.length ? null : "form.projectsNone", false);
      } catch (err) {
        this.setProjectNote("form.projectsFailed", true);
      }
    }

    setProjectNote(key, isError) {
      this.projectNoteKey = key;
      this.projectNoteError = isError;
      this.projectNote.hidden = !key;
      this.projectNote.textContent = key ? this.t(key) : "";
      this.projectNote.classList.toggle("ba-project-error", !!isError);
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
      if (!this.ready) {  // a page that loads the companions here: asked before they came
        whenCompanions(() => this.submit());
        return;
      }
      const text = this.question.value.trim();
      if (this.current && !this.current.finished) {
        this.busyNote.hidden = false;  // says why Enter did nothing; the text stays
        return;
      }
      if (!text) {
        this.setStatus("form.empty");
        this.question.focus();
        return;
      }
      this.question.value = "";
      this.ask(text);
    }

    // A nearest section's button under "I don't know": its question, asked as a new turn.
    askAgain(text, projectId) {
      if (this.current && !this.current.finished) {
        this.busyNote.hidden = false;
        return;
      }
      this.ask(text, projectId);
    }

    projectOf(id) {
      if (!id) return null;
      const found = (this.projects || []).find((p) => String(p.id) === String(id));
      return {id: String(id), name: String(found ? found.name || found.id : id)};
    }

    ask(text, projectId) {
      const history = this.historyForAsk();
      // Regenerate asks about the turn's own project, whatever the picker shows now.
      const pid = projectId !== undefined ? projectId : this.projectId;
      const state = new (companion("BecomeAssistantTurnState").TurnState)(
        {project: this.projectOf(pid), now: () => performance.now()});
      const turn = new Turn(this, text, this.turns.length + 1, state);
      const previous = this.turns[this.turns.length - 1];
      this.turns.push(turn);
      this.current = turn;
      this.lastAsk = {message: text, history: history, project_id: pid};
      this.emptyEl.hidden = true;
      this.conversation.appendChild(turn.root);
      this.conversation.setAttribute("aria-busy", "true");
      this.askButton.setAttribute("aria-disabled", "true");
      this.stopButton.hidden = false;
      this.busyNote.hidden = true;
      if (previous) previous.renderTools();  // regenerate moves to the newest answer
      this.follow = true;
      turn.start({type: "ask", message: text, history: history, project_id: pid});
      this.scrollToLatest();
      return turn;
    }

    // Ask the last question again, in place of its answer.
    regenerate(turn) {
      if (this.current && !this.current.finished) return;
      if (turn !== this.turns[this.turns.length - 1]) return;
      this.turns.pop();
      if (turn.done) this.history.splice(-2, 2);
      turn.root.remove();
      this.ask(turn.question, turn.project ? turn.project.id : null);
    }

    newChat() {
      if (this.current && !this.current.finished) this.current.cancel();
      this.turns = [];
      this.history = [];
      this.current = null;
      this.lastDone = null;
      this.conversation.replaceChildren(this.emptyEl);
      this.emptyEl.hidden = false;
      this.busyNote.hidden = true;
      this.setStatus(null);
      storageSet("sessionStorage", SAVE_KEY, null);
      this.question.focus();
    }

    // The conversation as Markdown text, downloaded as a file.
    exportChat() {
      const lines = [];
      for (const turn of this.turns) {
        lines.push("## " + this.t("turn.you"), "", turn.question, "");
        if (turn.project) lines.push("_" + this.t("turn.project", {name: turn.project.name}) + "_", "");
        lines.push("## " + this.t("turn.assistant"), "",
                   turn.done ? turn.done.answer || "" : turn.errorText(), "");
        for (const src of (turn.done && turn.done.sources) || []) {
          lines.push("[" + src.n + "] " + src.title +
                     (sectionPath(src.section, src.title) ? " > " + sectionPath(src.section, src.title) : "") +
                     (src.url ? " " + src.url : ""));
        }
        lines.push("");
      }
      const blob = new Blob([lines.join("\n")], {type: "text/markdown;charset=utf-8"});
      const a = el("a");
      a.href = URL.createObjectURL(blob);
      a.download = "become-assistant-conversation.md";
      document.body.appendChild(a);
      a.click();
      a.remove();
      window.setTimeout(() => URL.revokeObjectURL(a.href), 10000);
      this.lastExport = lines.join("\n");
    }

    // This tab's conversation survives a reload (sessionStorage; new chat clears it).
    save() {
      const turns = this.turns.filter((t) => t.finished).map((t) => ({
        question: t.question, project: t.project, done: t.done, chart: t.chart,
        error: t.error ? {code: t.error.code, message: t.error.message, local: t.error.local,
                          retry_after: t.error.retry_after} : null}));
      storageSet("sessionStorage", SAVE_KEY, JSON.stringify({v: 1, turns: turns,
        history: this.history}));
    }

    restore() {
      let saved = null;
      try { saved = JSON.parse(storageGet("sessionStorage", SAVE_KEY) || "null"); } catch (err) {
        saved = null;
      }
      if (!saved || saved.v !== 1 || !Array.isArray(saved.turns)) return;
      for (const s of saved.turns) {
        if (!s || typeof s.question !== "string") continue;
        const state = companion("BecomeAssistantTurnState").TurnState.restored(s);
        const turn = new Turn(this, s.question, this.turns.length + 1, state);
        turn.chart = s.chart && typeof s.chart === "object" ? s.chart : null;
        turn.answerEl.dataset.state = state.phase;
        this.turns.push(turn);
        this.conversation.appendChild(turn.root);
        if (turn.done) this.lastDone = turn.done;
      }
      this.history = Array.isArray(saved.history) ? saved.history.filter((m) =>
        m && (m.role === "user" || m.role === "assistant") && typeof m.content === "string") : [];
      this.emptyEl.hidden = this.turns.length > 0;
      for (const turn of this.turns) turn.renderAll();
    }

    // ---- following the answer as it is written ----

    nearBottom() {
      const doc = document.scrollingElement || document.documentElement;
      return doc.scrollHeight - (doc.scrollTop + window.innerHeight) <= FOLLOW_SLACK_PX;
    }

    onScroll() {
      this.follow = this.nearBottom();
      this.updateJump();
    }

    updateJump() {
      const running = !!(this.current && !this.current.finished);
      this.jumpButton.hidden = this.follow || !running;
    }

    scrollToLatest() {
      const doc = document.scrollingElement || document.documentElement;
      window.scrollTo({top: doc.scrollHeight, behavior: "instant"});
      this.updateJump();
    }

    followAnswer() {
      if (this.follow) this.scrollToLatest();
      else this.updateJump();
    }

    turnEnded(turn, outcome) {
      if (turn !== this.current) return;
      this.conversation.removeAttribute("aria-busy");
      this.askButton.removeAttribute("aria-disabled");
      this.busyNote.hidden = true;
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
        this.setStatus(null);  // the turn's own note says it was stopped; once is enough
        this.announce(this.t("announce.stopped"));
      } else {
        this.setStatus("status.failed");
        this.announce(this.t("announce.error", {text: turn.errorText()}));
      }
      this.save();
      this.followAnswer();
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
