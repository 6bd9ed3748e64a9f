// The BeCoMe assistant panel (protocol v1): ticket -> WebSocket -> ask -> streamed frames.
// This file is the session shell: the form, the conversation, storage, tokens and the panel's
// own requests. Each turn's view is panel-answer.js; its frames go through its state machine
// (panel-turn.js) and its connection (panel-transport.js), both without the DOM.
// Embeddable in any page: load panel-i18n.js, panel-render.js and this file (and panel.css);
// panel-transport.js, panel-turn.js, panel-quotes.js and panel-answer.js are loaded from beside
// this file unless the page has loaded them already. Then either put data-become-assistant on an element or call
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
  const LANG_KEY = "become-assistant.lang";  // the person's explicit choice (localStorage)
  const SAVE_KEY = "become-assistant.conversation";  // this tab's conversation (sessionStorage)
  // The turn still being written (its id, last seq and text so far): a reload carries it on.
  const RUNNING_KEY = "become-assistant.running";
  // The anonymous demo token: the same visitor after a reload (a turn is resumed by its owner).
  const ANON_KEY = "become-assistant.anonymous-token";
  // The project picked in this tab: the picker shows it again after a reload.
  const PROJECT_KEY = "become-assistant.project";
  // Every key of this tab's session: signing out removes them all.
  const SESSION_KEYS = [SAVE_KEY, RUNNING_KEY, ANON_KEY, PROJECT_KEY];
  const MAX_QUESTION = 4000;  // the length of one message (docs/spec/behaviour.md section 9)
  const COUNTER_FROM = 3500;  // the counter shows from here on
  const UNDO_MS = 15000;  // how long New chat can be undone
  const FOLLOW_SLACK_PX = 48;
  // The scripts this one needs, by the global each defines; loaded from where this one came.
  const COMPANIONS = {BecomeAssistantTransport: "panel-transport.js",
    BecomeAssistantTurnState: "panel-turn.js", BecomeAssistantQuotes: "panel-quotes.js",
    BecomeAssistantAnswer: "panel-answer.js"};
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

  const el = Render.el;

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

  // The anonymous demo token (dev and test profiles), fetched once per tab: kept in
  // sessionStorage, so a reload is the same visitor and can carry on its running answer. A
  // server without demo tokens (404) needs a sign-in; any other refusal keeps its sentence.
  async function anonymousToken(baseUrl, lang) {
    const kept = storageGet("sessionStorage", ANON_KEY);
    if (kept) return kept;
    const resp = await fetch((baseUrl || "") + "/api/v1/dev/token", {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({user: "demo"}),
    });
    if (resp.status === 404) {
      throw new PanelError(translate(lang || "en", "error.signInNeeded"), 401, undefined, false);
    }
    if (!resp.ok) throw await errorFrom(resp, translate(lang || "en", "error.signIn"));
    const token = (await resp.json()).access_token;
    storageSet("sessionStorage", ANON_KEY, token);
    return token;
  }

  // The BeCoMe app keeps its access token in localStorage under become_token.
  function appStoredToken() {
    try { return window.localStorage.getItem("become_token"); } catch (err) { return null; }
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
      // The project picked before a reload, chosen again once the list has it.
      this.projectWanted = this.opts.projectPicker && this.opts.projectId === undefined
        ? storageGet("sessionStorage", PROJECT_KEY) : null;
      this.follow = true;  // keep the newest words in view until the person scrolls up
      this.clock = null;
      this.net = {wsWorked: false, sse: false};  // what the turns' transports found out
      this.ready = false;  // panel-transport.js and panel-turn.js are there
      this.build();
      this.applyLang();
      this.renderToolbar();
      whenCompanions(() => {
        this.ready = true;
        this.restore();
      }, () => this.setStatus("error.connection"));
      if (this.opts.projectPicker) this.loadProjects();
      window.addEventListener("scroll", () => this.onScroll(), {passive: true});
      // Back online: a dropped answer tries again at once instead of after its pause.
      window.addEventListener("online", () => {
        if (this.current && !this.current.finished) this.current.retryNow();
      });
      let resizing = null;
      window.addEventListener("resize", () => {
        window.clearTimeout(resizing);
        resizing = window.setTimeout(() => {
          for (const turn of this.turns) if (turn.chart && !turn.chartEl.hidden) turn.fitChart();
          this.growQuestion();
        }, 150);
      });
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
      this.exportButton = exportChat;
      toolbar.append(newChat, exportChat);
      this.toolbar = toolbar;
      header.append(heading, langBox, toolbar);
      const intro = this.bind(el("p", "ba-intro"), "panel.intro");

      const conversation = el("section", "ba-conversation");
      conversation.id = this.id("conversation");
      this.bind(conversation, "panel.conversation", "aria-label");
      this.emptyEl = el("div", "ba-empty-box");
      this.emptyEl.appendChild(this.bind(el("p", "ba-empty"), "panel.empty"));
      this.undoEl = el("p", "ba-undo");
      this.undoEl.setAttribute("role", "status");
      this.undoText = el("span");
      const undo = this.bind(el("button", "ba-tool ba-undo-button"), "tools.undo");
      undo.type = "button";
      undo.id = this.id("undo");
      undo.addEventListener("click", () => this.undoNewChat());
      this.undoEl.append(this.undoText, document.createTextNode(" "), undo);
      this.undoEl.hidden = true;
      this.emptyEl.appendChild(this.undoEl);
      conversation.appendChild(this.emptyEl);
      this.conversation = conversation;

      this.statusEl = el("p", "ba-status");
      this.statusEl.id = this.id("status");
      this.spinnerEl = el("span", "ba-spinner");
      this.spinnerEl.setAttribute("aria-hidden", "true");
      this.spinnerEl.hidden = true;
      this.statusText = el("span", "ba-status-text");
      // While a dropped answer waits for its next try: try now.
      this.reconnectButton = this.bind(el("button", "ba-tool ba-reconnect"), "tools.reconnect");
      this.reconnectButton.type = "button";
      this.reconnectButton.id = this.id("reconnect");
      this.reconnectButton.hidden = true;
      this.reconnectButton.addEventListener("click", () => {
        if (this.current && !this.current.finished) this.current.retryNow();
      });
      this.statusEl.append(this.spinnerEl, this.statusText, this.reconnectButton);
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
        select.addEventListener("change", () => {
          this.projectId = select.value || null;
          this.projectWanted = null;
          storageSet("sessionStorage", PROJECT_KEY, this.projectId);
        });
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
      // One line that grows as the question does (up to a third of the screen); no maxLength: a
      // longer paste is kept whole and the counter says what to shorten (docs/spec/behaviour.md
      // section 9).
      question.rows = 1;
      this.bind(question, "form.label", "placeholder");  // the label is not shown on a phone
      question.setAttribute("aria-describedby", this.id("hint") + " " + this.id("counter"));
      question.addEventListener("input", () => {
        this.growQuestion();
        this.renderCounter();
      });
      question.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing && !ev.ctrlKey &&
            !ev.altKey && !ev.metaKey) {
          ev.preventDefault();
          this.submit();
        }
      });
      const hint = this.bind(el("p", "ba-hint"), "form.hint");
      hint.id = this.id("hint");
      this.counter = el("p", "ba-counter");
      this.counter.id = this.id("counter");
      this.counter.hidden = true;
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
      form.append(qLabel, question, this.counter, hint, actions, this.busyNote);
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

    // The question box as tall as its text (one line when empty), at most a third of the screen.
    growQuestion() {
      const q = this.question;
      if (!q) return;
      q.style.height = "auto";  // CSSOM, allowed by the page's style-src 'self'
      const max = Math.max(80, Math.round(window.innerHeight / 3));
      q.style.height = Math.min(max, q.scrollHeight + 2) + "px";
      q.style.overflowY = q.scrollHeight + 2 > max ? "auto" : "hidden";
    }

    // Near the limit a counter; over it a plain sentence, and the question is not sent.
    renderCounter() {
      const n = this.question.value.length;
      this.counter.hidden = n < COUNTER_FROM;
      const over = n > MAX_QUESTION;
      this.counter.classList.toggle("ba-counter-over", over);
      this.counter.textContent = n < COUNTER_FROM ? "" : over
        ? this.t("form.tooLong", {n: this.number(n), max: this.number(MAX_QUESTION),
          over: this.number(n - MAX_QUESTION)})
        : this.t("form.counter", {n: this.number(n), max: this.number(MAX_QUESTION)});
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
      this.renderCounter();
      this.renderUndo();
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
      const dropped = running && this.statusKey === "status.reconnecting";
      if (running && this.statusKey !== "status.writing") {
        // After a drop the seconds count from the drop, not from the question.
        const since = dropped && this.current.state.droppedAt !== null
          ? this.current.state.droppedAt : this.current.startedAt;
        const elapsed = Math.floor((performance.now() - since) / 1000);
        if (elapsed >= 1) text += " " + this.t("status.elapsed", {n: elapsed});
      }
      this.statusText.textContent = text;
      this.reconnectButton.hidden = !dropped;
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
      const app = appStoredToken();
      if (app) return app;
      if (fresh) storageSet("sessionStorage", ANON_KEY, null);  // expired: a new visitor
      return anonymousToken(this.baseUrl, this.lang);
    }

    // Whether a person is signed in (their projects can be listed): the host page says so
    // (options.signedIn()), else the BeCoMe app's stored token does.
    signedIn() {
      if (this.opts.signedIn) return !!this.opts.signedIn();
      return !!appStoredToken();
    }

    async ticket() {
      let resp = await this.requestTicket(await this.token(false));
      if (resp.status === 401) resp = await this.requestTicket(await this.token(true));
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
      if (!this.signedIn()) {
        // An anonymous visitor has no projects: not asked for (no refused request, no 401).
        this.fillProjects([]);
        this.setProjectNote("form.projectsSignIn", false);
        return;
      }
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
      const keep = this.projectId || this.projectWanted;
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
      // A list that came (not the empty one shown while it loads, or to a visitor) settles it.
      if (projects.length) this.projectWanted = null;
    }

    // ---- conversation ----

    // At most the last 20 messages and about 6,000 characters, oldest dropped first
    // (docs/spec/behaviour.md B-19); earlier answers lose their [n] markers.
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
      if (text.length > MAX_QUESTION) {  // the counter says by how much; nothing is cut
        this.renderCounter();
        this.question.focus();
        return;
      }
      this.question.value = "";
      this.renderCounter();
      this.growQuestion();
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
      const turn = this.addTurn(text, state);
      this.lastAsk = {message: text, history: history, project_id: pid};
      this.running(turn);
      turn.start({type: "ask", message: text, history: history, project_id: pid});
      this.saveRunning(turn);
      this.scrollToLatest();
      return turn;
    }

    addTurn(text, state) {
      const turn = new (companion("BecomeAssistantAnswer").Turn)(this, text, this.turns.length + 1,
                                                                state);
      const previous = this.turns[this.turns.length - 1];
      this.turns.push(turn);
      this.dropUndo();
      this.emptyEl.hidden = true;
      this.conversation.appendChild(turn.root);
      if (previous) previous.renderTools();  // regenerate moves to the newest answer
      this.renderToolbar();
      return turn;
    }

    // The form while a turn runs.
    running(turn) {
      this.current = turn;
      this.conversation.setAttribute("aria-busy", "true");
      this.askButton.setAttribute("aria-disabled", "true");
      this.stopButton.hidden = false;
      this.busyNote.hidden = true;
      this.follow = true;
    }

    idle() { return !(this.current && !this.current.finished); }

    // Ask the last question again, in place of its answer.
    regenerate(turn) {
      if (!this.idle()) return;
      if (turn !== this.turns[this.turns.length - 1]) return;
      this.turns.pop();
      if (turn.done) this.history.splice(-2, 2);
      turn.root.remove();
      const again = this.ask(turn.question, turn.project ? turn.project.id : null);
      // An answer that comes out the same says why (the model does not sample).
      again.previousAnswer = turn.done ? String(turn.done.answer || "") : null;
      return again;
    }

    // A question the server never took (refused, or not reached): asked again in its place.
    retryTurn(turn) {
      if (!this.idle() || turn !== this.turns[this.turns.length - 1] || turn.started) return;
      this.turns.pop();
      turn.root.remove();
      this.ask(turn.question, turn.project ? turn.project.id : null);
    }

    // The turn being written, for a reload: its question, project, id, last seq and text.
    saveRunning(turn) {
      if (turn && turn !== this.current) return;  // cleared away (new chat, sign-out)
      if (!turn || turn.finished) {
        storageSet("sessionStorage", RUNNING_KEY, null);
        return;
      }
      storageSet("sessionStorage", RUNNING_KEY, JSON.stringify(Object.assign(
        {v: 1, question: turn.question, project: turn.project}, turn.state.snapshot())));
    }

    // Clear the conversation; New chat can be undone for a while, signing out cannot.
    clearChat(undoable) {
      if (this.current && !this.current.finished) this.current.cancel();
      const kept = undoable ? storageGet("sessionStorage", SAVE_KEY) : null;
      for (const turn of this.turns) window.clearTimeout(turn.retryTimer);
      this.turns = [];
      this.history = [];
      this.current = null;
      this.lastDone = null;
      this.conversation.replaceChildren(this.emptyEl);
      this.emptyEl.hidden = false;
      this.busyNote.hidden = true;
      this.setStatus(null);
      storageSet("sessionStorage", SAVE_KEY, null);
      storageSet("sessionStorage", RUNNING_KEY, null);
      this.dropUndo();
      if (kept) {
        this.undoSaved = kept;
        this.undoTimer = window.setTimeout(() => this.dropUndo(), UNDO_MS);
        this.renderUndo();
      }
      this.renderToolbar();
    }

    newChat() {
      this.clearChat(true);
      this.question.focus();
    }

    undoNewChat() {
      const kept = this.undoSaved;
      this.dropUndo();
      if (!kept || this.turns.length) return;
      storageSet("sessionStorage", SAVE_KEY, kept);
      this.restore();
      this.question.focus();
    }

    dropUndo() {
      window.clearTimeout(this.undoTimer);
      this.undoSaved = null;
      this.renderUndo();
    }

    // "The chat was cleared. Undo" in place of the empty chat's hint, while it can be undone.
    renderUndo() {
      if (!this.undoEl) return;
      this.undoEl.hidden = !this.undoSaved;
      this.undoText.textContent = this.t("tools.cleared");
    }

    // Signing out ends the tab's session: the chat, its saved copy, the running answer, the
    // picked project and the anonymous token are gone, also across a reload (Export then has
    // nothing).
    signOut() {
      this.clearChat(false);
      this.projectWanted = null;
      for (const key of SESSION_KEYS) storageSet("sessionStorage", key, null);
    }

    renderToolbar() {
      // Export of an empty chat would download an empty file: it says it has nothing.
      const empty = !this.turns.length;
      if (empty) this.exportButton.setAttribute("aria-disabled", "true");
      else this.exportButton.removeAttribute("aria-disabled");
    }

    // The conversation as Markdown text with its date and each answer's warnings, downloaded.
    exportChat() {
      if (!this.turns.length) return;
      const Answer = companion("BecomeAssistantAnswer");
      const when = new Date();
      const lines = ["# " + this.t("panel.title"), "",
        this.t("export.date", {date: new Intl.DateTimeFormat(this.lang,
          {dateStyle: "long", timeStyle: "short"}).format(when)}), ""];
      for (const turn of this.turns) {
        lines.push("## " + this.t("turn.you"), "", turn.question, "");
        if (turn.project) lines.push("_" + this.t("turn.project", {name: turn.project.name}) + "_", "");
        lines.push("## " + this.t("turn.assistant"), "",
                   turn.done ? (turn.quotesForm() ? turn.visibleText() : turn.done.answer || "")
                     : turn.errorText(), "");
        const warnings = turn.done ? turn.warnings() : [];
        if (warnings.length) {
          lines.push("> **" + this.t("checks.title") + "**");
          for (const w of warnings) lines.push("> - " + w);
          lines.push("");
        }
        for (const src of (turn.done && turn.done.sources) || []) {
          const section = Answer.sectionPath(src.section, src.title);
          lines.push("[" + src.n + "] " + src.title + (section ? " > " + section : "") +
                     (src.url ? " " + src.url : ""));
        }
        lines.push("");
      }
      const text = lines.join("\n");
      const blob = new Blob([text], {type: "text/markdown;charset=utf-8"});
      const a = el("a");
      a.href = URL.createObjectURL(blob);
      a.download = "become-assistant-conversation-" + when.toISOString().slice(0, 10) + ".md";
      document.body.appendChild(a);
      a.click();
      a.remove();
      window.setTimeout(() => URL.revokeObjectURL(a.href), 10000);
      this.lastExport = text;
    }

    // This tab's conversation survives a reload (sessionStorage; new chat clears it).
    save() {
      const turns = this.turns.filter((t) => t.finished).map((t) => ({
        question: t.question, project: t.project, done: t.done, chart: t.chart, turn: t.turnId,
        error: t.error ? {code: t.error.code, message: t.error.message, local: t.error.local,
                          retry_after: t.error.retry_after} : null}));
      storageSet("sessionStorage", SAVE_KEY, JSON.stringify({v: 1, turns: turns,
        history: this.history}));
    }

    restore() {
      let saved = null;
      let running = null;
      try {
        saved = JSON.parse(storageGet("sessionStorage", SAVE_KEY) || "null");
        running = JSON.parse(storageGet("sessionStorage", RUNNING_KEY) || "null");
      } catch (err) {
        saved = null;
      }
      const States = companion("BecomeAssistantTurnState").TurnState;
      if (saved && saved.v === 1 && Array.isArray(saved.turns)) {
        for (const s of saved.turns) {
          if (!s || typeof s.question !== "string") continue;
          const state = States.restored(s);
          if (typeof s.turn === "string") state.turnId = s.turn;
          const turn = this.addTurn(s.question, state);
          turn.chart = s.chart && typeof s.chart === "object" ? s.chart : null;
          turn.answerEl.dataset.state = state.phase;
          if (turn.done) this.lastDone = turn.done;
        }
        this.history = Array.isArray(saved.history) ? saved.history.filter((m) =>
          m && (m.role === "user" || m.role === "assistant") && typeof m.content === "string")
          : [];
      }
      this.emptyEl.hidden = this.turns.length > 0;
      for (const turn of this.turns) turn.renderAll();
      // The answer that was being written when the page was reloaded carries on.
      if (running && running.v === 1 && typeof running.question === "string") {
        const state = States.resumed(running, {now: () => performance.now()});
        const turn = this.addTurn(running.question, state);
        this.running(turn);
        turn.resume();
        this.scrollToLatest();
      }
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
        // A question the server never took was not "not finished": its note says what happened.
        this.setStatus(turn.started ? "status.failed" : null);
        this.announce(this.t("announce.error", {text: turn.errorText()}));
      }
      this.saveRunning(null);
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

  // anonymousToken(lang): the tab's anonymous demo token (a host page without its own sign-in).
  window.BecomeAssistant = {mount: mount, t: translate, pickLang: pickLang,
    anonymousToken: (lang) => anonymousToken("", lang),
    forgetAnonymousToken: () => storageSet("sessionStorage", ANON_KEY, null)};

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
