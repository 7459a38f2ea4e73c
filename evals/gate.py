"""The CI gate: an eval run's figures against thresholds committed in the repo (``evals/thresholds.toml``, shipped
with the package).

Each table of the TOML file is a kind of figure, each key a minimum (``[latency_ms]`` keys are maxima)::

    [pass_rate]            # by question type, and "overall"
    single = 0.9
    [metrics]              # means of per-case metrics (see evals/run.py SUMMARY_METRICS); the shares of
    fact_recall = 0.8      # statements contradicted / not in the source (statement_*_rate) are maxima
    [answer]               # cannot_answer_accuracy, single_only_gold, filtered_refusal, follow_up_success …
                           # (false_refusal_rate is a maximum)
    cannot_answer_accuracy = 1.0

A failure names the figure, its value and threshold, and the failing questions behind it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from evals.run import FILTERED_TYPES
from rag.errors import InputError
from rag.resources import resource_path

THRESHOLDS = resource_path("evals", "thresholds.toml")
MAXIMA = {"false_refusal_rate", "statement_contradicted_rate", "statement_not_in_source_rate"}
MAX_NAMED = 15


def load_thresholds(path: Path = THRESHOLDS) -> dict[str, dict[str, float]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read thresholds ({e.strerror})", where=str(path)) from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"not TOML ({e})", where=str(path)) from None
    for table, items in data.items():
        if table not in {"pass_rate", "metrics", "answer", "latency_ms"} or not isinstance(items, dict):
            raise InputError(f"unknown table [{table}]; use pass_rate, metrics, answer, latency_ms", where=str(path))
        for key, value in items.items():
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise InputError(f"[{table}] {key}: a number is required", where=str(path))
    return data


def _value(summary: dict[str, Any], table: str, key: str) -> float | None:
    if table == "pass_rate":
        return summary["pass_rate"] if key == "overall" else summary["by_type"].get(key, {}).get("pass_rate")
    if table == "metrics":
        return summary["metrics"].get(key, {}).get("mean")
    if table == "answer":
        return summary["answer"].get(key)
    stage, _, pct = key.rpartition("_")  # e.g. total_ms_p95
    return summary["latency_ms"].get(stage, {}).get(pct)


def _culprits(rows: list[dict[str, Any]], table: str, key: str, bound: float) -> list[dict[str, Any]]:
    if table == "latency_ms":
        stage = key.rpartition("_")[0]
        slow = [r for r in rows if r["timings"].get(stage, 0.0) > bound]
        return sorted(slow, key=lambda r: -r["timings"][stage])
    if table == "pass_rate":
        return [r for r in rows if r["ok"] is False and key in ("overall", r["type"])]
    if table == "metrics" and key in MAXIMA:
        return [r for r in rows if r["metrics"].get(key, 0.0) > 0.0]
    if table == "metrics":
        return [r for r in rows if r["metrics"].get(key, 1.0) < 1.0]
    if key == "cannot_answer_accuracy":
        return [r for r in rows if not r["answerable"] and r["ok"] is False]
    if key == "false_refusal_rate":
        return [r for r in rows if r["answerable"] and r["refused"]]
    if key == "single_only_gold":  # a single-paper answer that cites another paper beside (or instead of) the gold one
        return [r for r in rows if r["type"] == "single" and r["answerable"] and r["gold"] and r["gold"][0]
                and r["cited"] != r["gold"][:1]]
    if key == "filtered_refusal":  # a filtered question none of its papers answers, answered anyway
        return [r for r in rows if r["type"] in FILTERED_TYPES and not r["answerable"] and r["ok"] is False]
    if key.startswith("follow_up"):
        return [r for r in rows if r["type"] == "follow-up" and r["ok"] is False]
    return []


def _cited(row: dict[str, Any]) -> str:
    labels = row.get("labels", {})
    return "cited " + (", ".join(labels.get(c, c) for c in row["cited"]) or "nothing")


def check(report: dict[str, Any], thresholds: dict[str, dict[str, float]]) -> list[str]:
    """Failure messages (empty when every figure meets its threshold)."""
    failures = []
    for table, items in thresholds.items():
        for key, bound in items.items():
            value = _value(report["summary"], table, key)
            is_max = table == "latency_ms" or key in MAXIMA
            if value is None:
                failures.append(f"[{table}] {key}: no such figure in this run (threshold {bound})")
                continue
            if (value > bound) if is_max else (value < bound):
                rel = ">" if is_max else "<"
                lines = [f"[{table}] {key} = {value:.4g} {rel} {bound:.4g}"]
                culprits = _culprits(report["rows"], table, key, bound)
                for r in culprits[:MAX_NAMED]:
                    why = (f"{r['timings'][key.rpartition('_')[0]]:.0f} ms" if table == "latency_ms"
                           else _cited(r) if key == "single_only_gold"
                           else r["why"] or f"{key} {r['metrics'].get(key, 0):.2f}")
                    lines.append(f"    {r['id']}: {r['question'][:100]!r} — {why}")
                if len(culprits) > MAX_NAMED:
                    lines.append(f"    … and {len(culprits) - MAX_NAMED} more (see the report)")
                failures.append("\n".join(lines))
    return failures
