"""BM25 over whole papers (Lucene variant, Snowball-stemmed), persisted beside the store and kept in sync
by increments: the cost of following an ingest is that of the papers it changed, not of the library.

The index is a list of immutable segments (``rag.index.segments``: postings with raw term frequencies,
lengths, filter fields, forward index) plus tombstones for the papers deleted or replaced since a
segment was written. BM25's global statistics (document count, document frequencies, average length)
are recomputed from the segments' own counts minus the tombstoned docs whenever the set changes, and
scores are computed at query time, so a paper's score is exactly what a from-scratch build over the
same papers gives.

Following the store: its (generation, chunk count) is the cheap "did anything change" check; when it
differs, the index lists the store's paper versions from chunk ids alone (``rag.index.store_versions``),
diffs them against its own, reads and analyses only the added or changed papers into a new segment,
tombstones the replaced and deleted ones, and updates the question-filter catalog
(``rag.index.filter_catalog``) for the same papers. Small segments are merged when there are many, and
everything is merged into one when the changes reach a quarter of the base (no text analysed again: a
merge reads the forward indexes).

Crash safety: segments and vocabulary files are written whole (temporary name, synced, renamed) before
they are referenced; the manifest (segment list, vocabulary files, tombstones, the store state it
matches) lives in the catalog's SQLite file and is committed in the same transaction as the catalog's
rows, so a kill at any moment leaves either the previous index or the new one. Files no manifest names
are swept on the next write. An index that cannot be read (torn file, other format) is rebuilt from the
store in a fresh folder swapped in whole: the fallback. One process writes at a time (a lock file
beside the index); others reload what it committed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from rag.analysis import analyze
from rag.index import filter_catalog, shared_lexical
from rag.index.lexical_view import IndexView, Vocabulary
from rag.index.rows import FIRST_CHUNK, filter_fields, read_paper
from rag.index.segments import NO_YEAR, Doc, Segment, write_json, year_of
from rag.index.store import ChromaStore
from rag.index.store_versions import first_rows, stored_versions
from rag.records import StoredPaper
from rag.text import plain_text

log = logging.getLogger(__name__)

TITLE_WEIGHT = 2  # the title is repeated: a term in the title says more than one in the abstract
FORMAT = 2  # the on-disk layout; an index saved in another is rebuilt
# What the analyser makes of a probe text (stemming, stop words, case and accents, numbers, hyphens, notation):
# an index analysed by another analyser holds other terms, so it is rebuilt, as for another format. Indexes
# saved before the fingerprint was recorded carry none and are taken as today's (the analyser has not changed
# since); the next commit records it.
_PROBE = ("The Running runners ran 3.5x faster: naïve Café-style state-of-the-art RLHF/PPO models, "
          "$\\alpha$-divergences of GPT-4 and ResNet-50; boundary-layer separations at Mach 2.")
ANALYZER = hashlib.sha1("\x1f".join(analyze(_PROBE)).encode()).hexdigest()[:16]
CATALOG_FILE = "catalog.sqlite"
MAX_SMALL_SEGMENTS = 8  # more small segments than this: they are merged into one
MERGE_ALL_FRACTION = 0.25  # small segments' docs + tombstones past this share of the base: one segment again
_NO_YEAR = NO_YEAR


def paper_text(paper: StoredPaper) -> str:
    """What BM25 sees of a paper: title (weighted), authors, categories, abstract."""
    title = paper.title or ""
    parts = [title] * TITLE_WEIGHT + [" ".join(paper.authors), " ".join(paper.categories),
                                      plain_text(paper.abstract)]
    return " ".join(p for p in parts if p)



class LexicalIndex:
    """BM25 scores over the store's papers, loaded from disk, followed by increments, rebuilt when unreadable."""

    def __init__(self, root: Path, k1: float = 1.2, b: float = 0.75) -> None:
        self.root = root
        self.k1, self.b = k1, b
        self._bm25: IndexView | None = None  # the loaded index (None: nothing loaded yet)
        self._manifest: dict[str, Any] = {}
        self._built_at: tuple[int, int] = (-1, -1)
        self._checked_at = -1e9  # time.monotonic() of the last state check
        self._lock = threading.Lock()
        self._publisher = shared_lexical.Publisher(root, self._writer)
        self._share_checked = False

    @staticmethod
    def for_store(home: Path, store: ChromaStore) -> LexicalIndex:
        key = hashlib.sha1(f"{store.location}|{store.settings.store.chroma_collection}".encode()).hexdigest()[:12]
        return LexicalIndex(home / "lexical" / f"{store.settings.store.chroma_collection}-{key}")

    # ---- the public surface retrieval uses --------------------------------------------------------
    @property
    def paper_ids(self) -> list[str]:
        """Ids of the indexed papers, sorted; a paper's position in this list is its position everywhere."""
        return self._bm25.paper_ids if self._bm25 is not None else []

    def __len__(self) -> int:
        return self._bm25.n if self._bm25 is not None else 0

    def first_chunks(self, paper_ids: Iterable[str]) -> dict[str, str]:
        """paper id → id of the chunk-0 row the index read it from, for the indexed papers among ``paper_ids``
        (a row read by id is one lookup; by paper id, Chroma reads every chunk of the paper, passages included).
        A paper rewritten since the last sync has another chunk 0: reading this one then finds nothing."""
        view = self._bm25
        if view is None:
            return {}
        return {p: f"{view.key(view.pos[p])}#0" for p in paper_ids if p in view.pos}

    @property
    def state(self) -> tuple[int, int]:
        """The store (generation, chunk count) the loaded index matches."""
        return self._built_at

    @property
    def catalog_path(self) -> Path:
        """The question-filter catalog (``rag.index.filter_catalog``) kept with the index, in the same SQLite file
        as its manifest: every paper's authors and categories, looked up by name."""
        return self.root / CATALOG_FILE

    def year_span(self) -> tuple[int | None, int | None]:
        """Earliest and latest year among the indexed papers (None, None when no paper has one)."""
        if self._bm25 is None:
            return None, None
        years = self._bm25.years[self._bm25.years != _NO_YEAR]
        return (int(years.min()), int(years.max())) if years.size else (None, None)

    def term_scores(self, terms: dict[str, float]) -> np.ndarray:
        """Σ weight × BM25(term) for every paper (0 for unknown terms)."""
        v = self._bm25
        if v is None or not v.n:
            return np.zeros(len(self), dtype=np.float32)
        full = np.zeros(int(v.offsets[-1]), dtype=np.float32)
        for term, w in terms.items():
            tid = v.vocab.ids.get(term)
            if tid is None or not w:
                continue
            idf = v.idf(tid)
            if not idf:
                continue
            for i, seg in enumerate(v.segments):
                docs, tf = seg.postings(tid)
                if not len(docs):
                    continue
                tf64 = tf.astype(np.float64)
                data = (idf * tf64 / (tf64 + v.norms[i][docs])).astype(np.float32)
                full[v.offsets[i] + docs] += w * data  # a doc appears once per term: no repeated indices
        return full[v.view]

    def scores(self, query: str) -> np.ndarray:
        terms: dict[str, float] = {}
        for t in analyze(query):
            terms[t] = terms.get(t, 0.0) + 1.0
        return self.term_scores(terms)

    def containing(self, terms: Iterable[str]) -> np.ndarray:
        """Positions of the papers that contain every one of ``terms`` (analysed terms), ascending."""
        v = self._bm25
        if v is None:
            return np.zeros(0, dtype=np.int64)
        out: np.ndarray | None = None
        for term in terms:
            tid = v.vocab.ids.get(term)
            if tid is None:
                return np.zeros(0, dtype=np.int64)
            col = np.concatenate([v.slots_to_positions(i, seg.postings(tid)[0]) for i, seg in enumerate(v.segments)]
                                 or [np.zeros(0, np.int64)])
            col = np.unique(col)
            out = col if out is None else np.intersect1d(out, col, assume_unique=True)
        return np.sort(out) if out is not None else np.zeros(0, dtype=np.int64)

    def positions(self, paper_ids: Iterable[str]) -> np.ndarray:
        pos = self._bm25.pos if self._bm25 is not None else {}
        return np.array([pos[p] for p in paper_ids if p in pos], dtype=np.int64)

    def filter_positions(self, author_key: str | None = None, category_key: str | None = None,
                         year_from: int | None = None, year_to: int | None = None,
                         paper_ids: Iterable[str] | None = None) -> np.ndarray:
        """Positions of the papers matching every given condition — the same set Chroma's ``where`` of
        ``rag.index.paper_query.to_where`` selects (exact key in ``author_keys``/``category_keys``, year bounds,
        ids), computed from the fields kept with the index instead of reading every matching row."""
        v = self._bm25
        n = len(self)
        mask = np.ones(n, dtype=bool)
        if v is None:
            return np.zeros(0, dtype=np.int64)
        for which, key in (("authors", author_key), ("categories", category_key)):
            if key is not None:
                keep = np.zeros_like(mask)
                for i, seg in enumerate(v.segments):
                    local = getattr(seg, which).get(key)
                    if local is not None:
                        keep[v.slots_to_positions(i, local)] = True
                mask &= keep
        if year_from is not None:
            mask &= (v.years != _NO_YEAR) & (v.years >= year_from)
        if year_to is not None:
            mask &= (v.years != _NO_YEAR) & (v.years <= year_to)
        if paper_ids is not None:
            keep = np.zeros_like(mask)
            keep[self.positions(paper_ids)] = True
            mask &= keep
        return np.flatnonzero(mask)

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Lucene-style idf of analysed terms (0 for terms the corpus lacks)."""
        v = self._bm25
        if v is None:
            return {t: 0.0 for t in terms}
        out = {}
        for t in terms:
            tid = v.vocab.ids.get(t)
            out[t] = v.idf(tid) if tid is not None else 0.0
        return out

    def vocabulary(self) -> set[str]:
        """The terms at least one indexed paper holds."""
        v = self._bm25
        if v is None:
            return set()
        return {t for t, d in zip(v.vocab.terms, v.df.tolist(), strict=True) if d > 0}

    # ---- following the store ----------------------------------------------------------------------
    def sync(self, store: ChromaStore, recheck_after_s: float = 0.0) -> None:
        """Make the index match the store: reload what another process committed, apply the papers changed
        since, or (nothing readable saved) rebuild.

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
            before = self._manifest.get("commit")
            with self._writer():
                self._follow(store, state)
            if shared_lexical.enabled(store.settings) and (not self._share_checked
                                                           or self._manifest.get("commit") != before):
                self._share_checked = True  # once per process, then after each change: publish if not yet there
                self._publisher.request(store)

    def _follow(self, store: ChromaStore, state: tuple[int, int]) -> None:
        if self._load_saved() and self._built_at == state:
            return
        if self._bm25 is None:
            self._from_scratch(store, state)
            return
        self._catch_up(store, state)

    def _from_scratch(self, store: ChromaStore, state: tuple[int, int]) -> None:
        """No usable saved index (or one the store has left far behind): install the one another host published
        (``rag.index.shared_lexical``) and catch up from it, else rebuild from the store."""
        if shared_lexical.enabled(store.settings):
            fetched = shared_lexical.fetch(store, self.root, self.accepts)
            self._bm25, self._manifest = None, {}
            if fetched is not None and self._load_saved():
                if not fetched.same_collection:
                    self._built_at = (-1, -1)  # published from an earlier collection of this name: diff it all
                if self._built_at != state:
                    self._catch_up(store, state, fetch=False)
                return
        self._rebuild(store.iter_metadata(where=FIRST_CHUNK), state)

    def wait_shared(self, timeout: float | None = None) -> dict[str, Any] | None:
        """Wait for the background publish of this index (if any) and return its report."""
        self._publisher.wait(timeout)
        return self._publisher.last

    def _load(self, state: tuple[int, int]) -> bool:
        """Load the saved index if it matches the store ``state`` (False, nothing loaded, otherwise)."""
        with self._lock:
            saved = self._read_manifest()
            if saved is None or tuple(saved.get("state", ())) != tuple(state):
                return False
            return self._load_saved(saved)

    @contextmanager
    def _writer(self) -> Iterator[None]:
        """One writer at a time across processes sharing this home (a lock file beside the index)."""
        self.root.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root.with_name(self.root.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _read_manifest(self) -> dict[str, Any] | None:
        path = self.catalog_path
        if not path.is_file():
            return None
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                rows = dict(con.execute("SELECT k, v FROM lex"))
            finally:
                con.close()
            manifest = {k: json.loads(v) for k, v in rows.items()}
        except (sqlite3.Error, ValueError) as e:
            log.warning("lexical index manifest at %s unreadable (%s)", path, e)
            return None
        return manifest if self.accepts(manifest) else None

    def accepts(self, manifest: dict[str, Any]) -> bool:
        """Whether an index saved (or published) with this manifest scores as this one would: same format, same
        BM25 parameters, same analyser (an index from before the fingerprint was recorded is taken as today's)."""
        return (manifest.get("format") == FORMAT and manifest.get("k1") == self.k1 and manifest.get("b") == self.b
                and manifest.get("analyzer", ANALYZER) == ANALYZER)

    def _load_saved(self, manifest: dict[str, Any] | None = None) -> bool:
        """(Re)load what the saved manifest names, reusing segments already open. False if unreadable."""
        manifest = manifest if manifest is not None else self._read_manifest()
        if manifest is None:
            return False
        if self._bm25 is not None and manifest.get("commit") == self._manifest.get("commit"):
            self._built_at = (int(manifest["state"][0]), int(manifest["state"][1]))
            return True
        try:
            open_now = {s.name: s for s in self._bm25.segments} if self._bm25 is not None else {}
            segments = [open_now.get(name) or Segment.open(self.root / name) for name in manifest["segments"]]
            old = self._manifest.get("vocab", []) if self._bm25 is not None else []
            if old and manifest["vocab"][:len(old)] == old:  # only new terms appended: read only their files
                vocab, todo = self._bm25.vocab.copy(), manifest["vocab"][len(old):]  # type: ignore[union-attr]
            else:
                vocab, todo = Vocabulary(), manifest["vocab"]
            for name in todo:
                vocab.extend(json.loads((self.root / name).read_text(encoding="utf-8")))
            if len(vocab.terms) != manifest["vocab_size"]:
                raise ValueError(f"vocabulary has {len(vocab.terms)} terms, manifest says {manifest['vocab_size']}")
            deleted = {k: set(v) for k, v in manifest["deleted"].items()}
            view = IndexView(segments, deleted, vocab, self.k1, self.b)
        except (OSError, ValueError, KeyError, IndexError) as e:
            log.warning("lexical index at %s unreadable (%s); rebuilding", self.root, e)
            self._bm25 = None
            return False
        self._bm25, self._manifest = view, manifest
        self._built_at = (int(manifest["state"][0]), int(manifest["state"][1]))
        return True

    def invalidate(self) -> None:
        """Forget the loaded index and drop the saved one, so the next sync rebuilds it (a file saved with it,
        such as the catalog, was found torn)."""
        with self._lock, self._writer():
            self._bm25, self._manifest, self._built_at = None, {}, (-1, -1)
            self.catalog_path.unlink(missing_ok=True)

    # ---- building ---------------------------------------------------------------------------------
    def _docs(self, papers: Iterable[dict[str, Any]], vocab: Vocabulary, new_terms: list[str]) -> Iterator[Doc]:
        for md in papers:
            f = filter_fields(md)
            words = analyze(paper_text(read_paper(md))) or ["\x00empty"]
            yield Doc(f.version, f.paper_id, vocab.encode(words, new_terms), year_of(f.year), f.author_keys,
                      f.category_keys, f.authors, f.categories)

    def _build(self, papers: Iterable[dict[str, Any]], state: tuple[int, int]) -> None:
        """A from-scratch build from chunk-0 rows (the fallback; tests and the crash verifier compare with it)."""
        with self._lock, self._writer():
            self._rebuild(papers, state)

    def _rebuild(self, papers: Iterable[dict[str, Any]], state: tuple[int, int]) -> None:
        """Analyse every paper into one segment and a fresh catalog, in a new folder swapped in whole."""
        t0 = time.perf_counter()
        vocab, new_terms = Vocabulary(), []  # type: ignore[var-annotated]
        chosen: dict[str, Doc] = {}
        for doc in self._docs(papers, vocab, new_terms):
            if doc.key > getattr(chosen.get(doc.pid), "key", ""):  # several versions: the largest key
                chosen[doc.pid] = doc
        docs = [chosen[p] for p in sorted(chosen)]
        del chosen
        tmp = self.root.with_name(self.root.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        docs, vocab_name, vocab_size = self._compact_vocab(docs, vocab, tmp)
        seg = Segment.write(tmp / _segment_name(), docs)
        con = filter_catalog.connect(tmp / CATALOG_FILE)
        try:
            con.execute("BEGIN")
            filter_catalog.add(con, ((d.pid, d.year, d.authors, d.categories) for d in docs), None)
            filter_catalog.refresh(con, None)
            self._write_manifest(con, self._new_manifest([seg.name], [vocab_name], vocab_size, {}, state))
            con.execute("COMMIT")
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            con.close()
        old = self.root.with_name(self.root.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if self.root.exists():
            self.root.rename(old)
        tmp.rename(self.root)
        shutil.rmtree(old, ignore_errors=True)
        self._bm25 = None
        if not self._load_saved():
            raise RuntimeError(f"the lexical index just built at {self.root} does not load")
        log.info("lexical index rebuilt: %d papers in %.1f s at %s", len(docs), time.perf_counter() - t0, self.root)

    @staticmethod
    def _compact_vocab(docs: list[Doc], vocab: Vocabulary, folder: Path) -> tuple[list[Doc], str, int]:
        """Renumber the docs' terms to the terms they use (sorted), saved as a new vocabulary file."""
        flat = np.concatenate([d.terms for d in docs]) if docs else np.zeros(0, np.int32)
        # A mask over the vocabulary, not np.unique: no sorted copy and int64 inverse of every term occurrence
        # (~500 MB more at the peak of a 100k-paper merge, measured).
        mask = np.zeros(max(len(vocab.terms), int(flat.max()) + 1 if flat.size else 0), dtype=bool)
        mask[flat] = True
        used = np.flatnonzero(mask)
        remap = (np.cumsum(mask, dtype=np.int64) - 1).astype(np.int32)
        del mask
        inverse = remap[flat]
        del flat, remap
        start = 0
        for d in docs:
            d.terms = inverse[start:start + len(d.terms)]
            start += len(d.terms)
        name = f"vocab-{uuid.uuid4().hex[:12]}.json"
        write_json(folder / name, [vocab.terms[int(i)] for i in used])
        return docs, name, len(used)

    def _new_manifest(self, segments: list[str], vocab: list[str], vocab_size: int,
                      deleted: dict[str, list[int]], state: tuple[int, int]) -> dict[str, Any]:
        return {"format": FORMAT, "k1": self.k1, "b": self.b, "analyzer": ANALYZER, "segments": segments,
                "vocab": vocab,
                "vocab_size": vocab_size, "deleted": deleted, "state": list(state), "commit": uuid.uuid4().hex}

    @staticmethod
    def _write_manifest(con: sqlite3.Connection, manifest: dict[str, Any]) -> None:
        con.execute("CREATE TABLE IF NOT EXISTS lex(k TEXT PRIMARY KEY, v TEXT NOT NULL)")
        con.executemany("INSERT OR REPLACE INTO lex VALUES (?, ?)", ((k, json.dumps(v)) for k, v in manifest.items()))

    def _catch_up(self, store: ChromaStore, state: tuple[int, int], fetch: bool = True) -> None:
        """Apply the papers added, changed and deleted in the store since the loaded index (more than half of
        them changed: start from the published index, with ``fetch``, or rebuild)."""
        t0 = time.perf_counter()
        v = self._bm25
        assert v is not None
        stored = stored_versions(store)
        have: dict[str, tuple[int, int, str]] = {}  # live pid → (segment index, local doc, version key)
        for i, seg in enumerate(v.segments):
            gone = v.deleted.get(seg.name, set())
            for j, (k, p) in enumerate(zip(seg.keys, seg.pids, strict=True)):
                if j not in gone:
                    have[p] = (i, j, k)
        removed = [p for p, (_, _, k) in have.items() if stored.get(p) != k]
        wanted = {p: k for p, k in stored.items() if p not in have or have[p][2] != k}
        t_list = time.perf_counter() - t0
        if len(wanted) + len(removed) > 0.5 * max(len(stored), 1) and len(stored) > 1000:
            log.info("lexical index: %d of %d papers changed; starting again", len(wanted), len(stored))
            if fetch:
                self._from_scratch(store, state)
            else:
                self._rebuild(store.iter_metadata(where=FIRST_CHUNK), state)
            return
        rows = [md for md in first_rows(store, wanted) if filter_fields(md).version == wanted.get(md["paper_id"])]
        self._apply(removed, rows, state)
        if rows or removed:
            log.info("lexical index updated: %d papers added or changed, %d removed or replaced in %.2f s (%.2f s "
                     "listing the store's versions)", len(rows), len(removed), time.perf_counter() - t0, t_list)

    def _apply(self, removed: list[str], rows: list[dict[str, Any]], state: tuple[int, int]) -> None:
        """Tombstone the papers ``removed`` (ids), add the chunk-0 ``rows`` as a new segment, commit at ``state``.
        A paper being replaced is in both."""
        v = self._bm25
        assert v is not None
        where = {p: (i, j) for i, seg in enumerate(v.segments) for j, p in enumerate(seg.pids)
                 if j not in v.deleted.get(seg.name, ())} if removed else {}
        vocab = v.vocab.copy()
        new_terms: list[str] = []
        docs = sorted(self._docs(rows, vocab, new_terms), key=lambda d: d.pid)
        deleted = {k: set(s) for k, s in v.deleted.items()}
        for p in removed:
            i, j = where[p]
            deleted.setdefault(v.segments[i].name, set()).add(j)
        self._commit(v.segments, deleted, removed, docs, new_terms, state)

    def _commit(self, segments: list[Segment], deleted: dict[str, set[int]], removed: list[str], docs: list[Doc],
                new_terms: list[str], state: tuple[int, int]) -> None:
        """Write the new segment and vocabulary file, merge if due, and commit manifest and catalog at once."""
        manifest = self._manifest
        opened = {s.name: s for s in segments}
        vocab_files = list(manifest["vocab"])
        if new_terms:
            name = f"vocab-{uuid.uuid4().hex[:12]}.json"
            write_json(self.root / name, new_terms)
            vocab_files.append(name)
        vocab_size = int(manifest["vocab_size"]) + len(new_terms)
        if docs:
            seg = Segment.write(self.root / _segment_name(), docs)
            opened[seg.name] = seg
        seg_names = list(opened)
        deleted = {k: s for k, s in deleted.items() if s}
        seg_names, deleted, vocab_files, vocab_size = self._maybe_merge(opened, seg_names, deleted, vocab_files,
                                                                        vocab_size)
        new = self._new_manifest(seg_names, vocab_files, vocab_size, {k: sorted(s) for k, s in deleted.items()},
                                 state)
        con = filter_catalog.connect(self.catalog_path)
        try:
            con.execute("BEGIN IMMEDIATE")
            if removed or docs:
                filter_catalog.update(con, removed, ((d.pid, d.year, d.authors, d.categories) for d in docs))
            self._write_manifest(con, new)
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        finally:
            con.close()
        self._sweep(new)
        if not self._load_saved(new):
            raise RuntimeError(f"the lexical index just updated at {self.root} does not load")

    def _maybe_merge(self, segs: dict[str, Segment], seg_names: list[str], deleted: dict[str, set[int]],
                     vocab_files: list[str], vocab_size: int) -> tuple[list[str], dict[str, set[int]], list[str], int]:
        """Merge the small segments when there are too many; everything into one (vocabulary compacted) when
        the small segments and tombstones reach a quarter of the base. Reads forward indexes, analyses nothing."""
        base = seg_names[0] if seg_names else None
        small = seg_names[1:]
        changes = sum(segs[n].n for n in small) + sum(len(s) for s in deleted.values())
        if base is not None and changes > MERGE_ALL_FRACTION * max(segs[base].n, 1):
            docs = sorted(self._live_docs(seg_names, segs, deleted), key=lambda d: d.pid)
            vocab = Vocabulary()
            for name in vocab_files:
                vocab.extend(json.loads((self.root / name).read_text(encoding="utf-8")))
            docs, vocab_name, size = self._compact_vocab(docs, vocab, self.root)
            merged = Segment.write(self.root / _segment_name(), docs)
            log.info("lexical index: %d segments merged into one (%d papers)", len(seg_names), merged.n)
            return [merged.name], {}, [vocab_name], size
        if len(small) > MAX_SMALL_SEGMENTS:
            docs = sorted(self._live_docs(small, segs, deleted), key=lambda d: d.pid)
            merged = Segment.write(self.root / _segment_name(), docs)
            return [seg_names[0], merged.name], {k: s for k, s in deleted.items() if k == seg_names[0]}, \
                vocab_files, vocab_size
        return seg_names, deleted, vocab_files, vocab_size

    @staticmethod
    def _live_docs(names: list[str], segs: dict[str, Segment], deleted: dict[str, set[int]]) -> Iterator[Doc]:
        for name in names:
            gone = deleted.get(name, set())
            yield from segs[name].docs_of([j for j in range(segs[name].n) if j not in gone])

    def _sweep(self, manifest: dict[str, Any]) -> None:
        """Delete segment and vocabulary files no manifest names (left by a merge, or by a killed write)."""
        keep = set(manifest["segments"]) | set(manifest["vocab"])
        for path in self.root.iterdir():
            if path.name.startswith(("seg-", "vocab-")) and path.name not in keep:
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)


def _segment_name() -> str:
    return f"seg-{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"


def saved_state(root: Path) -> tuple[tuple[int, int] | None, list[str]]:
    """The store state a saved index matches and its paper ids (for checks from outside, e.g. the crash loop)."""
    index = LexicalIndex(root)
    manifest = index._read_manifest()
    if manifest is None or not index._load_saved(manifest):
        return None, []
    return index.state, index.paper_ids
