// The project chart under a project answer: drawn in code from the project data the
// server reads with the person's own token (never from model text). Each expert's triangle
// (lower, peak, upper) on the project's scale, the mean, the median and the best compromise, and
// the maximum error around the best compromise. The figure is one focusable image with a
// summary for screen readers; the same numbers are in a table below it. It is drawn at the width
// it is shown, so its labels keep their size (12 px) on a phone; the best compromise carries its
// value; many experts are drawn fainter so the three results stay readable.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const H = 212;
  const PAD = 28;
  const BASE = 144;  // y of the axis
  const TOP = 36;  // y of a peak (the best compromise's label sits above it)
  const MANY = 12;  // more experts than this: drawn fainter

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  const el = window.BecomeAssistantRender.el;

  function finite(x) { return typeof x === "number" && Number.isFinite(x); }

  // The x range: the project's scale, widened to every value drawn.
  function range(data) {
    const values = [];
    for (const e of data.experts || []) values.push(e.lower, e.upper);
    for (const k of ["best_compromise", "mean", "median"]) {
      if (data[k]) values.push(data[k].lower, data[k].upper);
    }
    let lo = finite(data.scale && data.scale.min) ? data.scale.min : Math.min(...values);
    let hi = finite(data.scale && data.scale.max) ? data.scale.max : Math.max(...values);
    lo = Math.min(lo, ...values.filter(finite));
    hi = Math.max(hi, ...values.filter(finite));
    if (!(hi > lo)) hi = lo + 1;
    return [lo, hi];
  }

  function triangle(x, f, cls) {
    return svg("polygon", {class: cls, points: [[x(f.lower), BASE], [x(f.peak), TOP],
      [x(f.upper), BASE]].map((p) => p.join(",")).join(" ")});
  }

  // A label's anchor that keeps it inside the figure near x.
  function anchorNear(x, W, room) {
    if (x < room) return ["start", Math.max(4, x - 8)];
    if (x > W - room) return ["end", Math.min(W - 4, x + 8)];
    return ["middle", x];
  }

  // The figure and its table, or null when the data has nothing to draw. opts.width: the width
  // in CSS pixels the figure is shown at (600 when not known).
  function build(data, t, num, opts) {
    const bc = data.best_compromise;
    if (!bc || !(data.experts || []).length) return null;
    const W = Math.max(240, Math.min(1200, Math.round((opts && opts.width) || 600)));
    const [lo, hi] = range(data);
    const x = (v) => PAD + ((v - lo) / (hi - lo)) * (W - 2 * PAD);
    const unit = data.scale && data.scale.unit ? " " + data.scale.unit : "";
    const figure = el("figure", "ba-chart");
    const summary = t("chart.summary", {
      n: data.experts.length, bc: num(bc.peak) + unit, mean: data.mean ? num(data.mean.peak) : "–",
      median: data.median ? num(data.median.peak) : "–",
      err: finite(data.max_error) ? num(data.max_error) : "–"});
    const pic = svg("svg", {viewBox: "0 0 " + W + " " + H, role: "img", class: "ba-chart-svg",
                            focusable: "true", tabindex: "0", "aria-label": summary});
    const expertClass = data.experts.length > MANY ? "ba-chart-expert ba-chart-expert-many"
      : "ba-chart-expert";
    for (const e of data.experts) pic.appendChild(triangle(x, e, expertClass));
    if (data.mean) pic.appendChild(triangle(x, data.mean, "ba-chart-mean"));
    if (data.median) pic.appendChild(triangle(x, data.median, "ba-chart-median"));
    pic.appendChild(triangle(x, bc, "ba-chart-bc"));
    // The best compromise's value written at its peak.
    const bcText = t("chart.bestCompromise") + " " + num(bc.peak) + unit;
    const [bcAnchor, bcX] = anchorNear(x(bc.peak), W, bcText.length * 3.6);
    pic.appendChild(svg("text", {class: "ba-chart-label ba-chart-bc-label", x: bcX, y: TOP - 10,
                                 "text-anchor": bcAnchor}, bcText));
    pic.appendChild(svg("line", {class: "ba-chart-axis", x1: PAD, y1: BASE, x2: W - PAD, y2: BASE}));
    for (const v of [lo, (lo + hi) / 2, hi]) {
      pic.appendChild(svg("line", {class: "ba-chart-axis", x1: x(v), y1: BASE, x2: x(v),
                                   y2: BASE + 5}));
      pic.appendChild(svg("text", {class: "ba-chart-label", x: x(v), y: BASE + 18,
                                   "text-anchor": "middle"}, num(v)));
    }
    if (finite(data.max_error)) {  // ± the maximum error around the best compromise's centroid
      const y = BASE + 34;
      const a = x(bc.centroid - data.max_error);
      const b = x(bc.centroid + data.max_error);
      pic.appendChild(svg("line", {class: "ba-chart-err", x1: a, y1: y, x2: b, y2: y}));
      for (const end of [a, b]) {
        pic.appendChild(svg("line", {class: "ba-chart-err", x1: end, y1: y - 5, x2: end,
                                     y2: y + 5}));
      }
      // Under the bar, so it never runs into it on a narrow screen.
      const errText = t("chart.maxError") + " ±" + num(data.max_error);
      const [errAnchor, errX] = anchorNear((a + b) / 2, W, errText.length * 3.6);
      pic.appendChild(svg("text", {class: "ba-chart-label ba-chart-err-label", x: errX, y: y + 22,
                                   "text-anchor": errAnchor}, errText));
    }
    figure.appendChild(pic);
    const legend = el("ul", "ba-chart-legend");
    for (const [cls, key] of [["ba-chart-key-expert", "chart.experts"],
      ["ba-chart-key-mean", "chart.mean"], ["ba-chart-key-median", "chart.median"],
      ["ba-chart-key-bc", "chart.bestCompromise"]]) {
      const li = el("li");
      const key1 = el("span", "ba-chart-key " + cls);
      key1.setAttribute("aria-hidden", "true");
      li.append(key1, document.createTextNode(t(key)));
      legend.appendChild(li);
    }
    const caption = el("figcaption", "ba-chart-caption", t("chart.caption",
      {name: data.name || "", unit: unit.trim() || "–"}));
    if (data.hidden) caption.textContent += " " + t("chart.hidden", {n: data.hidden});
    if (data.more_experts) caption.textContent += " " + t("chart.more", {n: data.more_experts});
    figure.append(legend, caption);
    figure.appendChild(table(data, t, num));
    return figure;
  }

  function table(data, t, num) {
    const details = el("details", "ba-chart-table");
    details.appendChild(el("summary", "", t("chart.table")));
    const tbl = el("table");
    const head = el("tr");
    for (const key of ["chart.col.what", "chart.col.lower", "chart.col.peak", "chart.col.upper"]) {
      const th = el("th", "", t(key));
      th.scope = "col";
      head.appendChild(th);
    }
    const thead = el("thead");
    thead.appendChild(head);
    const body = el("tbody");
    const row = (label, f, extra) => {
      const tr = el("tr");
      const th = el("th", "", label);
      th.scope = "row";
      tr.appendChild(th);
      for (const v of f ? [f.lower, f.peak, f.upper] : [null, null, null]) {
        tr.appendChild(el("td", "", finite(v) ? num(v) : "–"));
      }
      if (extra) tr.classList.add(extra);
      body.appendChild(tr);
    };
    row(t("chart.bestCompromise"), data.best_compromise, "ba-chart-row-key");
    row(t("chart.mean"), data.mean, "ba-chart-row-key");
    row(t("chart.median"), data.median, "ba-chart-row-key");
    const err = el("tr", "ba-chart-row-key");
    const th = el("th", "", t("chart.maxError"));
    th.scope = "row";
    const td = el("td", "", finite(data.max_error) ? num(data.max_error) : "–");
    td.colSpan = 3;
    err.append(th, td);
    body.appendChild(err);
    for (const e of data.experts) row(e.name, e);
    tbl.append(thead, body);
    details.appendChild(tbl);
    return details;
  }

  window.BecomeAssistantChart = {build: build};
})();
