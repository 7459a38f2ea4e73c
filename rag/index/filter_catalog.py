"""The names a question can filter by (authors, categories) and which papers carry them, in SQLite.

Written beside the BM25 index each time it is rebuilt (``catalog.sqlite``) and opened read-only by
every process that answers. A question looks up only its own words (a few indexed queries), so a
cold process over 100k papers and 130k distinct authors does not load every name before its first
answer, and memory does not grow with the number of authors. Tests and small callers build the same
catalog in memory with :meth:`FilterCatalog.build`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from rag.analysis import TOKEN, analyze, fold
from rag.errors import PaperchatError
from rag.records import StoredPaper

_SCHEMA = """
CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE author(toks TEXT PRIMARY KEY, first TEXT NOT NULL, n INTEGER NOT NULL, display TEXT NOT NULL);
CREATE TABLE surname(tok TEXT PRIMARY KEY, display TEXT NOT NULL);
CREATE TABLE category(toks TEXT PRIMARY KEY, display TEXT NOT NULL);
CREATE TABLE paper_author(toks TEXT NOT NULL, last TEXT NOT NULL, pid TEXT NOT NULL);
CREATE TABLE paper_category(display TEXT NOT NULL, pid TEXT NOT NULL);
"""
_INDEXES = """
CREATE INDEX author_first ON author(first, n);
CREATE INDEX paper_author_toks ON paper_author(toks);
CREATE INDEX paper_author_last ON paper_author(last);
CREATE INDEX paper_category_display ON paper_category(display);
"""


class CatalogUnreadable(PaperchatError):
    """The saved catalog file is missing, torn or not a catalog."""


@lru_cache(maxsize=1 << 16)
def name_tokens(name: str) -> tuple[str, ...]:
    return tuple(TOKEN.findall(fold(name)))


@lru_cache(maxsize=1 << 12)  # a 100k-paper store repeats a few hundred categories 200k times
def category_tokens(name: str) -> tuple[str, ...]:
    out = []
    for tok in TOKEN.findall(fold(name)):
        if tok == "and":
            continue
        stems = analyze(tok)
        out.append(stems[0] if stems else tok)
    return tuple(out)


def _key(toks: tuple[str, ...]) -> str:
    return " ".join(toks)  # tokens are runs of word characters: a space never occurs inside one


def write(con: sqlite3.Connection, papers: Iterable[tuple[str, Any, Iterable[str], Iterable[str]]]) -> None:
    """Fill an empty database from (paper id, year, authors, categories) rows, streamed."""
    con.executescript(_SCHEMA)
    authors: dict[tuple[str, ...], str] = {}
    surnames: dict[str, str] = {}
    cats: dict[tuple[str, ...], str] = {}
    raw_authors: set[str] = set()
    raw_cats: set[str] = set()
    counts: dict[str, int] = {}
    has_years = False
    pa: list[tuple[str, str, str]] = []
    pc: list[tuple[str, str]] = []

    def flush() -> None:
        con.executemany("INSERT INTO paper_author VALUES (?, ?, ?)", pa)
        con.executemany("INSERT INTO paper_category VALUES (?, ?)", pc)
        pa.clear()
        pc.clear()

    for pid, year, names, categories in papers:
        pid = str(pid)
        has_years = has_years or bool(year)
        for a in dict.fromkeys(names or ()):
            raw_authors.add(a)
            toks = name_tokens(a)
            if not toks:
                continue
            authors.setdefault(toks, a)  # first-seen spelling is the display form
            if len(toks) > 1 and len(toks[-1]) > 1:
                surnames.setdefault(toks[-1], a.split()[-1] if a.split() else toks[-1])
            pa.append((_key(toks), toks[-1], pid))
        shown: set[str] = set()
        for c in dict.fromkeys(categories or ()):
            if not (c and c.strip()):
                continue
            raw_cats.add(c)
            toks = category_tokens(c)
            if toks:
                shown.add(cats.setdefault(toks, c))
        for d in shown:
            pc.append((d, pid))
            counts[d] = counts.get(d, 0) + 1
        if len(pa) > 50_000:
            flush()
    flush()
    con.executemany("INSERT INTO author VALUES (?, ?, ?, ?)",
                    ((_key(t), t[0], len(t), d) for t, d in authors.items()))
    con.executemany("INSERT INTO surname VALUES (?, ?)", surnames.items())
    con.executemany("INSERT INTO category VALUES (?, ?)", ((_key(t), d) for t, d in cats.items()))
    meta = {"has_years": has_years, "n_authors": len(raw_authors),
            "category_names": sorted(raw_cats, key=str.casefold),
            "category_counts": sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}
    con.executemany("INSERT INTO meta VALUES (?, ?)", ((k, json.dumps(v)) for k, v in meta.items()))
    con.executescript(_INDEXES)
    con.commit()


def write_file(path: Path, papers: Iterable[tuple[str, Any, Iterable[str], Iterable[str]]]) -> None:
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA journal_mode=OFF")  # written once into a fresh folder that is swapped in whole
        con.execute("PRAGMA synchronous=OFF")
        write(con, papers)
    finally:
        con.close()


class FilterCatalog:
    """What the store holds that a question can name: looked up word by word, never loaded whole."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self._con = con
        self._lock = threading.Lock()
        try:
            meta = {k: json.loads(v) for k, v in con.execute("SELECT k, v FROM meta")}
            cats = con.execute("SELECT toks, display FROM category").fetchall()
        except (sqlite3.DatabaseError, ValueError) as e:
            raise CatalogUnreadable(f"question-filter catalog unreadable: {e}") from e
        if not {"has_years", "n_authors", "category_names", "category_counts"} <= meta.keys():
            raise CatalogUnreadable("question-filter catalog incomplete (no meta rows)")
        self.has_years: bool = bool(meta["has_years"])
        self.n_authors: int = int(meta["n_authors"])  # distinct author names as stored
        self.category_names: tuple[str, ...] = tuple(meta["category_names"])  # as stored, sorted case-insensitively
        self.categories: dict[tuple[str, ...], str] = {tuple(k.split(" ")): d for k, d in cats}  # stems → display
        self._counts: dict[str, int] = dict(meta["category_counts"])
        # Per-catalog memos (a method-level lru_cache would keep every superseded catalog, and its open file,
        # alive for as long as the process runs).
        self.names_from = lru_cache(maxsize=4096)(self.names_from)  # type: ignore[method-assign]
        self.surname = lru_cache(maxsize=4096)(self.surname)  # type: ignore[method-assign]

    @staticmethod
    def build(papers: Iterable[StoredPaper]) -> FilterCatalog:
        """An in-memory catalog of papers (their ids, authors, categories and years)."""
        con = sqlite3.connect(":memory:", check_same_thread=False)
        write(con, ((p.id, p.year, p.authors, p.categories) for p in papers))
        return FilterCatalog(con)

    @staticmethod
    def open(path: Path) -> FilterCatalog:
        if not path.is_file():
            raise CatalogUnreadable(f"question-filter catalog missing: {path}")
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        except sqlite3.Error as e:
            raise CatalogUnreadable(f"question-filter catalog unreadable: {path}: {e}") from e
        return FilterCatalog(con)

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._con.execute(sql, args).fetchall()

    # ---- what parse_question asks, one word at a time
    def names_from(self, word: str) -> tuple[tuple[tuple[str, ...], str], ...]:
        """Multi-word author names starting with ``word`` (folded), longest first, with their display form."""
        return tuple((tuple(t.split(" ")), d) for t, d in
                     self._rows("SELECT toks, display FROM author WHERE first = ? AND n > 1 ORDER BY n DESC, rowid",
                                (word,)))

    def surname(self, word: str) -> str | None:
        """Display surname of some multi-word author whose last name folds to ``word``."""
        rows = self._rows("SELECT display FROM surname WHERE tok = ?", (word,))
        return rows[0][0] if rows else None

    def papers_by(self, name: str) -> frozenset[str]:
        """Paper ids of a full author name (display form), or of every author with that surname."""
        toks = name_tokens(name)
        if not toks:
            return frozenset()
        if self._rows("SELECT 1 FROM author WHERE toks = ? AND display = ?", (_key(toks), name)):
            return frozenset(p for (p,) in self._rows("SELECT pid FROM paper_author WHERE toks = ?", (_key(toks),)))
        if len(toks) != 1:
            return frozenset()
        return frozenset(p for (p,) in self._rows("SELECT pid FROM paper_author WHERE last = ?", toks))

    def papers_in(self, category: str) -> frozenset[str]:
        """Paper ids of a category (display form as in :attr:`categories`)."""
        return frozenset(p for (p,) in self._rows("SELECT pid FROM paper_category WHERE display = ?", (category,)))

    # ---- whole-collection views (the library page, tests)
    def category_counts(self) -> dict[str, int]:
        """Papers per category (spellings that stem alike counted together), largest first."""
        return dict(self._counts)

    def _grouped(self, sql: str) -> dict[str, frozenset[str]]:
        """(display name, paper id) rows → display name → paper ids."""
        out: dict[str, set[str]] = {}
        for d, p in self._rows(sql):
            out.setdefault(d, set()).add(p)
        return {k: frozenset(v) for k, v in out.items()}

    @cached_property
    def category_papers(self) -> dict[str, frozenset[str]]:
        """Display category → paper ids."""
        return self._grouped("SELECT display, pid FROM paper_category")

    @cached_property
    def author_papers(self) -> dict[str, frozenset[str]]:
        """Display author name → paper ids."""
        return self._grouped("SELECT a.display, pa.pid FROM paper_author pa JOIN author a ON a.toks = pa.toks")
