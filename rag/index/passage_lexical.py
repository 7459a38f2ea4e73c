"""BM25 over full-text passages (``ingest.full_text``), beside the paper-level index of ``rag.index.lexical``.

The paper-level index scores a paper by its title, authors, categories and abstract; a passage is scored here,
against the other passages, so a question answered by one paragraph of a paper's body finds that paragraph. The
index is held in memory and built from the store's passage rows whenever the paper-level index has followed the
store to a new state (its (generation, chunk count)), so it never disagrees with what Chroma holds. A store
without passages costs one filtered read per change of the store and scores nothing.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from rag.analysis import analyze
from rag.index import rows
from rag.index.lexical import LexicalIndex
from rag.index.store import ChromaStore

log = logging.getLogger(__name__)

_INDEXES: weakref.WeakKeyDictionary[LexicalIndex, PassageIndex] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


@dataclass
class PassageIndex:
    """Passages as BM25 documents (Lucene's formula, the paper-level index's k1 and b)."""

    k1: float = 1.2
    b: float = 0.75
    ids: list[str] = field(default_factory=list)  # passage row ids, in document order
    pids: list[str] = field(default_factory=list)  # their papers
    refs: list[rows.PassageRef] = field(default_factory=list)
    postings: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # term → (docs, tf)
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    papers: frozenset[str] = frozenset()  # the papers with full text stored
    state: tuple[int, int] | None = None

    @classmethod
    def of(cls, lexical: LexicalIndex) -> PassageIndex:
        """The passage index that follows ``lexical`` (one per paper-level index, made on first use)."""
        with _LOCK:
            index = _INDEXES.get(lexical)
            if index is None:
                index = _INDEXES[lexical] = cls(k1=lexical.k1, b=lexical.b)
            return index

    def sync(self, store: ChromaStore, state: tuple[int, int]) -> None:
        """Rebuild from the store's passage rows when the store ``state`` changed since the last build."""
        if state == self.state:
            return
        t0 = time.perf_counter()
        ids, pids, refs, lengths = [], [], [], []
        post: dict[str, dict[int, int]] = defaultdict(dict)
        for i, (cid, text, md) in enumerate(store.passage_rows()):
            terms = analyze(f"{md.get(rows.SECTION, '')} {text}")
            ids.append(cid)
            pids.append(rows.paper_id(md))
            refs.append(rows.passage_ref(md))
            lengths.append(len(terms))
            for t in terms:
                post[t][i] = post[t].get(i, 0) + 1
        self.ids, self.pids, self.refs = ids, pids, refs
        self.lengths = np.asarray(lengths, dtype=np.float32)
        self.postings = {t: (np.fromiter(d.keys(), np.int64, len(d)), np.fromiter(d.values(), np.float32, len(d)))
                         for t, d in post.items()}
        self.papers = frozenset(pids)
        self.state = state
        if ids:
            log.info("passage index: %d passages of %d papers in %.2f s", len(ids), len(self.papers),
                     time.perf_counter() - t0)

    def search(self, terms: dict[str, float], n: int, allowed: set[str] | None = None) -> list[tuple[int, float]]:
        """(document, BM25 score) of the ``n`` best passages for weighted query ``terms``, best first; with
        ``allowed``, only passages of those papers."""
        if not self.ids or n <= 0:
            return []
        scores = np.zeros(len(self.ids), dtype=np.float32)
        avg = float(self.lengths.mean()) or 1.0
        norm = self.k1 * (1 - self.b + self.b * self.lengths / avg)
        for term, weight in terms.items():
            hit = self.postings.get(term)
            if hit is None:
                continue
            docs, tf = hit
            idf = np.log(1 + (len(self.ids) - len(docs) + 0.5) / (len(docs) + 0.5))
            scores[docs] += weight * idf * tf * (self.k1 + 1) / (tf + norm[docs])
        if allowed is not None:
            scores[[i for i, p in enumerate(self.pids) if p not in allowed]] = 0.0
        n = min(n, int((scores > 0).sum()))
        if n <= 0:
            return []
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(i), float(scores[i])) for i in top]
