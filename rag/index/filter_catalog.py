"""The names a question can filter by (authors, categories) and which papers carry them, in SQLite.

Kept beside the BM25 index (``catalog.sqlite``, which also holds the index's manifest) and opened
read-only by every process that answers. A question looks up only its own words (a few indexed
queries), so a cold process over 100k papers and 130k distinct authors does not load every name
before its first answer, and memory does not grow with the number of authors.

The catalog follows the store by increments: :func:`add` and :func:`remove` change the rows of the
papers given, and :func:`refresh` recomputes what depends on them (display spellings, counts), so an
ingest of 100 papers costs 100 papers' worth of SQL, inside the same transaction that commits the
lexical index's manifest. Display spellings are those of the first paper (by id, then author order)
that carries the name, whatever the order papers arrived in, so an updated catalog equals one built
from scratch. Tests and small callers build the same catalog in memory with :meth:`FilterCatalog.build`.
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

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS paper(pid TEXT PRIMARY KEY, year INTEGER);
CREATE TABLE IF NOT EXISTS paper_author(pid TEXT NOT NULL, ord INTEGER NOT NULL, name TEXT NOT NULL,
                                        toks TEXT NOT NULL, last TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS paper_category(pid TEXT NOT NULL, ord INTEGER NOT NULL, name TEXT NOT NULL,
                                          toks TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS author(toks TEXT PRIMARY KEY, first TEXT NOT NULL, n INTEGER NOT NULL,
                                  display TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS surname(tok TEXT PRIMARY KEY, display TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS category(toks TEXT PRIMARY KEY, display TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS author_first ON author(first, n);
CREATE INDEX IF NOT EXISTS category_display ON category(display);
CREATE INDEX IF NOT EXISTS paper_author_toks ON paper_author(toks, pid, ord);
CREATE INDEX IF NOT EXISTS paper_author_last ON paper_author(last, pid, ord);
CREATE INDEX IF NOT EXISTS paper_author_pid ON paper_author(pid);
CREATE INDEX IF NOT EXISTS paper_author_name ON paper_author(name);
CREATE INDEX IF NOT EXISTS paper_category_toks ON paper_category(toks, pid, ord);
CREATE INDEX IF NOT EXISTS paper_category_pid ON paper_category(pid);
"""

PaperNames = tuple[str, Any, Iterable[str], Iterable[str]]  # (paper id, year, authors, categories)


class CatalogUnreadable(PaperchatError):
    """The saved catalog file is missing, torn or not a catalog."""


@lru_cache(maxsize=1 << 16)
def name_tokens(name: str) -> tuple[str, ...]:
    return tuple(TOKEN.findall(fold(name)))


@lru_cache(maxsize=1 << 14)
def category_stem(word: str) -> str:
    """A folded word as categories are matched: its first analysed stem, else the word itself. The catalog's
    keys and the words of a question (``rag.qa.question_filters``) go through this one rule ("and" is dropped
    from both), so a category a question names finds its key."""
    stems = analyze(word)
    return stems[0] if stems else word


@lru_cache(maxsize=1 << 12)  # a 100k-paper store repeats a few hundred categories 200k times
def category_tokens(name: str) -> tuple[str, ...]:
    return tuple(category_stem(tok) for tok in TOKEN.findall(fold(name)) if tok != "and")


def _key(toks: tuple[str, ...]) -> str:
    return " ".join(toks)  # tokens are runs of word characters: a space never occurs inside one


def _year(year: Any) -> int | None:
    return year if isinstance(year, int) and not isinstance(year, bool) else None


class Changed:
    """The author, surname and category keys whose display rows must be recomputed after an add or remove."""

    def __init__(self) -> None:
        self.authors: set[str] = set()
        self.surnames: set[str] = set()
        self.categories: set[str] = set()


def add(con: sqlite3.Connection, papers: Iterable[PaperNames], changed: Changed | None) -> None:
    """Insert the rows of ``papers`` (none of which may be in the catalog yet), streamed; the keys they touch
    are added to ``changed`` (None: a full build, which refreshes every key afterwards)."""
    pa: list[tuple[str, int, str, str, str]] = []
    pc: list[tuple[str, int, str, str]] = []
    pp: list[tuple[str, int | None]] = []

    def flush() -> None:
        con.executemany("INSERT INTO paper VALUES (?, ?)", pp)
        con.executemany("INSERT INTO paper_author VALUES (?, ?, ?, ?, ?)", pa)
        con.executemany("INSERT INTO paper_category VALUES (?, ?, ?, ?)", pc)
        pp.clear()
        pa.clear()
        pc.clear()

    for pid, year, names, categories in papers:
        pid = str(pid)
        pp.append((pid, _year(year)))
        for i, a in enumerate(dict.fromkeys(names or ())):
            toks = name_tokens(a)
            pa.append((pid, i, a, _key(toks), toks[-1] if toks else ""))
            if changed is not None and toks:
                changed.authors.add(_key(toks))
                changed.surnames.add(toks[-1])
        for i, c in enumerate(dict.fromkeys(categories or ())):
            if not (c and c.strip()):
                continue
            toks = category_tokens(c)
            pc.append((pid, i, c, _key(toks)))
            if changed is not None and toks:
                changed.categories.add(_key(toks))
        if len(pa) > 50_000:
            flush()
    flush()


def remove(con: sqlite3.Connection, pids: Iterable[str], changed: Changed) -> None:
    """Delete the rows of these papers; the keys they carried are added to ``changed``."""
    ids = list(dict.fromkeys(pids))
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        marks = ",".join("?" * len(part))
        for toks, last in con.execute(f"SELECT toks, last FROM paper_author WHERE pid IN ({marks})", part):
            if toks:
                changed.authors.add(toks)
                changed.surnames.add(last)
        changed.categories.update(t for (t,) in con.execute(
            f"SELECT toks FROM paper_category WHERE pid IN ({marks})", part) if t)
        for table in ("paper", "paper_author", "paper_category"):
            con.execute(f"DELETE FROM {table} WHERE pid IN ({marks})", part)


def _first(con: sqlite3.Connection, table: str, key: str, keys: set[str] | None,
           where: str = "") -> list[tuple[str, str]]:
    """(key, name) of the first row by (paper id, position) for each key of ``table`` (every key when None)."""
    cond = f"{key} != ''" + (f" AND {where}" if where else "")
    if keys is None:  # a full build: one pass with a window
        return con.execute(f"SELECT k, name FROM (SELECT {key} AS k, name, ROW_NUMBER() OVER (PARTITION BY {key} "
                           f"ORDER BY pid, ord) AS r FROM {table} WHERE {cond}) WHERE r = 1").fetchall()
    out = []
    for k in sorted(keys):  # an update: one indexed lookup per key, (key, pid, ord) is an index
        row = con.execute(f"SELECT name FROM {table} WHERE {key} = ? AND {cond} ORDER BY pid, ord LIMIT 1",
                          (k,)).fetchone()
        if row:
            out.append((k, row[0]))
    return out


def refresh(con: sqlite3.Connection, changed: Changed | None) -> None:
    """Recompute the display rows of the changed keys (every key when None) and the summary in ``meta``."""
    sets: tuple[set[str] | None, ...] = (None, None, None) if changed is None else (
        changed.authors, changed.surnames, changed.categories)
    for table, col, keys in (("author", "toks", sets[0]), ("surname", "tok", sets[1]), ("category", "toks", sets[2])):
        if keys is None:
            con.execute(f"DELETE FROM {table}")
        else:
            con.executemany(f"DELETE FROM {table} WHERE {col} = ?", ((k,) for k in keys))
    rows = _first(con, "paper_author", "toks", sets[0])
    con.executemany("INSERT INTO author VALUES (?, ?, ?, ?)",
                    ((t, t.split(" ")[0], t.count(" ") + 1, name) for t, name in rows))
    # a surname: the last word of a multi-word name whose last token is longer than an initial
    rows = _first(con, "paper_author", "last", sets[1], "instr(toks, ' ') > 0 AND length(last) > 1")
    con.executemany("INSERT INTO surname VALUES (?, ?)",
                    ((last, name.split()[-1] if name.split() else last) for last, name in rows))
    con.executemany("INSERT INTO category VALUES (?, ?)", _first(con, "paper_category", "toks", sets[2]))
    counts = con.execute("SELECT c.display, COUNT(DISTINCT pc.pid) FROM paper_category pc JOIN category c "
                         "ON c.toks = pc.toks GROUP BY pc.toks").fetchall()
    meta = {
        "has_years": bool(con.execute("SELECT EXISTS(SELECT 1 FROM paper WHERE year)").fetchone()[0]),
        "n_authors": int(con.execute("SELECT COUNT(DISTINCT name) FROM paper_author").fetchone()[0]),
        "category_names": sorted((n for (n,) in con.execute("SELECT DISTINCT name FROM paper_category")),
                                 key=lambda n: (n.casefold(), n)),
        "category_counts": sorted(((d, int(c)) for d, c in counts), key=lambda kv: (-kv[1], kv[0])),
    }
    con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", ((k, json.dumps(v)) for k, v in meta.items()))


def write(con: sqlite3.Connection, papers: Iterable[PaperNames]) -> None:
    """Fill an empty database from (paper id, year, authors, categories) rows, streamed, and commit."""
    con.executescript(SCHEMA)
    add(con, papers, None)
    refresh(con, None)
    con.commit()


def update(con: sqlite3.Connection, removed: Iterable[str], added: Iterable[PaperNames]) -> None:
    """Remove then add papers and refresh what they touched, inside the caller's transaction (no commit)."""
    changed = Changed()
    remove(con, removed, changed)
    add(con, added, changed)
    refresh(con, changed)


def connect(path: Path) -> sqlite3.Connection:
    """A writable connection (WAL: readers in other connections see the last commit while one is written)."""
    con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.executescript(SCHEMA)
    return con


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
                     self._rows("SELECT toks, display FROM author WHERE first = ? AND n > 1 ORDER BY n DESC, toks",
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
        return frozenset(p for (p,) in self._rows(
            "SELECT pc.pid FROM category c JOIN paper_category pc ON pc.toks = c.toks WHERE c.display = ?",
            (category,)))

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
        return self._grouped("SELECT c.display, pc.pid FROM paper_category pc JOIN category c ON c.toks = pc.toks")

    @cached_property
    def author_papers(self) -> dict[str, frozenset[str]]:
        """Display author name → paper ids."""
        return self._grouped("SELECT a.display, pa.pid FROM paper_author pa JOIN author a ON a.toks = pa.toks")
