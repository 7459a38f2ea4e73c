"""Retrieval ideas measured for issue 13 and not shipped: Retriever variants the quality sweep can run.

    python -m bench.quality_sweep --systems shipped bm25 dense \
        --add 'sentence_max={"retriever": "bench.retrieval_ideas:SentenceMax"}' \
              'proximity={"retriever": "bench.retrieval_ideas:Proximity"}' \
              'decisive_bm25={"retriever": "bench.retrieval_ideas:DecisiveBM25"}' \
              'decisive_dense={"retriever": "bench.retrieval_ideas:DecisiveDense"}' \
              'smoothed={"retriever": "bench.retrieval_ideas:Smoothed"}'

Each is the shipped pipeline plus one change, with its one parameter fixed before measuring (a value from the
literature or a round number), so the figures say whether the signal helps, not how far it can be tuned:

- ``SentenceMax``: sentence-level dense matching, "a paper is as good as its best sentence". A third list joins
  the score fusion: each candidate paper's best cosine between the question and one of its abstract sentences
  (the sentences answers use, ``rag.quarantine.evidence_texts``), at the weight of each other list.
- ``Proximity``: sequential-dependence-style term proximity. BM25's top 100 are rescored with
  ``BM25 + 0.25 × Σ idf(pair) · BM25-saturated count of the question's adjacent term pairs found adjacent in the
  paper``; a pair's idf counts the papers that hold both terms.
- ``DecisiveBM25`` / ``DecisiveDense``: trust a confident retriever. When BM25's top score is ≥ 1.5× its
  runner-up, or the dense top cosine clears the runner-up by ≥ 0.05, that paper goes first.

- ``Smoothed``: score regularisation over the top 50 (the cluster hypothesis): each paper's fused score plus
  0.3 × the mean score of its 5 most similar papers there (cosine of mean chunk vectors).

Results and conclusions: docs/benchmarks.md, "Ideas measured and not shipped".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rag.analysis import analyze
from rag.index.lexical import paper_text
from rag.qa.retrieval import Retrieval, Retriever, Scored, score_fusion
from rag.quarantine import evidence_texts


class _QuestionAware(Retriever):
    """Keeps the question being searched, for the hooks below."""

    question = ""

    def search(self, query: str, k: int | None = None, filters: Any = None, feedback: bool | None = None
               ) -> Retrieval:
        self.question = query
        return super().search(query, k, filters, feedback)


class SentenceMax(_QuestionAware):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sentences: dict[str, np.ndarray] = {}  # paper id → its sentence vectors, for this store only

    def _fuse(self, lists: list[tuple[Scored, float]]) -> dict[str, float]:
        if self.mode != "hybrid":
            return super()._fuse(lists)
        qvec = self.embedder.embed([self.question])[0]
        cands = list(dict.fromkeys(p for scored, _ in lists for p, _ in scored))
        todo = [p for p in cands if p not in self._sentences]
        for paper in self.store.papers(todo):
            texts = evidence_texts(paper.abstract) or [paper.abstract]
            self._sentences[paper.id] = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        best = sorted(((p, float((self._sentences[p] @ qvec).max())) for p in cands if p in self._sentences),
                      key=lambda x: -x[1])
        weight = float(np.mean([w for _, w in lists]))
        return score_fusion([*lists, (best, weight)])


class Proximity(_QuestionAware):
    weight = 0.25

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._seqs: dict[str, list[str]] = {}  # paper id → its analysed text, for this store only

    def bm25_rank(self, terms: dict[str, float], n: int, allowed: np.ndarray | None) -> list[tuple[str, float]]:
        base = super().bm25_rank(terms, max(n, 100), allowed)
        q = [t for t in analyze(self.question) if t in terms]
        pairs = {(a, b) for a, b in zip(q, q[1:]) if a != b}
        if not base or not pairs:
            return base[:n]
        total = len(self.lexical)
        idf = {pr: math.log(1 + (total - (df := len(self.lexical.containing(pr))) + 0.5) / (df + 0.5)) for pr in pairs}
        todo = [p for p, _ in base if p not in self._seqs]
        for paper in self.store.papers(todo):
            self._seqs[paper.id] = analyze(paper_text(paper))
        avg = float(np.mean([len(s) for s in self._seqs.values()])) or 1.0
        k1, b = 1.2, 0.75
        out = []
        for pid, score in base:
            seq = self._seqs.get(pid, [])
            bigrams: dict[tuple[str, str], int] = {}
            for pr in zip(seq, seq[1:]):
                bigrams[pr] = bigrams.get(pr, 0) + 1
            norm = k1 * (1 - b + b * len(seq) / avg)
            extra = sum(w * (tf := bigrams.get(pr, 0)) * (k1 + 1) / (tf + norm) for pr, w in idf.items())
            out.append((pid, score + self.weight * extra))
        out.sort(key=lambda x: -x[1])
        return out[:n]


class _Decisive(Retriever):
    """The first pass's lists are the first two the fusion sees (BM25, dense)."""

    which = 0  # 0: BM25, 1: dense

    def decisive(self, top: float, runner_up: float) -> bool:
        raise NotImplementedError

    def _fuse(self, lists: list[tuple[Scored, float]]) -> dict[str, float]:
        fused = super()._fuse(lists)
        if self.mode != "hybrid" or not fused or len(lists[self.which][0]) < 2:
            return fused
        (pid, top), (_, runner_up) = lists[self.which][0][:2]
        if self.decisive(top, runner_up):
            fused = {**fused, pid: max(fused.values()) + 1.0}
        return fused


class DecisiveBM25(_Decisive):
    which = 0

    def decisive(self, top: float, runner_up: float) -> bool:
        return runner_up > 0 and top / runner_up >= 1.5


class DecisiveDense(_Decisive):
    which = 1

    def decisive(self, top: float, runner_up: float) -> bool:
        return top - runner_up >= 0.05


class Smoothed(Retriever):
    """Score regularisation (the cluster hypothesis, Diaz 2005): a paper whose nearest neighbours among the top
    candidates also score well is more likely relevant. After fusion, the top ``pool`` papers' scores are
    blended with the mean score of each one's ``neighbours`` most similar papers in that pool (cosine of their
    mean chunk vectors): ``s + alpha × mean(s_j)``. One pass; alpha 0.3, 5 neighbours, a pool of 50."""

    alpha, neighbours, pool = 0.3, 5, 50

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._vec: dict[str, np.ndarray] = {}  # paper id → unit mean chunk vector, for this store only

    def _fuse(self, lists: list[tuple[Scored, float]]) -> dict[str, float]:
        fused = super()._fuse(lists)
        if self.mode != "hybrid" or len(lists) < 4 or len(fused) < 3:  # after feedback: the final fusion only
            return fused
        top = sorted(fused, key=lambda p: -fused[p])[: self.pool]
        todo = [p for p in top if p not in self._vec]
        if todo:
            rows: dict[str, list[np.ndarray]] = {}
            for _, pid, v in self.store.paper_vectors(todo):
                rows.setdefault(pid, []).append(v)
            for pid, vs in rows.items():
                m = np.mean(vs, axis=0)
                self._vec[pid] = m / max(float(np.linalg.norm(m)), 1e-12)
        ids = [p for p in top if p in self._vec]
        if len(ids) < 3:
            return fused
        m = np.stack([self._vec[p] for p in ids])
        sim = m @ m.T
        np.fill_diagonal(sim, -np.inf)
        s = np.array([fused[p] for p in ids])
        k = min(self.neighbours, len(ids) - 1)
        nn = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        boost = s[nn].mean(axis=1)
        return {**fused, **{p: float(s[i] + self.alpha * boost[i]) for i, p in enumerate(ids)}}
