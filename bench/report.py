"""Benchmarks write their own section of docs/benchmarks.md, leaving the others alone."""

from __future__ import annotations

import os
import platform
import re
import time
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
HEADER = "# Benchmarks\n\nEvery figure below was written by the command shown with it, on the machine it names.\n"


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
