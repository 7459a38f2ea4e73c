"""What got better and worse between two eval runs (``paperchat eval --compare A B``)."""

from __future__ import annotations

from typing import Any

from evals.report import STATUS


def _flat(report: dict[str, Any]) -> dict[str, float]:
    """Comparable numbers of one report, by name."""
    s = report["summary"]
    out: dict[str, float] = {"pass rate": s["pass_rate"]}
    out.update({f"pass rate: {t}": v["pass_rate"] for t, v in s["by_type"].items()})
    out.update({k: v["mean"] for k, v in s["metrics"].items()})
    out.update({k.replace("_", " "): v for k, v in s["answer"].items() if v is not None})
    out.update({f"judge {k}": v["mean"] for k, v in (s.get("judge") or {}).items()
                if isinstance(v, dict) and v.get("mean") is not None})
    for stage in ("total_ms", "retrieve_ms", "generate_ms"):
        if stage in s["latency_ms"]:
            out[f"{stage} p50"] = s["latency_ms"][stage]["p50"]
            out[f"{stage} p95"] = s["latency_ms"][stage]["p95"]
    return out


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Metric deltas and per-question changes from run ``a`` to run ``b``."""
    fa, fb = _flat(a), _flat(b)
    metrics = [{"name": k, "a": fa.get(k), "b": fb.get(k),
                "delta": None if k not in fa or k not in fb else round(fb[k] - fa[k], 4)}
               for k in list(fa) + [k for k in fb if k not in fa]]
    ra, rb = {r["id"]: r for r in a["rows"]}, {r["id"]: r for r in b["rows"]}
    fixed, broke, changed = [], [], []
    for cid, row in rb.items():
        old = ra.get(cid)
        if old is None:
            continue
        if old["ok"] is False and row["ok"] is True:
            fixed.append(cid)
        elif old["ok"] is True and row["ok"] is False:
            broke.append(cid)
        elif old["cited"] != row["cited"]:
            changed.append(cid)
    return {"a": a["meta"], "b": b["meta"], "metrics": metrics, "fixed": fixed, "broke": broke,
            "citations_changed": changed, "only_in_a": sorted(set(ra) - set(rb)),
            "only_in_b": sorted(set(rb) - set(ra)),
            "rows_a": {c: ra[c] for c in fixed + broke}, "rows_b": {c: rb[c] for c in fixed + broke}}


def _fmt(name: str, x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:.0f} ms" if name.endswith(("p50", "p95")) else f"{x:.1%}"


def to_markdown(c: dict[str, Any]) -> str:
    lower_is_better = ("p50", "p95", "false refusal rate")
    lines = [f"# eval compare: {c['a']['label']} → {c['b']['label']}", "",
             "| metric | A | B | change |", "|---|---:|---:|---|"]
    for m in c["metrics"]:
        d = m["delta"]
        if d is None:
            verdict = "–"
        elif abs(d) < 1e-9:
            verdict = "same"
        else:
            better = (d < 0) if m["name"].endswith(lower_is_better) else (d > 0)
            shown = f"{d:+.0f} ms" if m["name"].endswith(("p50", "p95")) else f"{d * 100:+.1f} pts"
            verdict = f"{'better' if better else 'WORSE'} ({shown})"
        lines.append(f"| {m['name']} | {_fmt(m['name'], m['a'])} | {_fmt(m['name'], m['b'])} | {verdict} |")
    for title, ids in (("Now failing (were passing)", c["broke"]), ("Now passing (were failing)", c["fixed"])):
        lines += ["", f"## {title}: {len(ids)}", ""]
        for cid in ids:
            r = c["rows_b"][cid]
            lines.append(f"- **{cid}** ({r['type']}) {r['question'][:140]} — B: {STATUS[r['ok']]}"
                         + (f": {r['why']}" if r["why"] else ""))
    if c["citations_changed"]:
        lines += ["", f"Same verdict, different citations: {', '.join(c['citations_changed'])}"]
    for side in ("only_in_a", "only_in_b"):
        if c[side]:
            lines += ["", f"Cases {side.replace('_', ' ')}: {', '.join(c[side])}"]
    return "\n".join(lines) + "\n"
