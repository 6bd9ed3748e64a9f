// One turn of the BeCoMe assistant panel: the view of a TurnState (panel-turn.js) fed by a
// Transport (panel-transport.js): the question, the answer as it is written, its sources,
// checks, chart, steps and tools. The session around the turns (the form, storage, sign-in,
// the conversation) is panel.js. Everything the server sends is written with text nodes and a
// fixed set of elements; nothing is ever parsed as HTML. Loaded as a companion of panel.js
// (window.BecomeAssistantAnswer).
"use strict";

(function () {
  const I18N = window.BecomeAssistantI18n;
  const Render = window.BecomeAssistantRender;
  const LANGS = ["en", "cs"];
  const CANCELLED = 499;  // a stopped answer's error code
  const CZECH_LETTERS = /[ěščřžýáíéůúťďňĚŠČŘŽÝÁÍÉŮÚŤĎŇ]/;

  function companion(name) { return window[name]; }

  const el = Render.el;
  const plainHeading = Render.plainHeading;

  // "Title > Section > Subsection" as plain text, the title not repeated.
  function sectionPath(section, title) {
    const parts = String(section || "").split(" > ")
      .map(plainHeading).filter((part) => part);
    if (parts.length && parts[0] === plainHeading(title)) parts.shift();
    return parts.join(" > ");
  }

  // Whether a refusal's sentence already says when to try again.
  function saysWhen(text, seconds) {
    return new RegExp("\\b" + Number(seconds) + "\\s*(s\\b|sec|seconds|sekund)", "i").test(text) ||
      /try again in|zkuste to (prosím )?znovu za/i.test(text);
  }

  // An icon drawn in code (no emoji font needed): a thumb, up or down.
  const SVG_NS = "http://www.w3.org/2000/svg";
  const THUMB = "M2 10h4v11H2zM8 21h9.2a2 2 0 0 0 2-1.6l1.6-7A2 2 0 0 0 18.8 10H14l.9-4.6" +
    "A1.7 1.7 0 0 0 13.2 3.6L8 10z";
  function thumbIcon(rating) {
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("width", "18");
    svg.setAttribute("height", "18");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    svg.setAttribute("class", "ba-icon");
    const path = document.createElementNS(SVG_NS, "path");
    path.setAttribute("d", THUMB);
    if (rating === "down") path.setAttribute("transform", "rotate(180 12 12)");
    svg.appendChild(path);
    return svg;
  }

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
      // Under a regenerated answer that came out the same: why (every model call is at
      // temperature 0, so the same question and sources give the same answer).
      this.sameNoteEl = el("p", "ba-same-note");
      this.sameNoteEl.hidden = true;
      this.previousAnswer = null;
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
                 this.sameNoteEl, this.chartEl, this.chromeEl, this.toolsEl, this.stepsEl);
      art.append(user, bot);
      this.root = art;
      this.relabel();
    }

    // ---- connection and frames ----

    start(askFrame) {
      this.connectLink();
      this.apply(this.state.start());
      this.link.start(askFrame);
    }

    // A turn that was running when the page was reloaded: on from its last seq (the server's
    // replay log has the rest), or, when it was never accepted, nothing to resume.
    resume() {
      if (!this.state.turnId) {
        this.apply(this.state.fail({code: 0, local: "error.reloaded",
          message: this.t("error.reloaded")}));
        return;
      }
      this.connectLink();
      this.state.startedAt = performance.now();
      const out = [];
      this.state.setStatus("status.resuming", out);
      this.apply(out);
      if (this.text) {
        this.answerEl.dataset.state = "streaming";
        this.renderAnswer();
      }
      this.renderSteps();
      this.link.resume(this.state.turnId, this.state.seq);
    }

    connectLink() {
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
        frame: (f) => {
          this.apply(this.state.accept(f));
          if (!this.finished) this.panel.saveRunning(this);
        },
        reconnecting: (since) => this.apply(this.state.reconnecting(
          since === undefined ? undefined : performance.now() - (Date.now() - since))),
        connected: () => this.apply(this.state.reconnected()),
        failed: (f) => this.apply(this.state.fail(
          f.local ? Object.assign({message: this.t(f.local)}, f) : f)),
      });
    }

    // Reconnect now (the Reconnect button, the browser's online event).
    retryNow() { return !!(this.link && this.link.retryNow()); }

    // Whether the server ever took the question (a refused one can simply be asked again).
    get started() { return !!this.turnId; }

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
          // A refusal that names its wait is tried again when the wait is over
          // (docs/spec/behaviour.md B-2).
          const e = this.error;
          if (e && !this.started && e.retry_after > 0 && e.code !== CANCELLED) {
            this.retryAt = performance.now() + e.retry_after * 1000;
          }
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
      // The wait once: not again when the server's sentence already names it.
      if (f.retry_after && !saysWhen(text, f.retry_after)) {
        text += " " + this.t("error.retryAfter", {seconds: f.retry_after});
      }
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

    // A citation of a section listed twice goes to its one entry (the first n of the section).
    sourceAnchor(n) {
      const shown = this.sourceAlias && this.sourceAlias[n] ? this.sourceAlias[n] : n;
      return this.panel.idPrefix + "src-" + this.index + "-" + shown;
    }

    // The done frame's sources, one per section: [{source, numbers}], and this.sourceAlias
    // mapping every n to the n of the entry shown for it.
    sourceGroups() {
      const sources = (this.done && Array.isArray(this.done.sources)) ? this.done.sources : [];
      const groups = [];
      const byKey = new Map();
      this.sourceAlias = {};
      for (const src of sources) {
        const key = [src.source || src.url || src.title || "", sectionPath(src.section, src.title)]
          .join("\u0000");
        let group = byKey.get(key);
        if (!group) {
          group = {source: src, numbers: []};
          byKey.set(key, group);
          groups.push(group);
        }
        group.numbers.push(src.n);
        this.sourceAlias[src.n] = group.source.n;
      }
      return groups;
    }

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
      this.renderSameNote();
      this.renderChart();
      this.renderChrome();
      this.renderTools();
      this.renderSteps();
    }

    // The project chart, drawn from the project data (never from the model's text), at the
    // width it is shown (its labels stay readable on a phone). A project's chart is drawn once
    // per chat: a later turn about the same project has it folded.
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
      this.drawChart(Math.round(this.root.clientWidth || this.panel.root.clientWidth || 600));
    }

    // The figure at `width`; drawn again at the width it really got when that differs.
    drawChart(width, refit) {
      const Chart = window.BecomeAssistantChart;
      this.chartWidth = width;
      const figure = Chart.build(this.chart, (key, params) => this.t(key, params),
                                 (v) => this.panel.number(v), {width: width});
      if (!figure) {
        this.chartEl.replaceChildren();
        this.chartEl.hidden = true;
        return;
      }
      const shownAbove = this.panel.turns.some((t) => t !== this && t.index < this.index &&
        t.project && t.project.id === this.project.id && t.chart);
      if (shownAbove) {
        const fold = this.chartEl.querySelector(".ba-chart-fold") || el("details", "ba-chart-fold");
        const summary = el("summary", "", this.t("chart.again", {name: this.project.name}));
        fold.replaceChildren(summary, figure);
        if (!fold.dataset.watched) {
          fold.dataset.watched = "1";
          fold.addEventListener("toggle", () => { if (fold.open) this.fitChart(); });
        }
        this.chartEl.replaceChildren(fold);
      } else {
        this.chartEl.replaceChildren(figure);
      }
      this.chartEl.hidden = false;
      if (!refit) this.fitChart();
    }

    fitChart() {
      const pic = this.chartEl.querySelector(".ba-chart-svg");
      const real = pic ? Math.round(pic.getBoundingClientRect().width) : 0;
      if (real && Math.abs(real - this.chartWidth) > 2) this.drawChart(real, true);
    }

    // A regenerated answer that is the same as before says why: the model does not sample
    // (the done frame's `deterministic`; the quotes form always is).
    renderSameNote() {
      const d = this.done;
      const same = !!(d && this.previousAnswer !== null && d.answer === this.previousAnswer);
      this.sameNoteEl.hidden = !same;
      if (same) {
        this.sameNoteEl.textContent = this.t(d.deterministic || d.answer_form === "quotes"
          ? "note.sameDeterministic" : "note.same");
      }
    }

    // A quiet note when the answer is in another language than the question (the done frame's
    // `language_differs`, checked in code).
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
      const last = this.panel.turns[this.panel.turns.length - 1] === this;
      if (last && this.error && !this.started && this.error.code !== CANCELLED) {
        // Never taken by the server (refused, or not reached): the same question once more.
        const again = el("button", "ba-tool ba-try-again", this.t("tools.tryAgain"));
        again.type = "button";
        again.addEventListener("click", () => this.panel.retryTurn(this));
        this.countdownEl = el("span", "ba-countdown");
        this.countdownEl.setAttribute("aria-live", "off");
        this.toolsEl.append(again, this.countdownEl);
        this.tickRetry();
      } else if (last) {
        const again = el("button", "ba-tool ba-regenerate", this.t("tools.regenerate"));
        again.type = "button";
        again.addEventListener("click", () => this.panel.regenerate(this));
        this.toolsEl.appendChild(again);
      }
    }

    // The countdown of a refusal's automatic retry; at zero the question is asked again (when
    // nothing else runs and this is still the newest turn).
    tickRetry() {
      window.clearTimeout(this.retryTimer);
      const last = this.panel.turns[this.panel.turns.length - 1] === this;
      if (!this.retryAt || !this.countdownEl || !last || !this.root.isConnected) return;
      const left = Math.ceil((this.retryAt - performance.now()) / 1000);
      if (left <= 0 && this.panel.idle()) {
        this.retryAt = null;
        this.panel.retryTurn(this);
        return;
      }
      this.countdownEl.textContent = this.t("tools.tryingAgain", {n: Math.max(0, left)});
      this.retryTimer = window.setTimeout(() => this.tickRetry(), 1000);
    }

    ratedTurn() { return this.turnId || (this.done && this.done.turn) || null; }

    // Thumbs up or down, then an optional comment; stored with the turn's trace.
    feedbackBox() {
      const box = el("div", "ba-feedback");
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", this.t("feedback.label"));
      for (const rating of ["up", "down"]) {
        const b = el("button", "ba-tool ba-thumb");
        b.appendChild(thumbIcon(rating));
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
      // A question the server never took is a refusal, not a failure: said calmly.
      this.noteEl.className = this.error.code === CANCELLED ? "ba-note ba-note-calm"
        : this.started ? "ba-note ba-note-error" : "ba-note ba-note-refusal";
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
      const groups = this.sourceGroups();
      if (groups.length) this.chromeEl.appendChild(this.sourcesSection(groups, openSources));
    }

    // The checks' warnings as sentences (panel-turn.js wordWarning), in the panel's language.
    warnings() {
      const table = I18N[this.panel.lang] || I18N.en;
      const has = (key) => table[key] !== undefined || I18N.en[key] !== undefined;
      const word = companion("BecomeAssistantTurnState").wordWarning;
      return this.state.warnings().map((w) => word(w, has, (key, params) => this.t(key, params)))
        .filter((text) => text !== null);
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

    sourcesSection(groups, openSources) {
      const section = el("section", "ba-sources");
      const headingId = this.panel.idPrefix + "sources-" + this.index;
      section.setAttribute("aria-labelledby", headingId);
      const h = el("h3", "ba-subhead", this.t("sources.title"));
      h.id = headingId;
      const list = el("ul", "ba-source-list");
      for (const group of groups) {
        const s = group.source;
        const li = el("li", "ba-source");
        li.id = this.sourceAnchor(s.n);
        li.dataset.n = String(s.n);
        const details = el("details");
        if (openSources.has(String(s.n))) details.open = true;
        const summary = el("summary");
        summary.append(el("span", "ba-source-n", "[" + group.numbers.join(", ") + "]"),
                       document.createTextNode(" "),
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
        // The optional rerank's verdict (docs/spec/behaviour.md B-15), on its own scale: a model's
        // 2 or 1.
        if (s.rerank === 2 || s.rerank === 1) {
          summary.append(document.createTextNode(" "),
                         el("span", "ba-badge", this.t("sources.rerank" + s.rerank)));
        }
        const body = el("div", "ba-excerpt");
        body.appendChild(this.excerpt(s.excerpt));
        // The search's score inside the details, with what kind of score it is
        // (docs/spec/behaviour.md B-15): a rank fusion's, a cosine's or BM25's are not comparable
        // with one another.
        if (typeof s.score === "number" && ["hybrid", "dense", "bm25"].includes(s.strategy)) {
          body.appendChild(el("p", "ba-score", this.t("sources.score." + s.strategy,
                                                      {score: s.score.toFixed(2)})));
        }
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

    // An excerpt as the answer's small Markdown (bold, lists; never HTML); its [n] are plain
    // text (they are the documentation's, not this answer's). One cut mid-sentence says so.
    excerpt(text) {
      let source = String(text || "").trim();
      if (/^[a-zà-ž,;)]/.test(source)) source = "… " + source;
      const frag = Render.render(source, {citation: (n) => document.createTextNode("[" + n + "]"),
        tripleIsCitation: () => false});
      for (const node of Array.from(frag.childNodes)) {
        if (node.nodeType === 1) node.classList.add("ba-excerpt-text");
      }
      return frag;
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

  window.BecomeAssistantAnswer = {Turn: Turn, sectionPath: sectionPath, plainHeading: plainHeading};
})();
