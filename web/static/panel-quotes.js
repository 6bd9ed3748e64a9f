// The quotes answer form (worker/pipeline/quotes.py) as the reader sees it once the done frame is
// in: the project's figures first (above the chart), then the lead-in and one quotation per quote
// with its source (title › section, the original's link), or "I don't know" with its clarifying
// question and the nearest sections as buttons that ask again. Built from the done frame's
// `structured` block, with text nodes and a fixed set of elements only; no DOM of the panel.
"use strict";

(function () {
  const Render = window.BecomeAssistantRender;
  const el = Render.el;
  const plainHeading = Render.plainHeading;
  // Quotation marks per answer language (shared/language.py QUOTE_MARKS).
  const MARKS = {en: ["“", "”"], cs: ["„", "“"]};

  // A done frame of the quotes form whose structured block can be shown as such.
  function applies(done) {
    const s = done && done.structured;
    return !!(done && done.answer_form === "quotes" && s && typeof s === "object" &&
              s.valid_json !== false && (s.outcome === "answer" || s.outcome === "dont_know"));
  }

  function httpsUrl(url) {
    return typeof url === "string" && /^https:\/\//.test(url) ? url : null;
  }

  // Where a quote (or a nearest section) comes from: {title, section, url}, from the done
  // frame's source n when it has one, else from the quote's own "Title > Section" path.
  function origin(done, n, path) {
    const src = (Array.isArray(done.sources) ? done.sources : []).find((s) => s && s.n === n);
    const parts = String((src && src.section) || path || "").split(" > ")
      .map(plainHeading).filter((part) => part);
    const title = plainHeading(src && src.title) || parts[0] || "";
    if (parts.length && parts[0] === title) parts.shift();
    return {title: title, section: parts.join(" › "), url: httpsUrl(src && src.url)};
  }

  function where(o) {
    return o.section ? o.title + " › " + o.section : o.title;
  }

  // A quote's origin with its interface group's title ("Results › Maximum Error of
  // Estimate"): what an interface text is about, which its section alone does not say.
  function quoteWhere(o, q) {
    const group = typeof q.group === "string" ? plainHeading(q.group) : "";
    return group ? where(o) + " › " + group : where(o);
  }

  // The project's figures, one paragraph a line; null when the turn has none.
  function summary(done, ctx) {
    const project = done.structured.project;
    const lines = project && Array.isArray(project.lines)
      ? project.lines.filter((l) => typeof l === "string" && l.trim()) : [];
    if (!lines.length) return null;
    const section = el("section", "ba-project-figures");
    const id = ctx.id("figures");
    section.setAttribute("aria-labelledby", id);
    const h = el("h3", "ba-subhead", ctx.t("figures.title"));
    h.id = id;
    section.appendChild(h);
    for (const line of lines) {
      const frag = Render.render(line, ctx.render);
      for (const p of frag.querySelectorAll("p")) p.classList.add("ba-figure-line");
      section.appendChild(frag);
    }
    return section;
  }

  // One quotation: the verbatim text, then [n] title › section and the original's link.
  function quotation(done, q, ctx) {
    const fig = el("figure", q.found === false ? "ba-quotation ba-quote-missing" : "ba-quotation");
    if (typeof q.language === "string" && /^[a-z]{2}$/.test(q.language)) fig.lang = q.language;
    const o = origin(done, q.n, q.section);
    // Sources off (ASSISTANT_SHOW_SOURCES): the server sends no source list, so no quote
    // names one either.
    const attributed = Array.isArray(done.sources) && done.sources.length > 0;
    const block = el("blockquote", "ba-quote-text");
    if (o.url && attributed) block.setAttribute("cite", o.url);
    // The passage's Markdown (code, emphasis, list items) as the page shows it; a [n] inside
    // a quote is the documentation's text, never a citation. A line of a code block (a file
    // tree's entry, a formula, a command) is code as it stands: `__init__.py` stays itself.
    if (q.code === true) {
      block.appendChild(el("code", "ba-quote-code", String(q.text || "")));
      // A file tree's entry: where it lives in the tree.
      if (typeof q.path === "string" && q.path.trim()) {
        block.appendChild(el("div", "ba-quote-path", q.path.trim()));
      }
    } else {
      block.appendChild(Render.render(String(q.text || ""), {noCitations: true}));
    }
    fig.appendChild(block);
    const cap = el("figcaption", "ba-quote-source");
    if (typeof q.n === "number") cap.append(ctx.citation(q.n), document.createTextNode(" "));
    cap.appendChild(el("span", "ba-quote-where", quoteWhere(o, q)));
    if (attributed) fig.appendChild(cap);
    if (o.url) {
      const a = el("a", "ba-open ba-quote-open", ctx.t("quotes.open"));
      a.href = o.url;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      a.appendChild(el("span", "ba-vh", ": " + quoteWhere(o, q)));
      cap.append(document.createTextNode(" · "), a);
    }
    if (q.found === false) {
      cap.appendChild(el("span", "ba-quote-mark", " ⚠ " + ctx.t("quotes.notFound")));
    }
    if (typeof q.note === "string" && q.note.trim()) {
      fig.appendChild(el("p", "ba-quote-note", q.note));
    }
    return fig;
  }

  // "I don't know": the sentence, the clarifying question, the nearest sections as buttons.
  function dontKnow(done, ctx) {
    const s = done.structured;
    const frag = el("div", "ba-dont-know");
    const question = typeof s.clarifying_question === "string" ? s.clarifying_question.trim() : "";
    let said = String(done.answer || "");
    if (question && said.includes(question)) said = said.replace(question, "");
    // What the answer says besides the project's lines (they are shown above) and the question.
    for (const line of (s.project && s.project.lines) || []) {
      if (typeof line === "string" && line) said = said.replace(line, "");
    }
    said = said.trim();
    if (said) {
      const box = el("div", "ba-dont-know-said");
      box.appendChild(Render.render(said, ctx.render));
      frag.appendChild(box);
    }
    if (question) frag.appendChild(el("p", "ba-clarify", question));
    const nearest = (Array.isArray(s.nearest) ? s.nearest : [])
      .filter((x) => x && typeof x.ask === "string" && x.ask.trim());
    if (nearest.length) {
      const box = el("div", "ba-nearest");
      box.setAttribute("role", "group");
      const id = ctx.id("nearest");
      box.setAttribute("aria-labelledby", id);
      const label = el("p", "ba-nearest-title", ctx.t("dontKnow.nearest"));
      label.id = id;
      const list = el("ul", "ba-nearest-list");
      for (const x of nearest) {
        const o = origin(done, x.n, [x.title, x.section].filter(Boolean).join(" > "));
        const title = plainHeading(x.title) || o.title;
        const section = x.section ? sectionOf(x.section, title) : o.section;
        const b = el("button", "ba-ask-again");
        b.type = "button";
        b.appendChild(el("span", "ba-ask-again-title", title));
        if (section) b.appendChild(el("span", "ba-ask-again-section", " › " + section));
        b.title = ctx.t("dontKnow.askTitle", {text: x.ask});
        b.addEventListener("click", () => ctx.ask(x.ask));
        const li = el("li");
        li.appendChild(b);
        list.appendChild(li);
      }
      box.append(label, list);
      frag.appendChild(box);
    }
    return frag;
  }

  // A section's path without its page's title, parts joined by ›; a page's opening section
  // (the title its only heading) is no section of its own, so its button names the page once.
  function sectionOf(section, title) {
    const parts = String(section).split(" > ").map(plainHeading).filter((p) => p);
    if (parts.length && parts[0] === title) parts.shift();
    return parts.join(" › ");
  }

  // The answer under the figures: the lead-in and the quotations, or "I don't know".
  function body(done, ctx) {
    const s = done.structured;
    if (s.outcome === "dont_know") return dontKnow(done, ctx);
    const frag = document.createDocumentFragment();
    const quotes = Array.isArray(s.quotes) ? s.quotes.filter((q) => q && q.text) : [];
    if (!quotes.length) return frag;  // a project answer may have its figures and no quote
    const lead = typeof s.lead_in === "string" && s.lead_in.trim() ? s.lead_in.trim()
      : ctx.t("quotes.leadIn");
    // Quotes that barely answer (the worker's `hedged`): their lead-in reads as a caution.
    frag.appendChild(el("p", s.hedged === true ? "ba-lead-in ba-hedged" : "ba-lead-in", lead));
    const list = el("div", "ba-quotations");
    list.setAttribute("role", "list");
    list.setAttribute("aria-label", ctx.t("quotes.list"));
    for (const q of quotes) {
      const item = quotation(done, q, ctx);
      item.setAttribute("role", "listitem");
      list.appendChild(item);
    }
    frag.appendChild(list);
    return frag;
  }

  // The answer as plain text, as a reader would copy it: figures, lead-in, quotes, sources.
  function text(done, t) {
    const s = done.structured;
    const out = [];
    const lines = (s.project && Array.isArray(s.project.lines) ? s.project.lines : [])
      .filter((l) => typeof l === "string" && l.trim());
    if (lines.length) out.push(lines.join("\n"));
    if (s.outcome === "dont_know") {
      let said = String(done.answer || "");
      for (const line of lines) said = said.replace(line, "");
      out.push(said.trim());
      const nearest = (Array.isArray(s.nearest) ? s.nearest : []).filter((x) => x && x.ask);
      if (nearest.length) {
        out.push(t("dontKnow.nearest") + "\n" + nearest.map((x) => "- " +
          [plainHeading(x.title), x.section ? sectionOf(x.section, plainHeading(x.title)) : ""]
            .filter(Boolean).join(" › ")).join("\n"));
      }
      return out.filter(Boolean).join("\n\n");
    }
    const quotes = Array.isArray(s.quotes) ? s.quotes.filter((q) => q && q.text) : [];
    if (quotes.length) {
      out.push(typeof s.lead_in === "string" && s.lead_in.trim() ? s.lead_in.trim()
        : t("quotes.leadIn"));
    }
    // The answer's own quotation marks, as the worker streams them (shared/language.py).
    const [opening, closing] = MARKS[done.language] || MARKS.en;
    for (const q of quotes) {
      const o = origin(done, q.n, q.section);
      const attributed = Array.isArray(done.sources) && done.sources.length > 0;
      const path = q.code === true && typeof q.path === "string" && q.path.trim()
        ? "\n(" + q.path.trim() + ")" : "";
      out.push(opening + String(q.text).trim() + closing + path +
               (attributed
                 ? "\n[" + q.n + "] " + quoteWhere(o, q) + (o.url ? " " + o.url : "") : "") +
               (q.note ? "\n" + q.note : ""));
    }
    return out.join("\n\n");
  }

  window.BecomeAssistantQuotes = {applies: applies, summary: summary, body: body, text: text};
})();
