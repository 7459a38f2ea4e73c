"""Eval reports: ``report.json`` (everything), ``report.md`` and a self-contained ``report.html``
(inline CSS and SVG charts, no scripts, no outside requests). Per-question tables list failures first; a set
with dev / test splits also gets every figure per split."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

from evals.metrics import percentile

STATUS = {True: "pass", False: "FAIL", None: "unlabelled"}
METRIC_NAMES = {
    "recall@k": "gold recall@k (retrieved)", "mrr@10": "MRR@10", "ndcg@10": "nDCG@10",
    "citation_validity": "citation validity", "citation_precision": "citation precision",
    "citation_recall": "citation recall", "support_rate": "citations not contradicted (verifier)",
    "statement_supported_rate": "statements supported", "statement_contradicted_rate": "statements contradicted",
    "statement_not_in_source_rate": "statements not in the cited abstract", "fact_recall": "fact recall",
}


def ordered_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Failures first, then unlabelled, then passes; set order within each group."""
    rank = {False: 0, None: 1, True: 2}
    return sorted(rows, key=lambda r: rank[r["ok"]])


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.1%}"


def headline(report: dict[str, Any]) -> list[tuple[str, str]]:
    """The figures a reader wants first, as (name, value) pairs."""
    s = report["summary"]
    out = [("cases passed", f"{s['passed']}/{s['labelled']} ({_pct(s['pass_rate'])})")]
    out += [(f"{t} ({v['n']})", _pct(v["pass_rate"])) for t, v in s["by_type"].items()]
    out += [(METRIC_NAMES.get(k, k), _pct(v["mean"])) for k, v in s["metrics"].items()]
    out += [(k.replace("_", " "), _pct(v)) for k, v in s["answer"].items() if v is not None]
    counts = s.get("statements") or {}
    if any(counts.values()):
        out.append(("statement verdicts", " / ".join(f"{counts.get(v, 0)} {v.replace('_', ' ')}" for v in
                                                      ("supported", "contradicted", "not_in_source"))))
    for k, v in (s.get("judge") or {}).items():
        if isinstance(v, dict):
            out.append((f"judge {k.replace('_', ' ')} (n={v['n']})", _pct(v["mean"])))
    total = s["latency_ms"].get("total_ms")
    if total:
        out.append(("latency p50 / p95", f"{total['p50']:.0f} / {total['p95']:.0f} ms"))
    return out


def figures(summary: dict[str, Any]) -> dict[str, str]:
    """Every headline figure of one summary by a name that does not depend on the counts (for side-by-side
    columns: the whole set and each split)."""
    out = {"cases passed": f"{summary['passed']}/{summary['labelled']} ({_pct(summary['pass_rate'])})"}
    out.update({f"pass rate: {t}": f"{_pct(v['pass_rate'])} ({v['n']})" for t, v in summary["by_type"].items()})
    out.update({METRIC_NAMES.get(k, k): _pct(v["mean"]) for k, v in summary["metrics"].items()})
    out.update({k.replace("_", " "): _pct(v) for k, v in summary["answer"].items() if v is not None})
    total = summary["latency_ms"].get("total_ms")
    if total:
        out["latency p50 / p95"] = f"{total['p50']:.0f} / {total['p95']:.0f} ms"
    return out


def split_table(report: dict[str, Any]) -> tuple[list[str], list[list[str]]] | None:
    """(column names, rows) of the figures for the whole set and for each split; None without splits."""
    splits = report.get("splits")
    if not splits:
        return None
    cols = {"all": figures(report["summary"]), **{n: figures(s) for n, s in splits.items()}}
    names = list(dict.fromkeys(k for f in cols.values() for k in f))
    return list(cols), [[n, *(f.get(n, "–") for f in cols.values())] for n in names]


# ---- Markdown ------------------------------------------------------------------------------------------
def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _names(row: dict[str, Any], ids: list[str | None]) -> str:
    return "; ".join(row["labels"].get(i, i) if i else "(unresolved)" for i in ids) or "–"


def to_markdown(report: dict[str, Any]) -> str:
    m, s = report["meta"], report["summary"]
    lines = [f"# paperchat eval: {m['set_name']}", "",
             f"`{m['command']}` · mode {m['mode']} · k={m['k']} · {m['cases']} cases · {m['when']} · "
             f"commit {m.get('commit') or '?'} · {m['seconds']:.0f} s", "",
             "| metric | value |", "|---|---:|"]
    lines += [f"| {_cell(n)} | {v} |" for n, v in headline(report)]
    table = split_table(report)
    if table:
        cols, rows = table
        lines += ["", "## By split (tune on dev; test is held out)", "", "| figure | " + " | ".join(cols) + " |",
                  "|---|" + "---:|" * len(cols)]
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    lines += ["", "## Latency by stage (ms)", "", "| stage | p50 | p95 | max |", "|---|---:|---:|---:|"]
    lines += [f"| {k} | {v['p50']:.1f} | {v['p95']:.1f} | {v['max']:.1f} |" for k, v in s["latency_ms"].items()]
    lines += ["", "## Questions (failures first)", "",
              "| status | id | type | question | why | cited | gold | ms |", "|---|---|---|---|---|---|---|---:|"]
    for r in ordered_rows(report["rows"]):
        lines.append(f"| {STATUS[r['ok']]} | {r['id']} | {r['type']} | {_cell(r['question'])[:160]} | "
                     f"{_cell(r['why']) or '–'} | {_cell(_names(r, r['cited']))[:160]} | "
                     f"{_cell(_names(r, r['gold']))[:160]} | {r['timings'].get('total_ms', 0):.0f} |")
    return "\n".join(lines) + "\n"


# ---- HTML + SVG ------------------------------------------------------------------------------------------
def svg_bars(items: list[tuple[str, float]], width: int = 520, unit: str = "%") -> str:
    """Horizontal bars for values in 0..1 (labels left, value right)."""
    h = 24 * len(items) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img">']
    for i, (label, v) in enumerate(items):
        y, w = 5 + 24 * i, max(0.0, min(1.0, v)) * (width - 230)
        colour = "#2e7d32" if v >= 0.9 else "#f9a825" if v >= 0.6 else "#c62828"
        out.append(f'<text x="150" y="{y + 15}" text-anchor="end" font-size="12">{html.escape(label)}</text>'
                   f'<rect x="158" y="{y + 3}" width="{w:.1f}" height="16" fill="{colour}"/>'
                   f'<text x="{162 + w:.1f}" y="{y + 15}" font-size="12">{v * 100:.1f}{unit}</text>')
    return "".join(out) + "</svg>"


def svg_histogram(values: list[float], bins: int = 12, width: int = 520, height: int = 170) -> str:
    """A histogram of latencies (ms) with p50/p95 marked."""
    if not values:
        return "<p>no timings</p>"
    lo, hi = 0.0, max(values) * 1.05 or 1.0
    step = (hi - lo) / bins
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - lo) / step))] += 1
    top, plot_w, plot_h = max(counts), width - 60, height - 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">']
    for i, c in enumerate(counts):
        bh = plot_h * c / top
        x = 40 + i * plot_w / bins
        out.append(f'<rect x="{x:.1f}" y="{10 + plot_h - bh:.1f}" width="{plot_w / bins - 2:.1f}" '
                   f'height="{bh:.1f}" fill="#1565c0"><title>{c} answers</title></rect>')
    for p, colour in ((50, "#2e7d32"), (95, "#c62828")):
        v = percentile(values, p)
        x = 40 + plot_w * (v - lo) / (hi - lo)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="10" y2="{10 + plot_h}" stroke="{colour}" '
                   f'stroke-dasharray="4"/><text x="{x + 3:.1f}" y="{22 if p == 95 else 36}" font-size="11" '
                   f'fill="{colour}">p{p} {v:.0f} ms</text>')
    for t in range(0, 5):
        v = lo + (hi - lo) * t / 4
        out.append(f'<text x="{40 + plot_w * t / 4:.1f}" y="{height - 12}" font-size="11" '
                   f'text-anchor="middle">{v:.0f}</text>')
    out.append(f'<text x="{width / 2}" y="{height - 1}" font-size="11" text-anchor="middle">ms per answer</text>')
    out.append(f'<text x="4" y="20" font-size="11">n={len(values)}</text>')
    return "".join(out) + "</svg>"


CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;width:100%;margin:.5em 0 1.5em}td,th{border-bottom:1px solid #ddd;padding:4px 6px;
text-align:left;vertical-align:top}th{background:#f4f4f4}.FAIL{color:#c62828;font-weight:600}.pass{color:#2e7d32}
.unlabelled{color:#777}.grid{display:flex;flex-wrap:wrap;gap:2em}details{max-width:420px}small{color:#666}
td.num{text-align:right}"""


def to_html(report: dict[str, Any]) -> str:
    m, s = report["meta"], report["summary"]
    esc = html.escape
    types = [(f"{t} (n={v['n']})", v["pass_rate"]) for t, v in s["by_type"].items()]
    metrics = [(METRIC_NAMES.get(k, k), v["mean"]) for k, v in s["metrics"].items()]
    totals = [r["timings"]["total_ms"] for r in report["rows"] if "total_ms" in r["timings"]]
    head = "".join(f"<tr><td>{esc(n)}</td><td class=num>{esc(v)}</td></tr>" for n, v in headline(report))
    stages = "".join(f"<tr><td>{esc(k)}</td><td class=num>{v['p50']:.1f}</td><td class=num>{v['p95']:.1f}</td>"
                     f"<td class=num>{v['max']:.1f}</td></tr>" for k, v in s["latency_ms"].items())
    table, by_split = split_table(report), ""
    if table:
        cols, srows = table
        by_split = ("<h2>By split (tune on dev; test is held out)</h2><table><tr><th>figure</th>"
                    + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>"
                    + "".join("<tr><td>" + esc(r[0]) + "</td>" + "".join(f"<td class=num>{esc(c)}</td>" for c in r[1:])
                              + "</tr>" for r in srows) + "</table>")
    rows = []
    for r in ordered_rows(report["rows"]):
        st = STATUS[r["ok"]]
        q = esc(r["question"]) if "turns" not in r else "<br>".join(f"→ {esc(t)}" for t in r["turns"])
        missing = f"<br><small>facts missing: {esc(', '.join(r['facts_missing']))}</small>" if r.get(
            "facts_missing") else ""
        rows.append(
            f"<tr><td class='{st}'>{st}</td><td>{esc(r['id'])}</td><td>{esc(r['type'])}</td><td>{q}</td>"
            f"<td>{esc(r['why']) or '–'}{missing}</td><td>{esc(_names(r, r['cited']))}</td>"
            f"<td>{esc(_names(r, r['gold']))}</td><td class=num>{r['timings'].get('total_ms', 0):.0f}</td>"
            f"<td><details><summary>answer</summary>{esc(r['answer'])}</details></td></tr>")
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>paperchat eval: {esc(m['set_name'])}</title><style>{CSS}</style></head><body>
<h1>paperchat eval: {esc(m['set_name'])}</h1>
<p><code>{esc(m['command'])}</code><br>mode {esc(m['mode'])} · k={m['k']} · {m['cases']} cases · {esc(m['when'])} ·
commit {esc(m.get('commit') or '?')} · {m['seconds']:.0f} s · embeddings {esc(m.get('embeddings', ''))}</p>
<div class=grid><div><h2>Summary</h2><table>{head}</table></div>
<div><h2>Pass rate by question type</h2>{svg_bars(types)}<h2>Metrics</h2>{svg_bars(metrics)}
<h2>Answer latency</h2>{svg_histogram(totals)}</div></div>
{by_split}
<h2>Latency by stage (ms)</h2><table><tr><th>stage</th><th>p50</th><th>p95</th><th>max</th></tr>{stages}</table>
<h2>Questions (failures first)</h2><table><tr><th>status</th><th>id</th><th>type</th><th>question</th><th>why</th>
<th>cited</th><th>gold</th><th>ms</th><th></th></tr>{''.join(rows)}</table></body></html>
"""


def write_report(report: dict[str, Any], out: Path) -> dict[str, Path]:
    """report.json, report.md and report.html under ``out`` (created)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "report.json", "md": out / "report.md", "html": out / "report.html"}
    paths["json"].write_text(json.dumps(report, ensure_ascii=False, indent=1, default=_num), encoding="utf-8")
    paths["md"].write_text(to_markdown(report), encoding="utf-8")
    paths["html"].write_text(to_html(report), encoding="utf-8")
    return paths


def _num(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def load_report(path: Path) -> dict[str, Any]:
    """A report.json, given the file or the folder holding it."""
    from rag.errors import InputError

    p = path / "report.json" if path.is_dir() else path
    if not p.is_file():
        raise InputError("no eval report here (expected report.json or a folder holding it)", where=str(path))
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except ValueError as e:
        raise InputError(f"not a JSON report ({e})", where=str(p)) from None
    if not isinstance(data, dict) or not {"meta", "summary", "rows"} <= set(data):
        raise InputError("not a paperchat eval report (needs meta, summary and rows)", where=str(p))
    return data
