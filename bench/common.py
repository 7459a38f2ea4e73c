"""What every benchmark shares: where things are, the one percentile, and how figures are written.

- paths: the checkout (``ROOT``), ``reports/``, ``docs/benchmarks.md`` (``DOC``) and the shared datasets
  (defined once, in tests/support/data.py, for the tests and the benchmarks alike);
- ``percentile``: nearest-rank, the definition behind every p50/p95 a benchmark publishes (and the evals'
  reports: it lives in ``evals.metrics``); ``pct`` is it for a list that may be empty, rounded;
- ``machine`` and ``update_section``: each benchmark writes its own section of docs/benchmarks.md, leaving the
  others alone, and names the machine it ran on.
"""

from __future__ import annotations

import os
import platform
import re
import time
from pathlib import Path

from evals.metrics import percentile
from tests.support.data import CRANFIELD, CRANFIELD_CORPUS, DATASETS, NIPS, ROOT

__all__ = ["CRANFIELD", "CRANFIELD_CORPUS", "DATASETS", "DOC", "NIPS", "REPORTS", "ROOT", "SAMPLE_DIR", "machine",
           "pct", "percentile", "update_section"]

REPORTS = ROOT / "reports"
SAMPLE_DIR = ROOT / "data" / "sample"
DOC = ROOT / "docs" / "benchmarks.md"
HEADER = "# Benchmarks\n\nEvery figure below was written by the command shown with it, on the machine it names.\n"


def pct(values: list[float], p: float, digits: int = 3) -> float | None:
    """``percentile(values, p)`` (p in 0..100) rounded to ``digits``; None when there are no values."""
    return round(percentile(values, p), digits) if values else None


def machine() -> str:
    py = platform.python_version()
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {py}, {time.strftime('%Y-%m-%d')}"


def update_section(name: str, body: str, doc: Path = DOC) -> Path:
    """Replace (or append) the block between ``<!-- name:start -->`` and ``<!-- name:end -->``."""
    text = doc.read_text() if doc.exists() else HEADER
    block = f"<!-- {name}:start -->\n{body.strip()}\n<!-- {name}:end -->"
    pat = re.compile(rf"<!-- {re.escape(name)}:start -->.*?<!-- {re.escape(name)}:end -->", re.S)
    text = pat.sub(lambda _: block, text) if pat.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    tmp = doc.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(doc)
    return doc
