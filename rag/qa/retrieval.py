"""Hybrid retrieval: dense chunks (Chroma) + BM25 papers, fused, filtered, aggregated, diversified.

Dense hits are chunks; a paper scores by its best chunk. BM25 scores whole papers. The two lists are
combined by their min-max normalised scores (or by reciprocal-rank fusion), with one round of
pseudo-relevance feedback blended in (RM3-style term expansion for BM25, Rocchio for the dense query).
A rare identifier the question names puts the few papers holding it first.

Full text (``ingest.full_text``): a paper's passages are further chunks of it, so the dense side ranks them with
its abstract chunks (a paper still scores by its best chunk), and a third list, BM25 over the passages
(``rag.index.passage_lexical``), joins the fusion. Each hit carries its best passages as candidate evidence
(``PaperHit.passages``); the answer chain picks the paper's best evidence among them and its abstract. A store
without passages retrieves exactly as before.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np

from rag.analysis import analyze, name_key
from rag.config import RetrievalSettings
from rag.index import rows
from rag.index.embeddings import Embedder
from rag.index.lexical import LexicalIndex, paper_text
from rag.index.paper_query import PaperQuery, to_where
from rag.index.passage_lexical import PassageIndex
from rag.index.store import ChromaStore
from rag.qa.evidence import entities
from rag.records import StoredPaper

log = logging.getLogger(__name__)

RetrievalMode = Literal["hybrid", "dense", "bm25"]


@dataclass(frozen=True)
class PassageHit:
    """A full-text passage retrieved for its paper: the candidate evidence answers may quote instead of the
    abstract."""

    chunk_id: str
    text: str
    ref: rows.PassageRef  # pages and section


@dataclass
class PaperHit:
    paper_id: str
    score: float  # fused score (higher is better)
    dense: float | None = None  # cosine of the best chunk
    bm25: float | None = None
    chunk: str = ""  # text of the best-matching chunk
    paper: StoredPaper = field(kw_only=True)  # what answers quote and citations show
    passages: list[PassageHit] = field(default_factory=list, kw_only=True)  # its best passages, best first
    full_text: bool = field(default=False, kw_only=True)  # the paper has passages stored
    evidence: PassageHit | None = field(default=None, kw_only=True)  # the passage ``paper.abstract`` now holds
    abstract: str = field(default="", kw_only=True)  # the paper's own abstract when ``evidence`` replaced it


def _scored(dense: list[tuple[str, float, str]]) -> Scored:
    return [(pid, s) for pid, s, _ in dense]


@dataclass
class Retrieval:
    query: str
    filters: PaperQuery
    hits: list[PaperHit]
    timings: dict[str, float]


@lru_cache(maxsize=8192)
def _terms(text: str) -> tuple[str, ...]:
    """``analyze`` memoised: the same few thousand abstracts come back as feedback and near-duplicate checks."""
    return tuple(analyze(text))


@lru_cache(maxsize=8192)
def _term_set(text: str) -> frozenset[str]:
    return frozenset(_terms(text))


Scored = list[tuple[str, float]]  # (paper id, retriever score), best first


def rrf(rankings: list[tuple[list[str], float]], k: int) -> dict[str, float]:
    """Weighted reciprocal-rank fusion of ranked id lists."""
    out: dict[str, float] = {}
    for ids, weight in rankings:
        for rank, pid in enumerate(ids):
            out[pid] = out.get(pid, 0.0) + weight / (k + rank + 1)
    return out


def score_fusion(lists: list[tuple[Scored, float]]) -> dict[str, float]:
    """Convex combination of min-max normalised scores: each list's best paper scores 1 and its last 0 (a paper
    a list does not hold scores 0 there; a list whose scores are all equal gives each 1), weighted by the list's
    weight over the sum of weights.

    Unlike rank fusion this keeps a retriever's margin: BM25 putting one paper at 17.4 and the next at 7.4 gives
    1.0 against 0.4, where ranks would give 1st and 2nd whatever the gap."""
    total = sum(w for scored, w in lists if scored) or 1.0
    out: dict[str, float] = {}
    for scored, weight in lists:
        if not scored:
            continue
        hi, lo = scored[0][1], scored[-1][1]
        for pid, s in scored:
            norm = (s - lo) / (hi - lo) if hi > lo else 1.0  # all tied: all equally the best
            out[pid] = out.get(pid, 0.0) + weight / total * norm
    return out


@dataclass
class LocalScope:
    """The stored chunk vectors of the few papers a filter allows, scored here instead of in Chroma."""
    chunk_ids: list[str]
    paper_ids: list[str]
    matrix: np.ndarray  # one unit-length row per chunk

    @classmethod
    def of(cls, rows: list[tuple[str, str, np.ndarray]]) -> LocalScope:
        if not rows:
            return cls([], [], np.zeros((0, 0), dtype=np.float32))
        m = np.stack([v for _, _, v in rows])
        m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
        return cls([c for c, _, _ in rows], [p for _, p, _ in rows], m)

    def nearest(self, vector: np.ndarray, n: int) -> list[tuple[str, str, float]]:
        """(chunk id, paper id, cosine) of the n nearest chunks, best first: what ``ChromaStore.nearest`` gives."""
        if not self.chunk_ids or n <= 0:
            return []
        v = np.asarray(vector, dtype=np.float32)
        scores = self.matrix @ (v / max(float(np.linalg.norm(v)), 1e-12))
        order = np.argsort(-scores, kind="stable")[:n]
        return [(self.chunk_ids[i], self.paper_ids[i], float(scores[i])) for i in order]

    def vectors(self, chunk_ids: list[str]) -> dict[str, np.ndarray]:
        row = {c: i for i, c in enumerate(self.chunk_ids)}
        return {c: self.matrix[row[c]] for c in chunk_ids if c in row}


class Retriever:
    """Finds the papers that answer a question, within optional filters."""

    def __init__(self, store: ChromaStore, embedder: Embedder, lexical: LexicalIndex, cfg: RetrievalSettings,
                 mode: RetrievalMode = "hybrid") -> None:
        self.store, self.embedder, self.lexical, self.cfg, self.mode = store, embedder, lexical, cfg, mode

    # ---- the two retrievers -----------------------------------------------------------------
    def allowed(self, filters: PaperQuery) -> np.ndarray | None:
        """Index positions of the papers the filters allow (None: no filter). Read from the lexical index's
        own copy of the filter fields, which is in sync with the store, instead of fetching every matching
        paper's row from Chroma (at 100k papers a category filter would read tens of thousands)."""
        if to_where(filters) is None:
            return None
        return self.lexical.filter_positions(
            author_key=name_key(filters.author) if filters.author else None,
            category_key=name_key(filters.category) if filters.category else None,
            year_from=filters.year_from or None, year_to=filters.year_to or None,
            paper_ids=list(filters.paper_ids) if filters.paper_ids else None)

    def bm25_rank(self, terms: dict[str, float], n: int, allowed: np.ndarray | None) -> list[tuple[str, float]]:
        scores = self.lexical.term_scores(terms)
        if allowed is not None:
            mask = np.zeros_like(scores, dtype=bool)
            mask[allowed] = True
            scores = np.where(mask, scores, 0.0)
        n = min(n, int((scores > 0).sum()))
        if n <= 0:
            return []
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.lexical.paper_ids[i], float(scores[i])) for i in top]

    def local_scope(self, allowed: np.ndarray | None) -> LocalScope | None:
        """The allowed papers' vectors when the filter leaves few enough to score here (else None: Chroma)."""
        if allowed is None or len(allowed) > self.cfg.local_scope:
            return None
        return LocalScope.of(self.store.paper_vectors([self.lexical.paper_ids[i] for i in allowed]))

    def dense_rank(self, vector: np.ndarray, n: int, filters: PaperQuery,
                   local: LocalScope | None = None, fan: int = 3) -> list[tuple[str, float, str]]:
        """(paper id, cosine, id of its best chunk), best first; chunk texts are read only for the papers kept.
        ``fan`` chunks are read per paper wanted (more when passages compete with abstracts for the places)."""
        best: dict[str, tuple[float, str]] = {}
        near = local.nearest(vector, n * fan) if local is not None else \
            self.store.nearest(vector, n * fan, where=to_where(filters))
        for cid, pid, score in near:
            if pid not in best or score > best[pid][0]:
                best[pid] = (score, cid)
        ranked = sorted(best.items(), key=lambda kv: -kv[1][0])[:n]
        return [(pid, s, cid) for pid, (s, cid) in ranked]

    # ---- pseudo-relevance feedback ----------------------------------------------------------
    def _expand_terms(self, query_terms: dict[str, float], feedback: list[StoredPaper],
                      n_terms: int = 10, weight: float = 0.5) -> dict[str, float]:
        """RM3-style: add the feedback papers' most characteristic terms at a fraction of the weight."""
        tf: dict[str, float] = {}
        for paper in feedback:
            terms = _terms(paper_text(paper))
            if not terms:
                continue
            for t, c in Counter(terms).items():
                tf[t] = tf.get(t, 0.0) + c / len(terms)
        idf = self.lexical.idf(tf)
        scored = sorted(((tf[t] * idf[t], t) for t in tf if t not in query_terms and idf[t] > 1.0), reverse=True)
        chosen = scored[:n_terms]
        total = sum(s for s, _ in chosen) or 1.0
        out = dict(query_terms)
        q_total = sum(query_terms.values()) or 1.0
        for s, t in chosen:
            out[t] = weight * q_total * s / total
        return out

    # ---- search -----------------------------------------------------------------------------
    def search(self, query: str, k: int | None = None, filters: PaperQuery | None = None,
               feedback: bool | None = None) -> Retrieval:
        k = k or self.cfg.k
        filters = filters or PaperQuery()
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        self.lexical.sync(self.store, recheck_after_s=1.0)  # an answer's filter parsing checked just before
        allowed = self.allowed(filters)
        passages = PassageIndex.of(self.lexical)
        passages.sync(self.store, self.lexical.state)
        fan = 6 if passages.ids else 3  # passages compete with abstracts for the dense side's places
        timings["filter_ms"] = (time.perf_counter() - t0) * 1000
        n = max(self.cfg.candidates, k)
        use_prf = self.cfg.feedback_docs > 0 if feedback is None else feedback

        q_terms: dict[str, float] = {}
        for t in analyze(query):
            q_terms[t] = q_terms.get(t, 0.0) + 1.0
        bm25: list[tuple[str, float]] = []
        dense: list[tuple[str, float, str]] = []
        t1 = time.perf_counter()
        if self.mode in ("hybrid", "bm25"):
            bm25 = self.bm25_rank(q_terms, n, allowed)
        best_passage = self._passage_rank(passages, q_terms, n, allowed) if self.mode == "hybrid" else {}
        # BM25 over the passages, one entry per paper (its best passage): only when the store holds passages
        extra = [([(p, sc) for p, (sc, _) in best_passage.items()], self.cfg.bm25_weight)] if best_passage else []
        timings["bm25_ms"] = (time.perf_counter() - t1) * 1000
        t1 = time.perf_counter()
        qvec = None
        local: LocalScope | None = None
        if self.mode in ("hybrid", "dense"):
            qvec = self.embedder.embed([query])[0]
            local = self.local_scope(allowed)
            dense = self.dense_rank(qvec, n, filters, local, fan)
        timings["dense_ms"] = (time.perf_counter() - t1) * 1000

        fused = self._fuse([(bm25, self.cfg.bm25_weight), (_scored(dense), self.cfg.dense_weight), *extra])
        fetched: dict[str, StoredPaper] = {}  # papers already read in this search
        if use_prf and self.cfg.feedback_skip_agree and bm25 and dense and bm25[0][0] == dense[0][0]:
            use_prf = False  # both retrievers already agree on the answer: a pointed, known-item question
        if use_prf and fused and self.mode == "hybrid":
            t1 = time.perf_counter()
            top = sorted(fused, key=lambda p: -fused[p])[: self.cfg.feedback_docs]
            fb = self.read_papers(top)
            fetched.update((p.id, p) for p in fb)
            bm25_fb = self.bm25_rank(self._expand_terms(q_terms, fb), n, allowed)
            dense_fb = dense
            if qvec is not None:
                # Rocchio on the dense side: pull the query towards the feedback papers' best chunks (their
                # stored vectors: nothing is embedded again).
                chunk_of = {pid: cid for pid, _, cid in dense}
                chunks = [chunk_of[p] for p in top if p in chunk_of]
                stored = local.vectors(chunks) if local is not None else self.store.vectors(chunks)
                if stored:
                    centroid = np.stack(list(stored.values())).mean(axis=0)
                    q2 = qvec + self.cfg.feedback_dense * centroid
                    dense_fb = self.dense_rank(q2 / np.linalg.norm(q2), n, filters, local, fan)
            if self.cfg.feedback_blend:
                # First-pass lists stay in the fusion: feedback adds recall without burying a paper
                # both retrievers already put first (known-item questions).
                fused = self._fuse([(bm25, self.cfg.bm25_weight), (_scored(dense), self.cfg.dense_weight),
                                    (bm25_fb, self.cfg.bm25_weight), (_scored(dense_fb), self.cfg.dense_weight),
                                    *extra])
                bm25 = bm25 + [x for x in bm25_fb if x[0] not in dict(bm25)]
                dense = dense + [x for x in dense_fb if x[0] not in {p for p, _, _ in dense}]
            else:
                bm25, dense = bm25_fb, dense_fb
                fused = self._fuse([(bm25, self.cfg.bm25_weight), (_scored(dense), self.cfg.dense_weight), *extra])
            timings["feedback_ms"] = (time.perf_counter() - t1) * 1000

        if self.mode == "hybrid" and self.cfg.anchor_df:
            fused = self._anchor(query, fused, allowed)
        ranked = sorted(fused, key=lambda p: -fused[p])
        t1 = time.perf_counter()
        hits = self._materialise(ranked[: max(k * 3, k + 5)], fused, bm25, dense, k, fetched)
        if passages.ids:
            self._attach_passages(hits, dense, best_passage, passages)
        timings["papers_ms"] = (time.perf_counter() - t1) * 1000
        timings["retrieve_ms"] = (time.perf_counter() - t0) * 1000
        return Retrieval(query, filters, hits, timings)

    def _passage_rank(self, passages: PassageIndex, terms: dict[str, float], n: int,
                      allowed: np.ndarray | None) -> dict[str, tuple[float, int]]:
        """paper id → (BM25 score, document) of its best passage, for the ``n`` best papers by their passages."""
        if not passages.ids:
            return {}
        pids = {self.lexical.paper_ids[i] for i in allowed} if allowed is not None else None
        best: dict[str, tuple[float, int]] = {}
        for doc, score in passages.search(terms, n * 3, pids):
            best.setdefault(passages.pids[doc], (score, doc))
        return dict(list(best.items())[:n])

    def _attach_passages(self, hits: list[PaperHit], dense: list[tuple[str, float, str]],
                         best_passage: dict[str, tuple[float, int]], passages: PassageIndex) -> None:
        """Each hit's candidate passages (its best dense chunk when that is a passage, then its best BM25 passage)
        and whether its paper has full text."""
        chunk_of = {pid: cid for pid, _, cid in dense}
        wanted: dict[str, list[str]] = {}
        for h in hits:
            h.full_text = h.paper_id in passages.papers
            ids = [chunk_of[h.paper_id]] if h.paper_id in chunk_of else []
            if h.paper_id in best_passage:
                ids.append(passages.ids[best_passage[h.paper_id][1]])
            wanted[h.paper_id] = list(dict.fromkeys(ids))
        found = self.store.rows_of([c for ids in wanted.values() for c in ids])
        for h in hits:
            h.passages = [PassageHit(c, found[c][0], rows.passage_ref(found[c][1])) for c in wanted[h.paper_id]
                          if c in found and rows.is_passage(found[c][1])]

    def _fuse(self, lists: list[tuple[Scored, float]]) -> dict[str, float]:
        """One score per paper from (BM25, dense[, BM25 feedback, dense feedback]) lists; a single retriever's
        own scores in bm25 or dense mode."""
        if self.mode != "hybrid":
            return dict(lists[0 if self.mode == "bm25" else 1][0])
        if self.cfg.fusion == "rrf":
            return rrf([([p for p, _ in scored], w) for scored, w in lists], self.cfg.rrf_k)
        return score_fusion(lists)

    def _anchor(self, query: str, fused: dict[str, float], allowed: np.ndarray | None) -> dict[str, float]:
        """Papers holding a rare identifier the question names ("PMD-mean", "ADVI") go first, in fused order.

        Such a name picks its paper out of the whole library, while the dense side, which reads it as sub-word
        noise, may rank that paper nowhere; without this the one paper that answers can miss the top k."""
        anchors: set[str] = set()
        for terms in entities(query):
            pos = self.lexical.containing(terms)
            if allowed is not None:
                pos = np.intersect1d(pos, allowed)
            if 0 < len(pos) <= self.cfg.anchor_df:
                anchors.update(self.lexical.paper_ids[i] for i in pos)
        if not anchors:
            return fused
        top = max(fused.values(), default=0.0)
        return {**fused, **{p: top + 1.0 + fused.get(p, 0.0) for p in anchors}}

    def read_papers(self, paper_ids: list[str]) -> list[StoredPaper]:
        """The stored papers of ``paper_ids`` (those still stored), read by their chunk-0 ids where the lexical
        index knows them: with full text a paper has ~40 more rows, which a read by paper id would all fetch
        (38 of a search's 64 ms at 1,000 full-text papers). A paper rewritten since the index synced is read
        by its id."""
        found = {p.id: p for p in self.store.papers_at(list(self.lexical.first_chunks(paper_ids).values()))}
        missing = [p for p in paper_ids if p not in found]
        if missing:
            found.update((p.id, p) for p in self.store.papers(missing))
        return [found[p] for p in paper_ids if p in found]

    def _materialise(self, ids: list[str], fused: dict[str, float], bm25: list[tuple[str, float]],
                     dense: list[tuple[str, float, str]], k: int,
                     fetched: dict[str, StoredPaper] | None = None) -> list[PaperHit]:
        """The stored papers of the top ids, near-duplicates dropped, k kept."""
        if not ids:
            return []
        rows = dict(fetched or {})
        missing = [p for p in ids if p not in rows]
        if missing:
            rows.update((p.id, p) for p in self.read_papers(missing))
        b = dict(bm25)
        d = {pid: (s, cid) for pid, s, cid in dense}
        texts = self.store.documents([d[p][1] for p in ids if p in d])
        out: list[PaperHit] = []
        seen_terms: list[frozenset[str]] = []
        for pid in ids:
            paper = rows.get(pid)
            if paper is None:  # stale hit (paper removed meanwhile)
                continue
            terms = _term_set(paper.abstract)
            if any(len(terms & s) / max(1, len(terms | s)) > 0.8 for s in seen_terms):
                continue  # a near-duplicate must not crowd out another paper
            seen_terms.append(terms)
            ds = d.get(pid)
            out.append(PaperHit(pid, fused[pid], ds[0] if ds else None, b.get(pid),
                                texts.get(ds[1], "") if ds else "", paper=paper))
            if len(out) >= k:
                break
        return out
