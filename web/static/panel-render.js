// A small Markdown subset rendered on the DOM (docs/spec/behaviour.md B-31): paragraphs, bold,
// italic, lists, inline code and line breaks. Headings, tables, images, links and block quotes
// become their text; raw HTML stays text. Only text nodes and the elements p, strong, em, ul, ol,
// li, code, br are created here; each number of a citation ([n], [1-3], [Zdroj 2], 【1】, ...)
// becomes whatever ctx.citation(n) returns (with ctx.noCitations they stay text). Nothing is ever
// parsed as HTML (no innerHTML, outerHTML, insertAdjacentHTML or document.write).
"use strict";

(function () {
  const MAX_DEPTH = 8;
  const PUNCT = /[!-/:-@[-`{-~]/;
  const ALNUM = /[\p{L}\p{N}]/u;
  const SPACE = /\s/;

  const FENCE = /^\s{0,3}(`{3,}|~{3,})/;
  const HEADING = /^\s{0,3}#{1,6}(?:\s+(.*?))?\s*#*\s*$/;
  const RULE = /^\s{0,3}([-*_])(?:\s*\1){2,}\s*$/;
  const TABLE_SEP = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;
  const TABLE_ROW = /^\s*\|.*\|\s*$/;
  const QUOTE = /^\s{0,3}>\s?/;
  const BULLET = /^(\s*)([-*+])\s+(.*)$/;
  const NUMBERED = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;

  // Citation forms, as the server's check reads them (worker/pipeline/markers.py): [n], lists
  // and ranges ([1, 2], [1 2], [1-3], [3–1]), labels in English, Czech and Russian ([Source 1],
  // [Zdroj 2], [Pasáž 3], [doc1], [Источник 1]), full-width brackets and digits (【1】, ［１］).
  const CITE_S = "[ \\t\\u00a0\\u202f\\u2009]";
  const CITE_W = "[\\p{L}\\p{N}_]*";
  const CITE_LABEL = "(?:sources?|src|passages?|docs?|documents?|refs?|references?|citations?" +
    "|chunks?|excerpts?|fragments?|contexts?|snippets?" +
    ["zdroj", "pasáž", "dokument", "úryv", "odkaz", "kontext", "citac", "источник", "фрагмент",
      "документ", "отрыв", "пассаж", "ссылк", "контекст", "цитат"].map((w) => "|" + w + CITE_W)
      .join("") + ")";
  const CITE_PREFIX = "(?:" + CITE_LABEL + "\\.?:?" + CITE_S + "*(?:(?:#|№|č\\.|no\\.|nr\\.)" +
    CITE_S + "*)?|(?:#|№)" + CITE_S + "*)";
  const CITE_DIGITS = "[0-9０-９]{1,3}";
  const CITE_RANGE = "(?:" + CITE_S + "*[-–—‒−~]" + CITE_S + "*|" + CITE_S + "+(?:to|až|до)" +
    CITE_S + "+)";
  const CITE_ITEM = "(?:" + CITE_PREFIX + ")?" + CITE_DIGITS + "(?:" + CITE_RANGE + "(?:" +
    CITE_PREFIX + ")?" + CITE_DIGITS + ")?";
  const CITE_SEP = "(?:" + CITE_S + "*[,;、，]" + CITE_S + "*(?:(?:and|a|и)" + CITE_S + "+)?|" +
    CITE_S + "+(?:and|a|и|&)" + CITE_S + "+|" + CITE_S + "+)";
  // [1 234]: one number grouped by a space, not a list [1 2].
  const CITE_SPACE_THOUSANDS = new RegExp("^" + CITE_S + "*[1-9][0-9]{0,2}(?:" + CITE_S +
    "[0-9]{3})+" + CITE_S + "*$", "u");
  const CITATION = new RegExp("^[\\[［【〔〖]" + CITE_S + "*" + CITE_ITEM + "(?:" + CITE_SEP +
    CITE_ITEM + ")*" + CITE_S + "*[\\]］】〕〗]", "iu");
  const CITE_ITEMS = new RegExp("(" + CITE_DIGITS + ")(?:" + CITE_RANGE + "(?:" + CITE_PREFIX +
    ")?(" + CITE_DIGITS + "))?", "giu");
  const CITE_LABELLED = new RegExp(CITE_PREFIX, "iu");
  const CITE_OPEN = "[［【〔〖";
  const CITE_FULL_WIDTH = "［【〔〖］】〕〗";
  const CITE_MAX_LENGTH = 64;
  const CITE_MAX_RANGE = 50;

  function citeNumber(digits) {
    return Number(digits.replace(/[０-９]/g, (d) => String.fromCharCode(d.charCodeAt(0) - 0xFEE0)));
  }

  // The citation starting at s[i]: {end, numbers}, or null. ctx.tripleIsCitation(nums) settles
  // an unlabelled [a, b, c] (a fuzzy triple or three citations); without it a triple is text.
  function citationAt(s, i, ctx) {
    if (!CITE_OPEN.includes(s[i])) return null;
    const m = CITATION.exec(s.slice(i, i + CITE_MAX_LENGTH + 1));
    if (!m || m[0].length > CITE_MAX_LENGTH) return null;
    const raw = m[0];
    const items = [];
    for (const it of raw.slice(1, -1).matchAll(CITE_ITEMS)) {
      items.push([citeNumber(it[1]), it[2] === undefined ? null : citeNumber(it[2])]);
    }
    const labelled = CITE_FULL_WIDTH.includes(raw[0]) || CITE_LABELLED.test(raw);
    if (!labelled && (items.length > 1 || items[0][1] !== null)) {
      if (items.some(([a, b]) => a === 0 || b === 0)) return null;  // [0, 1]: an interval
      if (CITE_SPACE_THOUSANDS.test(raw.slice(1, -1))) return null;  // [1 234]: thousands
      if (raw.includes(";") && /[0-9],[0-9]/.test(raw)) return null;  // [10,5; 15,5; 21,5]
      const firsts = items.map(([a]) => a);
      const triple = items.length === 3 && items.every(([, b]) => b === null) &&
        firsts[0] <= firsts[1] && firsts[1] <= firsts[2];
      if (triple && !(ctx && ctx.tripleIsCitation && ctx.tripleIsCitation(firsts))) return null;
    }
    const numbers = [];
    for (const [a, b] of items) {
      let nums = [a];
      if (b !== null) {
        const lo = Math.min(a, b);
        const hi = Math.max(a, b);
        nums = hi - lo <= CITE_MAX_RANGE ? Array.from({length: hi - lo + 1}, (_, k) => lo + k)
          : [lo, hi];
      }
      for (const n of nums) if (!numbers.includes(n)) numbers.push(n);
    }
    return {end: i + raw.length, numbers: numbers};
  }

  // Text without citations (and the space before each), as earlier answers go into history.
  function stripCitations(text) {
    let out = "";
    let i = 0;
    while (i < text.length) {
      const cite = citationAt(text, i, null);
      if (cite) {
        out = out.replace(/\s$/, "");
        i = cite.end;
        continue;
      }
      out += text[i];
      i++;
    }
    return out;
  }

  // An element with an optional class and text: the panel's scripts all build their DOM with
  // this one (panel.js, panel-answer.js, panel-quotes.js, panel-chart.js load after this file).
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  // A heading as plain text: no heading marks, backticks, emphasis or link syntax.
  function plainHeading(text) {
    return String(text || "").replace(/^#+\s*/, "").replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/`+/g, "").replace(/(\*\*|\*)(\S(?:.*?\S)?)\1/g, "$2")
      // Underscores mark emphasis only at a word's edge: "access_token" keeps its own.
      .replace(/(^|[^\w])(__|_)([^\s_](?:.*?[^\s_])?)\2(?!\w)/g, "$1$3")
      .replace(/\s+/g, " ").trim();
  }

  // ---- inline --------------------------------------------------------------------------

  function runLength(s, i, ch) {
    let n = 0;
    while (s[i + n] === ch) n++;
    return n;
  }

  // The end of a code span opened at i (a run of backticks), or -1.
  function codeSpanEnd(s, i) {
    const run = runLength(s, i, "`");
    let j = i + run;
    while (j < s.length) {
      const k = s.indexOf("`", j);
      if (k < 0) return -1;
      const r = runLength(s, k, "`");
      if (r === run) return k;
      j = k + r;
    }
    return -1;
  }

  // [text](target) starting at i: {text, end} or null. Brackets and parentheses may nest.
  function matchLink(s, i) {
    let depth = 0;
    let j = i;
    for (; j < s.length; j++) {
      const c = s[j];
      if (c === "\\") { j++; continue; }
      if (c === "[") depth++;
      else if (c === "]" && --depth === 0) break;
    }
    if (j >= s.length || s[j + 1] !== "(") return null;
    let k = j + 2;
    let parens = 1;
    for (; k < s.length; k++) {
      const c = s[k];
      if (c === "\\") { k++; continue; }
      if (c === "(") parens++;
      else if (c === ")" && --parens === 0) break;
      else if (c === "\n") return null;
    }
    if (k >= s.length) return null;
    return {text: s.slice(i + 1, j), end: k + 1};
  }

  function opens(s, i, ch, run) {
    const next = s[i + run];
    if (next === undefined || SPACE.test(next)) return false;
    return !(ch === "_" && i > 0 && ALNUM.test(s[i - 1]));
  }

  function closes(s, j, ch, run) {
    if (j === 0 || SPACE.test(s[j - 1])) return false;
    return !(ch === "_" && j + run < s.length && ALNUM.test(s[j + run]));
  }

  // Where the delimiter (ch repeated run times) that closes the one at i sits, or -1.
  // Code spans are skipped; a single delimiter skips over a nested double one.
  function findCloser(s, from, ch, run) {
    let j = from;
    while (j < s.length) {
      const c = s[j];
      if (c === "\\") { j += 2; continue; }
      if (c === "`") {
        const end = codeSpanEnd(s, j);
        if (end >= 0) { j = end + runLength(s, end, "`"); continue; }
        j += runLength(s, j, "`");
        continue;
      }
      if (c === ch) {
        const r = runLength(s, j, ch);
        if (r === run && closes(s, j, ch, run)) return j;
        if (run === 1 && r === 2) {
          const inner = findCloser(s, j + 2, ch, 2);
          j = inner >= 0 ? inner + 2 : j + 2;
          continue;
        }
        if (r >= run && closes(s, j, ch, run) && r !== 2 * run) return j;
        j += r;
        continue;
      }
      j++;
    }
    return -1;
  }

  function matchEmphasis(s, i) {
    const ch = s[i];
    const run = runLength(s, i, ch);
    const tries = run >= 3 ? [3, 2, 1] : run === 2 ? [2] : [1];
    for (const n of tries) {
      if (!opens(s, i, ch, n)) continue;
      const j = findCloser(s, i + n, ch, n);
      if (j > i + n) return {n: n, inner: s.slice(i + n, j), end: j + n};
    }
    return null;
  }

  function parseInline(s, parent, ctx, depth) {
    if (depth > MAX_DEPTH) {
      parent.appendChild(document.createTextNode(s));
      return;
    }
    let buf = "";
    const flush = () => {
      if (buf) parent.appendChild(document.createTextNode(buf));
      buf = "";
    };
    let i = 0;
    while (i < s.length) {
      const c = s[i];
      if (c === "\\" && i + 1 < s.length && PUNCT.test(s[i + 1])) {
        buf += s[i + 1];
        i += 2;
        continue;
      }
      if (c === "`") {
        const run = runLength(s, i, "`");
        const end = codeSpanEnd(s, i);
        if (end >= 0) {
          flush();
          let body = s.slice(i + run, end).replace(/\n/g, " ");
          if (body.length > 2 && body[0] === " " && body[body.length - 1] === " ") {
            body = body.slice(1, -1);
          }
          const code = el("code");
          code.textContent = body;
          parent.appendChild(code);
          i = end + run;
        } else {
          buf += s.slice(i, i + run);
          i += run;
        }
        continue;
      }
      if (c === "!" && s[i + 1] === "[") {
        const img = matchLink(s, i + 1);
        if (img) {  // an image becomes its alt text
          flush();
          parseInline(img.text, parent, ctx, depth + 1);
          i = img.end;
          continue;
        }
      }
      if (CITE_OPEN.includes(c) && !ctx.noCitations) {
        const cite = citationAt(s, i, ctx);
        if (cite && s[cite.end] !== "(") {
          flush();  // each number its own link: [1-3] becomes [1][2][3]
          for (const n of cite.numbers) parent.appendChild(ctx.citation(n));
          i = cite.end;
          continue;
        }
      }
      if (c === "[") {
        const link = matchLink(s, i);
        if (link) {  // a link becomes its text
          flush();
          parseInline(link.text, parent, ctx, depth + 1);
          i = link.end;
          continue;
        }
      }
      if (c === "*" || c === "_") {
        const em = matchEmphasis(s, i);
        if (em) {
          flush();
          let outer;
          let inner;
          if (em.n === 3) {
            outer = el("strong");
            inner = el("em");
            outer.appendChild(inner);
          } else {
            outer = inner = el(em.n === 2 ? "strong" : "em");
          }
          parseInline(em.inner, inner, ctx, depth + 1);
          parent.appendChild(outer);
          i = em.end;
          continue;
        }
        const run = runLength(s, i, c);
        buf += s.slice(i, i + run);
        i += run;
        continue;
      }
      buf += c;
      i++;
    }
    flush();
  }

  // ---- blocks --------------------------------------------------------------------------

  function tableRowText(line) {
    return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|")
      .map((cell) => cell.trim()).filter((cell) => cell).join(" · ");
  }

  // Lines -> blocks: {type: "p", lines} | {type: "code", lines} | {type: "list", ordered,
  // start, indent, items: [{lines, children: [list]}]}.
  function parseBlocks(text) {
    const lines = text.replace(/\r\n?/g, "\n").split("\n");
    const blocks = [];
    let para = null;
    let listStack = [];  // open lists, outermost first
    let blankSeen = false;

    const closePara = () => { para = null; };
    const closeLists = () => { listStack = []; };

    function addPara(line) {
      if (!para) {
        para = {type: "p", lines: []};
        blocks.push(para);
      }
      para.lines.push(line);
    }

    function addItem(indent, ordered, start, content) {
      closePara();
      while (listStack.length && indent < listStack[listStack.length - 1].indent) {
        listStack.pop();
      }
      let top = listStack[listStack.length - 1];
      if (top && indent >= top.indent + 2 && top.items.length) {
        const parentItem = top.items[top.items.length - 1];
        const sub = {type: "list", ordered, start, indent, items: []};
        parentItem.children.push(sub);
        listStack.push(sub);
        top = sub;
      } else if (!top || top.ordered !== ordered) {
        if (top) listStack.pop();
        const list = {type: "list", ordered, start, indent, items: []};
        if (listStack.length) {
          const outer = listStack[listStack.length - 1];
          outer.items[outer.items.length - 1].children.push(list);
        } else {
          blocks.push(list);
        }
        listStack.push(list);
        top = list;
      }
      top.items.push({lines: [content], children: []});
    }

    for (let idx = 0; idx < lines.length; idx++) {
      let line = lines[idx];
      const fence = FENCE.exec(line);
      if (fence) {  // a fenced block: its lines as code, nothing inside is parsed
        closePara();
        closeLists();
        const code = {type: "code", lines: []};
        blocks.push(code);
        for (idx++; idx < lines.length; idx++) {
          if (lines[idx].trim().startsWith(fence[1])) break;
          code.lines.push(lines[idx]);
        }
        blankSeen = false;
        continue;
      }
      while (QUOTE.test(line)) line = line.replace(QUOTE, "");
      if (!line.trim()) {
        closePara();
        blankSeen = true;
        continue;
      }
      if (RULE.test(line)) {  // a rule (or a setext heading's underline) is dropped
        closePara();
        continue;
      }
      if (TABLE_SEP.test(line) && line.includes("|")) continue;  // a table's header rule
      const heading = HEADING.exec(line);
      if (heading) {
        closePara();
        closeLists();
        if (heading[1]) blocks.push({type: "p", lines: [heading[1]]});
        blankSeen = false;
        continue;
      }
      const bullet = BULLET.exec(line);
      const numbered = bullet ? null : NUMBERED.exec(line);
      if (bullet || numbered) {
        const m = bullet || numbered;
        addItem(m[1].replace(/\t/g, "    ").length, !!numbered,
                numbered ? Number(numbered[2]) : 1, m[3]);
        blankSeen = false;
        continue;
      }
      const content = TABLE_ROW.test(line) ? tableRowText(line) : line.trim();
      const top = listStack[listStack.length - 1];
      if (top && (!blankSeen || /^\s{2,}/.test(line))) {  // continues the last item
        top.items[top.items.length - 1].lines.push(content);
        blankSeen = false;
        continue;
      }
      closeLists();
      addPara(content);
      blankSeen = false;
    }
    return blocks;
  }

  function appendLines(parent, lines, ctx) {
    lines.forEach((line, n) => {
      if (n) parent.appendChild(el("br"));
      parseInline(line, parent, ctx, 0);
    });
  }

  function renderList(list, ctx) {
    const node = el(list.ordered ? "ol" : "ul");
    if (list.ordered && list.start !== 1) node.setAttribute("start", String(list.start));
    for (const item of list.items) {
      const li = el("li");
      appendLines(li, item.lines, ctx);
      for (const child of item.children) li.appendChild(renderList(child, ctx));
      node.appendChild(li);
    }
    return node;
  }

  // Render text into a fragment; ctx.citation(n) makes the node for a [n] marker.
  function render(text, ctx) {
    const frag = document.createDocumentFragment();
    for (const block of parseBlocks(text || "")) {
      if (block.type === "list") {
        frag.appendChild(renderList(block, ctx));
      } else if (block.type === "code") {
        const p = el("p");
        const code = el("code");
        block.lines.forEach((line, n) => {
          if (n) code.appendChild(el("br"));
          code.appendChild(document.createTextNode(line));
        });
        p.appendChild(code);
        frag.appendChild(p);
      } else {
        const p = el("p");
        appendLines(p, block.lines, ctx);
        frag.appendChild(p);
      }
    }
    return frag;
  }

  window.BecomeAssistantRender = {render: render, parseBlocks: parseBlocks,
    stripCitations: stripCitations, el: el, plainHeading: plainHeading};
})();
