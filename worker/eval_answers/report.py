"""The run's report: an HTML page with PNG plots (matplotlib, Agg backend), no hand drawing."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared.checks import GRADED
from worker.eval_answers.stats import METRICS

# The graded checks' flags (shared/checks.py), in the registry's order.
FLAGS = tuple(c.metric for c in GRADED if c.metric)

PLOTTED = ("facts_delivered", "unsupported_claims", "language_match", "citations_used",
           "invalid_citations", "number_flags", "prompt_echo")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def plot_breakdown(path: Path, title: str, groups: dict[str, dict[str, Any]]) -> None:
    """Grouped bars: one group per language (or category), one bar per metric."""
    plt = _pyplot()
    names = list(groups)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(names) + 3), 3.8), dpi=100)
    width = 0.8 / len(PLOTTED)
    for k, metric in enumerate(PLOTTED):
        vals = [groups[g].get(metric) for g in names]
        xs = [i + (k - (len(PLOTTED) - 1) / 2) * width for i in range(len(names))]
        ax.bar(xs, [v if v is not None else 0 for v in vals], width, label=metric)
    ax.set_xticks(range(len(names)), [f"{g}\n(n={groups[g]['n']})" for g in names])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of answers")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_comparison(path: Path, comparison: dict[str, Any], a: str, b: str) -> None:
    """Horizontal bars of B - A per metric with 95% bootstrap intervals."""
    plt = _pyplot()
    # Shares only: seconds and tokens live on other scales (they stay in the table).
    metrics = [m for m in METRICS if m in comparison and not m.endswith(("_tokens", "_s"))]
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(metrics) + 1.4), dpi=100)
    for i, m in enumerate(metrics):
        c = comparison[m]
        lo, hi = c["ci95"]
        color = "tab:gray" if not c["excludes_zero_95"] else (
            "tab:green" if c["verdict"] == "B better" else "tab:red")
        ax.barh(i, c["mean_diff"], color=color, alpha=0.7)
        ax.errorbar(c["mean_diff"], i, xerr=[[c["mean_diff"] - lo], [hi - c["mean_diff"]]],
                    fmt="none", ecolor="black", capsize=3)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(metrics)), metrics)
    ax.invert_yaxis()
    ax.set_xlabel(f"{b} − {a}\n(mean difference over questions, 95% paired bootstrap "
                  "interval; green/red: interval excludes zero)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}"
    return html.escape(str(v))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c if isinstance(c, _Raw) else _fmt(c)}</td>"
                                    for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


class _Raw(str):
    """HTML we built ourselves (links), not text to escape."""


def _anchor(slot: str, qid: str) -> str:
    return f"{slot}-{qid}".replace(" ", "_")


def worst_answers(rows: Sequence[dict[str, Any]], k: int = 8) -> list[dict[str, Any]]:
    """The answers to read first: fewest facts delivered, then most unsupported claims."""
    def badness(r: dict[str, Any]) -> tuple[float, float, float]:
        return (-(1 - (r["facts_delivered"] if r.get("facts_delivered") is not None else 1)),
                -(r.get("unsupported_count") or 0),
                -sum(r.get(f) or 0 for f in FLAGS))
    return sorted(rows, key=badness)[:k]


def write_report(out: Path, result: dict[str, Any], answers: dict[str, dict[str, Any]],
                 questions: dict[str, Any], verdicts: dict[tuple[str, str], Any]) -> Path:
    """report.html and its PNGs in the run directory."""
    setups = result["setups"]
    parts = [f"<h1>Answer evaluation: {html.escape(' vs '.join(s['provenance']['name'] for s in setups.values()))}"
             "</h1>",
             f"<p>Questions: <code>{html.escape(result['questions_file'])}</code> "
             f"(sha256 {result['questions_sha256'][:16]}…), {result['questions']} questions. "
             f"Command: <code>{html.escape(result.get('command', ''))}</code></p>"]
    for slot, s in setups.items():
        prov = s["provenance"]
        parts.append(f"<h2>Setup {slot}: {html.escape(prov['name'])}</h2>")
        parts.append("<p>" + html.escape(
            f"mode {prov['mode']}, answer form {prov['answer_form']}, models "
            + ", ".join(f"{r}={m['model']} ({m['provider']})"
                        for r, m in prov['models'].items() if m)
            + f", index {', '.join(s['index_versions']) or '?'}") + "</p>")
        parts.append(f"<details><summary>settings and prompt hashes</summary><pre>"
                     f"{html.escape(str(prov['settings']))}\n{html.escape(str(prov['prompts']))}"
                     "</pre></details>")
        for w in s.get("warnings") or ():
            parts.append(f'<p style="color:#b45309"><b>Warning:</b> {html.escape(w)}</p>')
        m = s["metrics"]
        rows = [[name, METRICS[name][1], m["overall"].get(name), m["overall"].get(f"{name}_n")]
                for name in METRICS]
        parts.append(_table(["metric", "what", "overall", "n"], rows))
        if s.get("acceptance"):
            acc = s["acceptance"]
            parts.append(f"<p><b>Acceptance rule</b> <code>{html.escape(acc['rule'])}</code>: "
                         f"{'ACCEPTED' if acc['accepted'] else 'NOT ACCEPTED'}</p>")
        for key, title in (("by_language", "language"), ("by_category", "category")):
            png = f"{slot}_{key}.png"
            plot_breakdown(out / png, f"{prov['name']}: per {title}", m[key])
            parts.append(f'<p><img src="{png}" alt="metrics per {title}"></p>')
            names = list(m[key])
            parts.append(_table([title, *PLOTTED, "n"],
                                [[g, *[m[key][g].get(p) for p in PLOTTED], m[key][g]["n"]]
                                 for g in names]))
        worst = worst_answers(s["rows"])
        parts.append("<h3>Worst answers</h3>")
        parts.append(_table(["question", "language", "facts", "unsupported", "flags"], [[
            _Raw(f'<a href="#{_anchor(slot, r["id"])}">{html.escape(r["id"])}</a>'),
            r["language"], r.get("facts_delivered"), r.get("unsupported_count"),
            ", ".join(f for f in (*FLAGS, "error") if r.get(f))] for r in worst]))
    if result.get("comparison"):
        a, b = (setups[x]["provenance"]["name"] for x in ("A", "B"))
        plot_comparison(out / "comparison.png", result["comparison"], a, b)
        parts.append(f"<h2>Comparison: {html.escape(b)} − {html.escape(a)}</h2>")
        parts.append('<p><img src="comparison.png" alt="differences with intervals"></p>')
        parts.append("<p>Paired bootstrap over questions, 10,000 resamples, fixed seed; a "
                     "difference counts only when its 95% interval excludes zero.</p>")
        parts.append(_table(["metric", "B − A", "95% interval", "questions", "verdict"], [[
            name, c["mean_diff"], f"[{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}]",
            c["questions"], c["verdict"]] for name, c in result["comparison"].items()]))
    ag = result.get("agreement")
    if ag:
        parts.append("<h2>Judges</h2><p>" + html.escape(result.get("judges_note", "")) + "</p>")
        parts.append(_table(["criterion", "labels", "kappa", "raw agreement"], [
            [c, ag[c]["labels"], ag[c]["kappa"], ag[c]["agreement"]]
            for c in ("fact_delivered", "has_unsupported_claim")]))
    for slot, s in setups.items():
        est = s.get("hosted_estimate")
        if est:
            parts.append(f"<h2>Setup {slot} on a hosted model (estimate, no call made)</h2>"
                         f"<p>From the recorded usage: {est['prompt_tokens']:.0f} prompt and "
                         f"{est['completion_tokens']:.0f} completion tokens per question "
                         f"({html.escape(est['tokens'])}); at "
                         f"${est['assumed']['usd_per_m_input']}/M in and "
                         f"${est['assumed']['usd_per_m_output']}/M out that is "
                         f"${est['usd_per_question']:.5f} a question, and about "
                         f"{est['seconds_per_question']} s at "
                         f"{est['assumed']['output_tokens_per_s']:.0f} tokens/s after a "
                         f"{est['assumed']['first_token_s']} s first token.</p>")
    parts.append("<h2>Answers and their passages</h2>")
    for slot, recs in answers.items():
        for qid, rec in recs.items():
            q = questions[qid]
            v = verdicts.get((slot, qid))
            parts.append(f'<h3 id="{_anchor(slot, qid)}">{html.escape(slot)} · '
                         f"{html.escape(qid)} ({html.escape(q.language)}, "
                         f"{html.escape(q.category)})</h3>")
            parts.append(f"<p><b>Q:</b> {html.escape(q.question)}</p>")
            text = rec.get("answer") if rec.get("outcome") == "done" else \
                f"error {rec.get('error')}"
            parts.append(f"<blockquote>{html.escape(str(text))}</blockquote>")
            if q.expected_facts:
                marks = v["delivered"] if v else [None] * len(q.expected_facts)
                parts.append("<ul>" + "".join(
                    f"<li>{'✔' if d else ('✘' if d is False else '?')} {html.escape(f)}</li>"
                    for f, d in zip(q.expected_facts, marks, strict=False)) + "</ul>")
            if v and v["unsupported_claims"]:
                parts.append("<p>Unsupported (judge): " + html.escape(
                    "; ".join(v["unsupported_claims"])) + "</p>")
            parts.append("<ol>" + "".join(
                f"<li value=\"{s['n']}\"><b>{html.escape(s['source'])}</b> — "
                f"{html.escape(s['section'])}<br><small>{html.escape(s['excerpt'])}</small></li>"
                for s in rec.get("sources") or []) + "</ol>")
    style = ("body{font-family:sans-serif;max-width:1000px;margin:2em auto;line-height:1.4}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
             "padding:2px 6px;font-size:90%}blockquote{background:#f4f4f4;padding:.5em}")
    page = (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>Answer evaluation"
            f"</title><style>{style}</style></head><body>{''.join(parts)}</body></html>\n")
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
