"""BM25 over full-text passages (``ingest.full_text``), beside the paper-level index of ``rag.index.lexical``.

The paper-level index scores a paper by its title, authors, categories and abstract; a passage is scored here,
against the other passages, so a question answered by one paragraph of a paper's body finds that paragraph.

The index follows the store by increments, as the paper-level one does: when the store's (generation, chunk
count) moved, it lists the store's passage ids (ids alone, no metadata: ``rag.index.store_versions``), reads and
analyses only the passages it does not hold yet, and tombstones those the store no longer has (a passage id
names its paper's full-text version, so an id seen before is the same text). BM25's statistics (passage count,
document frequencies, average length) count live passages only, so a score is exactly what a from-scratch build
over the same passages gives; past ``COMPACT_FRACTION`` of tombstones the arrays are compacted (nothing is
analysed again). The index is saved beside the paper-level index (``<index folder>.passages.bin``, written whole
then renamed) after each change, so a process that starts on an unchanged store loads it instead of reading every
passage; a missing or unreadable file means one full build. Loading reads the file once and keeps its postings as
they lie (one array of documents, one of frequencies, an offset per term): a term's postings are sliced out the
first time a question uses it, so the first question after a process starts does not pay for the whole
vocabulary. ``counts`` says how often each path ran.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import weakref
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rag.analysis import analyze
from rag.index import rows
from rag.index.lexical import LexicalIndex
from rag.index.store import ChromaStore
from rag.index.store_versions import passage_ids

log = logging.getLogger(__name__)

_INDEXES: weakref.WeakKeyDictionary[LexicalIndex, PassageIndex] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
COMPACT_FRACTION = 0.25  # tombstoned passages past this share of the index: the arrays are compacted
FORMAT = 2  # the saved file's layout; another is ignored (one full build)
_MAGIC = b"PCPASSAGES\n"
_READ = 1000  # passages read from the store per call when catching up


def index_file(lexical: LexicalIndex) -> Path:
    """Where the passage index of the store ``lexical`` follows is saved (beside its folder, not in it: the
    paper-level index sweeps files its manifest does not name)."""
    return lexical.root.with_name(lexical.root.name + ".passages.bin")


@dataclass
class PassageIndex:
    """Passages as BM25 documents (Lucene's formula, the paper-level index's k1 and b)."""

    k1: float = 1.2
    b: float = 0.75
    path: Path | None = None  # where it is saved; None: memory only
    ids: list[str] = field(default_factory=list)  # passage row ids, in document order (tombstoned ones too)
    pids: list[str] = field(default_factory=list)  # their papers
    _refs: list[rows.PassageRef] = field(default_factory=list)  # their pages and sections: ``refs``
    # a loaded file's (pages, section codes, section names), made into ``refs`` only when first needed (a change
    # or a save): 400,000 small objects cost a question ~1 s at 10k papers, and a search never reads them
    _saved_refs: tuple[np.ndarray, np.ndarray, list[str]] | None = None
    # term → (docs, tf): the terms changed or used since the saved file was loaded; the others are in ``_csr``
    postings: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    live: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    papers: frozenset[str] = frozenset()  # the papers with full text stored
    state: tuple[int, int] | None = None
    counts: Counter[str] = field(default_factory=Counter)  # "built", "updated", "loaded", "compacted"
    _pos: dict[str, int] = field(default_factory=dict)  # live passage id → document
    # the loaded file's postings: term → position, offsets, documents, frequencies
    _csr: tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(cls, lexical: LexicalIndex) -> PassageIndex:
        """The passage index that follows ``lexical`` (one per paper-level index, made on first use)."""
        with _LOCK:
            index = _INDEXES.get(lexical)
            if index is None:
                index = _INDEXES[lexical] = cls(k1=lexical.k1, b=lexical.b, path=index_file(lexical))
            return index

    @property
    def refs(self) -> list[rows.PassageRef]:
        """Each document's pages and section, in document order."""
        if self._saved_refs is not None:
            pages, section, names = self._saved_refs
            self._refs = [rows.PassageRef(a, b, names[c])
                          for (a, b), c in zip(pages.tolist(), section.tolist(), strict=True)]
            self._saved_refs = None
        return self._refs

    @refs.setter
    def refs(self, value: list[rows.PassageRef]) -> None:
        self._refs, self._saved_refs = value, None

    @property
    def size(self) -> int:
        """Live passages."""
        return len(self._pos)

    def sync(self, store: ChromaStore, state: tuple[int, int]) -> None:
        """Follow the store to ``state`` (its (generation, chunk count)): load the saved index, apply the passages
        added and removed since, or (nothing held, nothing saved) build from every passage row."""
        if state == self.state:
            return
        with self._lock:
            if state == self.state:
                return
            t0 = time.perf_counter()
            if self.state is None and self._load():
                self.counts["loaded"] += 1
                if self.state == state:
                    return
            if self.state is None:
                self._reset()
                self._append(store.passage_rows())
                self.counts["built"] += 1
                how = "built"
            else:
                how = self._update(store)
            self.state = state
            self._save()
            if self.ids:
                log.info("passage index %s: %d passages of %d papers in %.2f s", how, self.size, len(self.papers),
                         time.perf_counter() - t0)

    def posting(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(documents, frequencies) of ``term``, or None."""
        hit = self.postings.get(term)
        if hit is None and self._csr is not None:
            at = self._csr[0].get(term)
            if at is not None:
                offsets, docs, tf = self._csr[1:]
                a, b = int(offsets[at]), int(offsets[at + 1])
                hit = self.postings[term] = (docs[a:b], tf[a:b])
        return hit

    def _terms(self) -> list[str]:
        return list(dict.fromkeys([*(self._csr[0] if self._csr is not None else ()), *self.postings]))

    def _reset(self) -> None:
        self.ids, self.pids, self.refs, self.postings, self._pos, self._csr = [], [], [], {}, {}, None
        self.lengths, self.live = np.zeros(0, np.float32), np.zeros(0, bool)
        self.papers = frozenset()

    def _update(self, store: ChromaStore) -> str:
        """Apply the store's passage changes since the last sync; what was done, for the log."""
        current = passage_ids(store)
        gone = [doc for cid, doc in self._pos.items() if cid not in current]
        new = sorted(current.difference(self._pos))
        if not gone and not new:
            return "unchanged"
        for doc in gone:
            self.live[doc] = False
            del self._pos[self.ids[doc]]
        for i in range(0, len(new), _READ):
            found = store.rows_of(new[i:i + _READ])
            self._append((cid, *found[cid]) for cid in new[i:i + _READ] if cid in found)
        if gone and len(self.ids) - self.size > COMPACT_FRACTION * len(self.ids):
            self._compact()
        self.papers = frozenset(self.pids[d] for d in self._pos.values())
        self.counts["updated"] += 1
        return f"updated (+{len(new)} -{len(gone)})"

    def _append(self, found: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        """Analyse passage rows (id, text, metadata) and add them as new documents."""
        start = len(self.ids)
        lengths: list[int] = []
        post: dict[str, dict[int, int]] = defaultdict(dict)
        for cid, text, md in found:
            doc = start + len(lengths)
            terms = analyze(f"{md.get(rows.SECTION, '')} {text}")
            self.ids.append(cid)
            self.pids.append(rows.paper_id(md))
            self.refs.append(rows.passage_ref(md))
            self._pos[cid] = doc
            lengths.append(len(terms))
            for t in terms:
                post[t][doc] = post[t].get(doc, 0) + 1
        if not lengths:
            return
        self.lengths = np.concatenate([self.lengths, np.asarray(lengths, np.float32)])
        self.live = np.concatenate([self.live, np.ones(len(lengths), bool)])
        for t, d in post.items():
            docs, tf = np.fromiter(d.keys(), np.int32, len(d)), np.fromiter(d.values(), np.float32, len(d))
            have = self.posting(t)
            self.postings[t] = (docs, tf) if have is None else (np.concatenate([have[0], docs]),
                                                                np.concatenate([have[1], tf]))
        self.papers = self.papers | frozenset(self.pids[start:])

    def _compact(self) -> None:
        """Drop tombstoned documents from every array (renumbering the live ones, order kept)."""
        keep = np.flatnonzero(self.live)
        remap = np.full(len(self.ids), -1, np.int32)
        remap[keep] = np.arange(len(keep), dtype=np.int32)
        postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for t in self._terms():
            docs, tf = self.posting(t) or (np.zeros(0, np.int32), np.zeros(0, np.float32))
            alive = self.live[docs]
            if alive.any():
                postings[t] = (remap[docs[alive]], tf[alive])
        self.postings, self._csr = postings, None
        self.ids = [self.ids[i] for i in keep]
        self.pids = [self.pids[i] for i in keep]
        self.refs = [self.refs[i] for i in keep]
        self.lengths, self.live = self.lengths[keep], np.ones(len(keep), bool)
        self._pos = {cid: i for i, cid in enumerate(self.ids)}
        self.counts["compacted"] += 1

    # ---- saved copy ---------------------------------------------------------------------------------------
    def _save(self) -> None:
        """Write the index whole beside the paper-level one (temporary name, then renamed): a JSON header, then
        the arrays' bytes one after another."""
        if self.path is None or self.state is None:
            return
        terms = self._terms()
        lists = [self.posting(t) or (np.zeros(0, np.int32), np.zeros(0, np.float32)) for t in terms]
        sizes = np.fromiter((len(d) for d, _ in lists), np.int64, len(lists))
        papers = sorted(set(self.pids))
        code = {p: i for i, p in enumerate(papers)}
        arrays: dict[str, np.ndarray] = {"offsets": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
                  "docs": np.concatenate([d for d, _ in lists] or [np.zeros(0)]).astype(np.int32),
                  "tf": np.concatenate([f for _, f in lists] or [np.zeros(0)]).astype(np.float32),
                  "lengths": self.lengths.astype(np.float32), "live": self.live.astype(bool),
                  "paper": np.fromiter((code[p] for p in self.pids), np.int32, len(self.pids)),
                  "pages": np.asarray([(r.page_start, r.page_end) for r in self.refs], np.int32).reshape(-1, 2)}
        sections = sorted({r.section for r in self.refs})
        where = {s: i for i, s in enumerate(sections)}
        arrays["section"] = np.fromiter((where[r.section] for r in self.refs), np.int32, len(self.refs))
        head = {"format": FORMAT, "state": list(self.state), "k1": self.k1, "b": self.b, "ids": "\n".join(self.ids),
                "papers": papers, "sections": sections, "terms": "\n".join(terms),
                "arrays": [[k, a.dtype.str, list(a.shape)] for k, a in arrays.items()]}
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            raw = json.dumps(head).encode()
            with open(tmp, "wb") as f:
                f.write(_MAGIC + len(raw).to_bytes(8, "little") + raw)
                for a in arrays.values():
                    f.write(np.ascontiguousarray(a).tobytes())
            os.replace(tmp, self.path)
        except OSError as e:  # a read-only home still answers: the index stays in memory
            log.warning("passage index not saved to %s: %s", self.path, e)
            tmp.unlink(missing_ok=True)

    def _load(self) -> bool:
        """Load the saved index (True), or leave this one empty when there is none usable."""
        if self.path is None or not self.path.is_file():
            return False
        try:
            # mapped, not read: a search touches the postings of its few terms, not the whole file (313 MB at
            # 400,000 passages); a save replaces the file by rename, so the mapped one stays whole
            data = np.memmap(self.path, dtype=np.uint8, mode="r")
            if bytes(data[:len(_MAGIC)]) != _MAGIC:
                raise ValueError("not a passage index")
            at = len(_MAGIC) + 8
            size = int.from_bytes(bytes(data[len(_MAGIC):at]), "little")
            head = json.loads(bytes(data[at:at + size]))
            at += size
            arrays: dict[str, np.ndarray] = {}
            for name, dtype, shape in head["arrays"]:
                n = int(np.prod(shape)) * np.dtype(dtype).itemsize
                arrays[name] = data[at:at + n].view(dtype).reshape(shape)
                at += n
            if at != len(data):
                raise ValueError(f"{len(data) - at} bytes left over")
            if head.get("format") != FORMAT or (head["k1"], head["b"]) != (self.k1, self.b):
                return False
        except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError) as e:
            log.warning("passage index at %s unreadable (%s): rebuilt", self.path, e)
            return False
        self._install(head, arrays)
        return True

    def _install(self, head: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.ids = head["ids"].split("\n") if head["ids"] else []
        papers, sections = head["papers"], head["sections"]
        self.pids = [papers[c] for c in arrays["paper"].tolist()]
        self._refs, self._saved_refs = [], (arrays["pages"], arrays["section"], sections)
        terms = head["terms"].split("\n") if head["terms"] else []
        self.postings = {}
        self._csr = ({t: i for i, t in enumerate(terms)}, arrays["offsets"], arrays["docs"], arrays["tf"])
        self.lengths, self.live = arrays["lengths"], arrays["live"].copy()
        self._pos = {self.ids[i]: i for i in np.flatnonzero(self.live).tolist()}
        self.papers = frozenset(self.pids[d] for d in self._pos.values())
        self.state = (int(head["state"][0]), int(head["state"][1]))

    # ---- scoring ------------------------------------------------------------------------------------------
    def search(self, terms: dict[str, float], n: int, allowed: set[str] | None = None) -> list[tuple[int, float]]:
        """(document, BM25 score) of the ``n`` best passages for weighted query ``terms``, best first; with
        ``allowed``, only passages of those papers."""
        live_n = self.size
        if not live_n or n <= 0:
            return []
        dead = live_n < len(self.ids)
        scores = np.zeros(len(self.ids), dtype=np.float32)
        avg = float(self.lengths[self.live].mean(dtype=np.float64)) if dead else float(
            self.lengths.mean(dtype=np.float64))
        norm = self.k1 * (1 - self.b + self.b * self.lengths / (avg or 1.0))
        for term, weight in terms.items():
            hit = self.posting(term)
            if hit is None:
                continue
            docs, tf = hit
            df = int(self.live[docs].sum()) if dead else len(docs)
            if not df:
                continue
            idf = np.log(1 + (live_n - df + 0.5) / (df + 0.5))
            scores[docs] += weight * idf * tf * (self.k1 + 1) / (tf + norm[docs])
        if dead:
            scores[~self.live] = 0.0
        if allowed is not None:
            scores[[i for i, p in enumerate(self.pids) if p not in allowed]] = 0.0
        n = min(n, int((scores > 0).sum()))
        if n <= 0:
            return []
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(i), float(scores[i])) for i in top]
