"""What the UI does besides rendering, without Gradio: feedback log, exports, uploads, example questions,
rate limits, filters ↔ controls and corpus stats. ``ui.app`` wires these to components."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import math
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag import limits
from rag.answer import Answer, AppliedFilters
from rag.config import LimitSettings
from rag.errors import InputError
from rag.index.paper_query import PaperQuery
from rag.ingest import loaders
from rag.ingest.pipeline import IngestReport
from rag.qa.question_filters import FilterCatalog, catalog_for
from rag.records import StoredPaper
from rag.resources import sample_corpus
from rag.runtime import Runtime
from rag.text import key_phrase
from ui.library import store_stats

log = logging.getLogger(__name__)

Progress = Callable[[float, str], None]
UPLOAD_SUFFIXES = (".txt", ".bib", ".csv", ".json", ".jsonl", ".ndjson", ".xml", ".atom", ".pdf")


def is_loopback(host: str) -> bool:
    """``host`` names this machine only (127.0.0.0/8, ::1, localhost): the web app, the API and the MCP server
    refuse to listen beyond it without a login or key."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temp file and a rename (never a half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def export_path(home: Path, suffix: str) -> Path:
    """A fresh file name under ``$PAPERCHAT_HOME/exports``."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return home / "exports" / f"paperchat-{stamp}-{os.urandom(3).hex()}{suffix}"


# ---- feedback ------------------------------------------------------------------------------------
class FeedbackLog:
    """Thumbs up/down on answers, one JSON object per line, with a draft eval case for each vote."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def record(self, answer: Answer, liked: bool, history: Sequence[Answer] = ()) -> dict[str, Any]:
        """Append one vote; returns the stored row."""
        follow_up = bool(history) and answer.standalone_question != answer.question
        case: dict[str, Any] = {"type": "follow-up" if follow_up else "single", "question": answer.question,
                                "answerable": answer.answerable}
        if follow_up:
            case["turns"] = [a.question for a in history] + [answer.question]
        if liked and answer.citations:
            case["gold"] = [{"paper_id": c.paper_id,
                             **({"author": c.authors[0]} if c.authors else {}),
                             "abstract_prefix": " ".join((c.abstract or "").split()[:8])} for c in answer.citations]
        row = {
            "ts": _now(), "vote": "up" if liked else "down", "question": answer.question,
            "standalone_question": answer.standalone_question, "answer": answer.answer,
            "answerable": answer.answerable, "mode": answer.mode, "filters": dict(answer.filters),
            "citations": [{"n": c.n, "paper_id": c.paper_id, "title": c.title, "supported": c.supported}
                          for c in answer.citations],
            "retrieved": [r["paper_id"] for r in answer.retrieved], "case": case,
        }
        line = json.dumps(row, ensure_ascii=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")
        log.info("feedback %s on %r", row["vote"], answer.question[:80])
        return row


# ---- rate limit ------------------------------------------------------------------------------------
def check_rate(stamps: Sequence[float], limit: int, now: float | None = None, window: float = 60.0) -> list[float]:
    """The session's question times within the window plus this one; ``BudgetExceeded`` past ``limit``
    (``rag.limits.check_rate``)."""
    return limits.check_rate(stamps, limit, now=now, window=window)


# ---- filters ↔ controls --------------------------------------------------------------------------------
def _year(value: Any) -> int | None:
    text = str(value).strip() if value is not None else ""
    if not text:
        return None
    if not re.fullmatch(r"\d{4}", text):
        raise InputError(f"a year is four digits, e.g. 2021; got {text[:20]!r}")
    year = int(text)
    if not 1800 <= year <= 2100:
        raise InputError(f"the year must be between 1800 and 2100, got {year}")
    return year


def filters_from_controls(category: str | None, author: str | None, year_from: Any,
                          year_to: Any) -> PaperQuery | None:
    """The filter controls as a query (None when they restrict nothing)."""
    lo, hi = _year(year_from), _year(year_to)
    if lo and hi and lo > hi:
        lo, hi = hi, lo
    q = PaperQuery(author=(author or "").strip() or None, category=(category or "").strip() or None,
                   year_from=lo, year_to=hi)
    return None if q.is_empty() else q


def controls_from_filters(filters: AppliedFilters) -> tuple[str | None, str, str, str]:
    """An answer's applied filters → (category, author, year from, year to) for the controls."""
    return (filters.get("category") or None, filters.get("author") or "", str(filters.get("year_from") or ""),
            str(filters.get("year_to") or ""))


# ---- corpus ------------------------------------------------------------------------------------------
def _catalog(runtime: Runtime) -> FilterCatalog:
    if not runtime.store.count_chunks():  # an empty store has no catalog file yet: nothing to list
        return FilterCatalog.build([])
    return catalog_for(runtime.lexical, runtime.store)


def paper_count(runtime: Runtime) -> int:
    """Papers in the store, from its lexical index (synced): no pass over Chroma's rows."""
    runtime.lexical.sync(runtime.store)
    return len(runtime.lexical)


def corpus_stats(runtime: Runtime) -> dict[str, Any]:
    """``ui.library.store_stats`` (same keys) plus authors, categories and year span, counted from the catalog
    kept with the lexical index (a 100k-paper store is not read row by row to count its authors)."""
    cat = _catalog(runtime)
    return {**store_stats(runtime.store, runtime.settings, papers=len(runtime.lexical)), "authors": cat.n_authors,
            "categories": len(cat.category_names), "years": runtime.lexical.year_span()}


def categories(runtime: Runtime) -> list[str]:
    """Every category in the store, sorted case-insensitively."""
    return list(_catalog(runtime).category_names)


def example_papers(runtime: Runtime, n: int = 64) -> list[StoredPaper]:
    """The ``n`` papers first in id-hash order (the order ``example_questions`` draws from), read by id."""
    runtime.lexical.sync(runtime.store)
    ids = sorted(runtime.lexical.paper_ids, key=lambda p: hashlib.sha1(p.encode()).hexdigest())[:n]
    return runtime.store.papers(ids) if ids else []


def category_counts(runtime: Runtime) -> dict[str, int]:
    """Papers per category (categories differing only in case or plural are counted together)."""
    return _catalog(runtime).category_counts()


_PLAIN_PHRASE = re.compile(r"^[A-Za-z][\w\s\-–&'()/,.+]{1,70}$")


def example_questions(papers: Iterable[StoredPaper], n: int = 4, category_counts: dict[str, int] | None = None
                      ) -> list[str]:
    """Questions drawn from the corpus: "What is <the paper's named method>?" for papers of different
    categories, chosen deterministically (by a hash of the id), and one listing by the largest category
    (counted over ``papers`` unless the whole store's ``category_counts`` are given)."""
    rows = sorted(papers, key=lambda p: hashlib.sha1(p.id.encode()).hexdigest())
    out: list[str] = []
    used: set[str] = set()
    for p in rows:
        label = p.label
        phrase = label.split(": ", 1)[1] if ": " in label else key_phrase(p.abstract)
        phrase = phrase.strip().rstrip(".")
        cat = p.categories[0] if p.categories else ""
        if not _PLAIN_PHRASE.match(phrase) or phrase.endswith("…") or cat in used or len(phrase.split()) > 7:
            continue
        if phrase[:1].isupper() and phrase[1:2].islower() and " " in phrase:  # "Predictive planning"
            phrase = phrase[0].lower() + phrase[1:]
        out.append(f"What is {phrase}?")
        used.add(cat)
        if len(out) == n:
            break
    counts: dict[str, int] = dict(category_counts or {})
    if category_counts is None:
        for p in rows:
            for c in p.categories:
                counts[c] = counts.get(c, 0) + 1
    plain = [c for c in counts if _PLAIN_PHRASE.match(c)]
    if plain:
        top = max(plain, key=lambda c: (counts[c], c))
        out.append(f"Which papers are about {top}?")
    return out


# ---- uploads -------------------------------------------------------------------------------------------
def accept_upload(src: Path, uploads: Path, limit_mb: float, original_name: str | None = None) -> Path:
    """Copy an uploaded file into ``uploads`` under a safe, unique name after checking its size and type."""
    name = Path(original_name or src.name).name
    suffix = Path(name).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise InputError(f"unsupported file type {suffix or '(none)'}: upload one of {', '.join(UPLOAD_SUFFIXES)}",
                         where=name)
    limits.check_upload(src.stat().st_size, LimitSettings(upload_mb=limit_mb))
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).stem).strip("._")[:60] or "upload"
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    dest = uploads / f"{stamp}-{os.urandom(3).hex()}-{stem}{suffix}"
    uploads.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def ingest_upload(runtime: Runtime, path: Path, fmt: str | None = None, progress: Progress | None = None,
                  display_name: str | None = None, full_text: bool = False) -> IngestReport:
    """Ingest one file in batches, reporting progress; bad records are listed, the rest stored. With
    ``full_text``, a PDF's body is stored too, as passages cited to the page (``ingest --full-text``)."""
    say = progress or (lambda f, m: None)
    shown = display_name or path.name
    report = IngestReport()
    say(0.02, f"reading {shown}")
    ingest = runtime.settings.ingest
    try:
        loaded = loaders.load(path, fmt=fmt or None, max_pdf_pages=ingest.max_pdf_pages,
                              passage_tokens=ingest.passage_tokens if full_text else 0)
    except InputError as e:
        report.failed = 1
        report.file_errors.append(str(e).replace(str(path), shown))
        return report
    report.skipped = len(loaded.problems)
    report.problems = [str(p).replace(str(path), shown) for p in loaded.problems]
    papers = loaded.papers
    ingestor = runtime.ingestor(progress=False)
    hooks, ingestor.on_change = ingestor.on_change, []  # derived indexes are synced once, at the end
    step = max(8, math.ceil(len(papers) / 20))
    for i in range(0, len(papers), step):
        say(0.05 + 0.9 * i / max(1, len(papers)), f"embedding papers {i + 1}–{min(len(papers), i + step)} "
                                                   f"of {len(papers)}")
        part = ingestor.ingest_papers(papers[i:i + step])
        for name in ("added", "updated", "unchanged", "duplicates", "embedded_chunks", "full_text",
                     "embedded_passages"):
            setattr(report, name, getattr(report, name) + getattr(part, name))
    say(0.97, "updating the keyword index")
    for hook in hooks:
        hook(runtime.store)
    say(1.0, "done")
    log.info("upload %s (%s): %s", shown, loaded.format, report.summary())
    return report


def ensure_sample(runtime: Runtime, sample_dir: Path | None = None) -> IngestReport | None:
    """Ingest the sample corpus (``rag.resources.sample_corpus``: the bundled one, or ``sample_dir/*.txt``) when
    the store is empty (first run of ``paperchat serve``)."""
    files = sample_corpus(sample_dir)
    if runtime.store.count_chunks() > 0 or not files:
        return None
    log.warning("the store is empty: ingesting the sample corpus from %s", files[0].parent)
    return runtime.ingestor(progress=False).ingest(files)
