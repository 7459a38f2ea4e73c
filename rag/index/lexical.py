"""BM25 over whole papers (Lucene variant, Snowball-stemmed), persisted beside the store and kept in sync.

The index is derived data: it is rebuilt from the store's papers whenever the store's generation
(bumped by every ingest that changed something) or paper count differs from the one it was built
at, so a crash, another process's ingest or a Chroma server shared by many clients can never leave
it silently stale.

A rebuild streams the store's paper rows page by page and keeps each paper's terms only as int32
term ids (not lists of strings), so its memory grows by a few hundred bytes per paper. The analysed
term ids are saved with the index, keyed by paper id and content hash, so the next rebuild (after
an ingest added or changed a few papers) re-analyses only those and recomputes the BM25 matrix
from the saved ids.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np

from rag.analysis import analyze
from rag.index import filter_catalog
from rag.index.rows import FIRST_CHUNK, filter_fields, read_paper
from rag.index.store import ChromaStore
from rag.records import StoredPaper
from rag.text import plain_text

log = logging.getLogger(__name__)

TITLE_WEIGHT = 2  # the title is repeated: a term in the title says more than one in the abstract


class _Scores:
    """Lucene-variant BM25 scores as a CSC matrix: column t lists the papers that contain term t and their
    scores. Built with numpy from the papers' term ids; saved in bm25s's file layout (``bm25s.BM25.load``
    reads it, and a test checks it scores alike) and loaded with numpy alone, so a process that only
    answers never imports bm25s and scipy (0.35 s of `import bm25s`, timed under load)."""

    def __init__(self, vocab_dict: dict[str, int], data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
                 n_docs: int, k1: float, b: float) -> None:
        self.vocab_dict, self.n_docs, self.k1, self.b = vocab_dict, n_docs, k1, b
        self.scores = {"data": data, "indices": indices, "indptr": indptr}

    @staticmethod
    def build(flat: np.ndarray, offsets: np.ndarray, vocab: list[str], k1: float, b: float) -> _Scores:
        """``flat``: every paper's term ids (0..len(vocab)-1) one after another; ``offsets``: where each paper
        starts (n + 1 entries). score(t, d) = idf(t) · tf / (tf + k1 · (1 − b + b · |d| / avgdl)), with
        idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)), as Lucene and bm25s's "lucene" method compute it.
        Memory: a few int64 arrays as long as ``flat``, transient (bm25s's indexer, used before, counted
        terms in Python dicts per paper: its rebuild process peaked at 1.77 GB on 100k papers)."""
        n, v = len(offsets) - 1, len(vocab)
        counts = np.diff(offsets)
        lengths = counts.astype(np.float64)
        key = flat.astype(np.int64) * n  # (term, paper) pairs as one sortable int: term-major = CSC order
        key += np.repeat(np.arange(n, dtype=np.int64), counts)
        key.sort()
        starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
        tf = np.diff(np.append(starts, len(key))).astype(np.float64)
        pairs = key[starts]
        del key, starts
        term = pairs // n
        paper = (pairs - term * n).astype(np.int32)
        del pairs
        df = np.bincount(term, minlength=v)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        norm = k1 * (1 - b + b * lengths / lengths.mean())
        data = (idf[term] * tf / (tf + norm[paper])).astype(np.float32)
        indptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
        return _Scores({w: i for i, w in enumerate(vocab)}, data, paper, indptr, n, k1, b)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        params = {"k1": self.k1, "b": self.b, "delta": 0.5, "method": "lucene", "idf_method": "lucene",
                  "dtype": "float32", "int_dtype": "int32", "num_docs": self.n_docs, "version": "paperchat",
                  "backend": "numpy"}
        (folder / "params.index.json").write_text(json.dumps(params, indent=1))
        (folder / "vocab.index.json").write_text(json.dumps(self.vocab_dict, ensure_ascii=False), encoding="utf-8")
        for name, arr in self.scores.items():
            np.save(folder / f"{name}.csc.index.npy", arr, allow_pickle=False)

    @staticmethod
    def load(folder: Path) -> _Scores:
        params = json.loads((folder / "params.index.json").read_text())
        if params.get("method") != "lucene":
            raise ValueError(f"unexpected BM25 variant {params.get('method')!r}")
        vocab = json.loads((folder / "vocab.index.json").read_text(encoding="utf-8"))
        data, indices, indptr = (np.load(folder / f"{name}.csc.index.npy", allow_pickle=False)
                                 for name in ("data", "indices", "indptr"))
        return _Scores(vocab, data, indices, indptr, int(params["num_docs"]), float(params["k1"]), float(params["b"]))


def paper_text(paper: StoredPaper) -> str:
    """What BM25 sees of a paper: title (weighted), authors, categories, abstract."""
    title = paper.title or ""
    parts = [title] * TITLE_WEIGHT + [" ".join(paper.authors), " ".join(paper.categories),
                                      plain_text(paper.abstract)]
    return " ".join(p for p in parts if p)


_NO_YEAR = np.iinfo(np.int32).min
CATALOG_FILE = "catalog.sqlite"


class _Postings(Mapping[str, np.ndarray]):
    """Key → positions, as saved (sorted keys, offsets, one positions array): looked up by key without
    making one array per key up front (loading the fields of 100k papers, 128k author keys: 0.21 → 0.09 s)."""

    def __init__(self, keys: list[str], offsets: np.ndarray, pos: np.ndarray) -> None:
        self._keys, self._off, self._pos = keys, offsets, pos
        self._index: dict[str, int] = dict(zip(keys, range(len(keys))))

    def __getitem__(self, key: str) -> np.ndarray:
        i = self._index[key]
        return self._pos[self._off[i]:self._off[i + 1]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class _Fields:
    """Per-paper filter fields, in index order: year, and author/category keys as postings lists."""

    def __init__(self, years: np.ndarray, authors: Mapping[str, np.ndarray],
                 categories: Mapping[str, np.ndarray]) -> None:
        self.years, self.authors, self.categories = years, authors, categories

    @staticmethod
    def empty() -> _Fields:
        return _Fields(np.zeros(0, np.int32), {}, {})

    @staticmethod
    def build(rows: list[tuple[Any, list[str], list[str]]]) -> _Fields:
        years = np.array([y if isinstance(y, int) and not isinstance(y, bool) else _NO_YEAR for y, _, _ in rows],
                         dtype=np.int64).clip(_NO_YEAR, np.iinfo(np.int32).max).astype(np.int32)
        posts: tuple[dict[str, list[int]], dict[str, list[int]]] = ({}, {})
        for i, (_, authors, cats) in enumerate(rows):
            for table, keys in zip(posts, (authors, cats), strict=True):
                for k in set(keys):
                    table.setdefault(k, []).append(i)
        a, c = ({k: np.array(v, dtype=np.int64) for k, v in t.items()} for t in posts)
        return _Fields(years, a, c)

    def save(self, path: Path) -> None:
        arrays: dict[str, np.ndarray] = {"years": self.years}
        for name, table in (("authors", self.authors), ("categories", self.categories)):
            keys = sorted(table)
            arrays[f"{name}_keys"] = _json_bytes(keys)
            arrays[f"{name}_offsets"] = np.cumsum([0] + [len(table[k]) for k in keys]).astype(np.int64)
            arrays[f"{name}_pos"] = (np.concatenate([table[k] for k in keys]) if keys else np.zeros(0)).astype(np.int64)
        np.savez(path, **cast(dict[str, Any], arrays))  # (numpy's stub reads ** as allow_pickle)

    @staticmethod
    def load(path: Path) -> _Fields | None:
        try:
            with np.load(path, allow_pickle=False) as z:
                tables = []
                for name in ("authors", "categories"):
                    keys = json.loads(z[f"{name}_keys"].tobytes())
                    off, pos = z[f"{name}_offsets"], z[f"{name}_pos"]
                    tables.append(_Postings(keys, off, pos))
                return _Fields(z["years"], tables[0], tables[1])
        except (OSError, ValueError, KeyError):
            return None


def _json_bytes(value: Any) -> np.ndarray:
    return np.frombuffer(json.dumps(value).encode(), dtype=np.uint8)


class LexicalIndex:
    """BM25 scores over the store's papers, loaded from disk or rebuilt when stale."""

    def __init__(self, root: Path, k1: float = 1.2, b: float = 0.75) -> None:
        self.root = root
        self.k1, self.b = k1, b
        self.paper_ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._bm25: Any = None
        self._fields: _Fields = _Fields.empty()
        self._built_at: tuple[int, int] = (-1, -1)
        self._checked_at = -1e9  # time.monotonic() of the last state check
        self._lock = threading.Lock()

    @staticmethod
    def for_store(home: Path, store: ChromaStore) -> LexicalIndex:
        key = hashlib.sha1(f"{store.location}|{store.settings.store.collection}".encode()).hexdigest()[:12]
        return LexicalIndex(home / "lexical" / f"{store.settings.store.collection}-{key}")

    def __len__(self) -> int:
        return len(self.paper_ids)

    def sync(self, store: ChromaStore, recheck_after_s: float = 0.0) -> None:
        """Make the index match the store: load the saved one if current, else rebuild and save.

        ``recheck_after_s``: trust a check made that recently in this process instead of asking the store
        again (an answer checks once for its question's filters, then retrieves: at 100k papers Chroma's
        ``count()`` takes 20 ms)."""
        with self._lock:
            if (recheck_after_s > 0 and self._bm25 is not None
                    and time.monotonic() - self._checked_at < recheck_after_s):
                return
            state = (store.generation, store.count_chunks())  # any ingest changes one
            self._checked_at = time.monotonic()
            if self._bm25 is not None and self._built_at == state:
                return
            if self._load(state):
                return
            self._build(store.iter_metadata(where=FIRST_CHUNK), state)

    def _manifest(self) -> Path:
        return self.root / "manifest.json"

    def _load(self, state: tuple[int, int]) -> bool:
        try:
            manifest = json.loads(self._manifest().read_text())
        except (OSError, ValueError):
            return False
        if tuple(manifest.get("state", ())) != state or manifest.get("k1") != self.k1 or manifest.get("b") != self.b:
            return False
        try:
            bm25 = _Scores.load(self.root / "bm25")
        except Exception as e:  # a torn or foreign index is rebuilt, not trusted
            log.warning("lexical index at %s unreadable (%s); rebuilding", self.root, e)
            return False
        fields = _Fields.load(self.root / "fields.npz")
        current = fields is not None and len(fields.years) == len(manifest["paper_ids"])
        if not current or not (self.root / CATALOG_FILE).is_file():
            return False  # an index saved before filter fields (or the catalog) were kept: rebuild it once
        self._set(bm25, manifest["paper_ids"], state, fields)
        return True

    def _set(self, bm25: Any, paper_ids: list[str], state: tuple[int, int], fields: _Fields | None = None) -> None:
        self._bm25, self.paper_ids, self._built_at = bm25, paper_ids, state
        self._pos = {p: i for i, p in enumerate(paper_ids)}
        self._fields = fields or _Fields.empty()

    def _saved_terms(self) -> tuple[dict[str, np.ndarray], list[str]]:
        """Term ids per ``paper_id#content_hash`` from the last build, and its vocabulary (empty if none)."""
        try:
            with np.load(self.root / "terms.npz", allow_pickle=False) as z:
                ids, offsets = z["ids"], z["offsets"]
                keys, vocab = json.loads(z["keys"].tobytes()), json.loads(z["vocab"].tobytes())
        except (OSError, ValueError, KeyError):
            return {}, []
        return {k: ids[offsets[i]:offsets[i + 1]] for i, k in enumerate(keys)}, vocab

    def _build(self, papers: Iterable[dict[str, Any]], state: tuple[int, int]) -> None:
        saved, old_vocab = self._saved_terms()
        vocab: dict[str, int] = {t: i for i, t in enumerate(old_vocab)}
        rows: list[tuple[str, str, np.ndarray, Any, list[str], list[str]]] = []
        names: dict[str, tuple[list[str], list[str]]] = {}  # display authors and categories, for the catalog
        reused = 0
        for md in papers:  # streamed: only term ids are kept per paper
            f = filter_fields(md)
            terms = saved.get(f.version)
            if terms is None:
                words = analyze(paper_text(read_paper(md))) or ["\x00empty"]
                terms = np.fromiter((vocab.setdefault(w, len(vocab)) for w in words), dtype=np.int32, count=len(words))
            else:
                reused += 1
            rows.append((f.paper_id, f.version, terms, f.year, f.author_keys, f.category_keys))
            names[f.paper_id] = (f.authors, f.categories)
        del saved
        rows.sort(key=lambda r: r[0])
        ids = [r[0] for r in rows]
        keys = [r[1] for r in rows]
        if not rows:
            self._set(None, [], state)
            return
        catalog = [(pid, r[3] if isinstance(r[3], int) and not isinstance(r[3], bool) else None, *names[pid])
                   for pid, r in zip(ids, rows, strict=True)]
        del names
        # Keep only the terms still used, renumbered 0..V-1 (old vocabularies would otherwise only grow).
        fields = _Fields.build([(r[3], r[4], r[5]) for r in rows])
        lengths = np.array([len(r[2]) for r in rows], dtype=np.int64)
        used, flat = np.unique(np.concatenate([r[2] for r in rows]), return_inverse=True)
        flat = flat.astype(np.int32)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        words_of = {i: w for w, i in vocab.items()}
        new_vocab = [words_of[int(i)] for i in used]
        del rows, words_of, vocab
        bm25 = _Scores.build(flat, offsets, new_vocab, self.k1, self.b)
        # Write to a fresh folder, then swap it in, so a crash never leaves a half-written index.
        tmp = self.root.with_name(self.root.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        bm25.save(tmp / "bm25")
        fields.save(tmp / "fields.npz")
        filter_catalog.write_file(tmp / CATALOG_FILE, catalog)
        del catalog
        np.savez(tmp / "terms.npz", ids=flat, offsets=offsets, keys=_json_bytes(keys), vocab=_json_bytes(new_vocab))
        (tmp / "manifest.json").write_text(json.dumps({"state": list(state), "paper_ids": ids,
                                                       "k1": self.k1, "b": self.b}))
        old = self.root.with_name(self.root.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if self.root.exists():
            self.root.rename(old)
        tmp.rename(self.root)
        shutil.rmtree(old, ignore_errors=True)
        self._set(bm25, ids, state, fields)
        log.info("lexical index rebuilt: %d papers (%d analysed, %d reused) at %s", len(ids), len(ids) - reused,
                 reused, self.root)

    @property
    def state(self) -> tuple[int, int]:
        """The store (generation, chunk count) the loaded index was built at."""
        return self._built_at

    @property
    def catalog_path(self) -> Path:
        """The question-filter catalog (``rag.index.filter_catalog``) written with the index: every paper's
        authors and categories, looked up by name instead of read from every paper's row in Chroma."""
        return self.root / CATALOG_FILE

    def invalidate(self) -> None:
        """Forget the loaded index and drop the saved manifest, so the next sync rebuilds it (a file saved
        with it, such as the catalog, was found torn)."""
        with self._lock:
            self._manifest().unlink(missing_ok=True)
            self._bm25, self._built_at = None, (-1, -1)

    def year_span(self) -> tuple[int | None, int | None]:
        """Earliest and latest year among the indexed papers (None, None when no paper has one)."""
        years = self._fields.years[self._fields.years != _NO_YEAR]
        return (int(years.min()), int(years.max())) if years.size else (None, None)

    def term_scores(self, terms: dict[str, float]) -> np.ndarray:
        """Σ weight × BM25(term) for every paper (0 for unknown terms)."""
        out = np.zeros(len(self.paper_ids), dtype=np.float32)
        if self._bm25 is None:
            return out
        vocab = self._bm25.vocab_dict
        m = self._bm25.scores  # CSC: a term's column lists the papers that contain it and their scores
        data, indices, indptr = m["data"], m["indices"], m["indptr"]
        for term, w in terms.items():
            tid = vocab.get(term)
            if tid is None or not w or tid + 1 >= len(indptr):
                continue
            a, b = indptr[tid], indptr[tid + 1]
            out[indices[a:b]] += w * data[a:b]  # a paper appears once per column: no repeated indices
        return out

    def containing(self, terms: Iterable[str]) -> np.ndarray:
        """Positions of the papers that contain every one of ``terms`` (analysed terms), ascending."""
        if self._bm25 is None:
            return np.zeros(0, dtype=np.int64)
        vocab = self._bm25.vocab_dict
        indices, indptr = self._bm25.scores["indices"], self._bm25.scores["indptr"]
        out: np.ndarray | None = None
        for term in terms:
            tid = vocab.get(term)
            if tid is None or tid + 1 >= len(indptr):
                return np.zeros(0, dtype=np.int64)
            col = np.asarray(indices[indptr[tid]: indptr[tid + 1]], dtype=np.int64)
            out = col if out is None else np.intersect1d(out, col, assume_unique=True)
        return np.sort(out) if out is not None else np.zeros(0, dtype=np.int64)

    def scores(self, query: str) -> np.ndarray:
        terms: dict[str, float] = {}
        for t in analyze(query):
            terms[t] = terms.get(t, 0.0) + 1.0
        return self.term_scores(terms)

    def positions(self, paper_ids: Iterable[str]) -> np.ndarray:
        return np.array([self._pos[p] for p in paper_ids if p in self._pos], dtype=np.int64)

    def filter_positions(self, author_key: str | None = None, category_key: str | None = None,
                         year_from: int | None = None, year_to: int | None = None,
                         paper_ids: Iterable[str] | None = None) -> np.ndarray:
        """Positions of the papers matching every given condition — the same set Chroma's ``where`` of
        ``rag.index.catalog.to_where`` selects (exact key in ``author_keys``/``category_keys``, year bounds,
        ids), computed from the fields kept with the index instead of reading every matching row."""
        mask = np.ones(len(self.paper_ids), dtype=bool)
        f = self._fields
        for postings, key in ((f.authors, author_key), (f.categories, category_key)):
            if key is not None:
                keep = np.zeros_like(mask)
                keep[postings.get(key, np.zeros(0, np.int64))] = True
                mask &= keep
        if year_from is not None:
            mask &= (f.years != _NO_YEAR) & (f.years >= year_from)
        if year_to is not None:
            mask &= (f.years != _NO_YEAR) & (f.years <= year_to)
        if paper_ids is not None:
            keep = np.zeros_like(mask)
            keep[self.positions(paper_ids)] = True
            mask &= keep
        return np.flatnonzero(mask)

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Lucene-style idf of analysed terms (0 for terms the corpus lacks)."""
        if self._bm25 is None:
            return {t: 0.0 for t in terms}
        vocab = self._bm25.vocab_dict
        indptr = self._bm25.scores["indptr"]
        n = len(self.paper_ids)
        out = {}
        for t in terms:
            tid = vocab.get(t)
            df = int(indptr[tid + 1] - indptr[tid]) if tid is not None and tid + 1 < len(indptr) else 0
            out[t] = float(np.log(1 + (n - df + 0.5) / (df + 0.5))) if df else 0.0
        return out
