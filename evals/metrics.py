"""Retrieval and citation metrics, small and deterministic (unit-tested on hand-computed cases)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def dcg(gains: Sequence[float]) -> float:
    """Σ gain_i / log2(i + 1), ranks from 1 (linear gain, as trec_eval and BEIR compute it)."""
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranked: Sequence[str], qrels: Mapping[str, float], k: int = 10) -> float:
    """nDCG@k with graded relevance; 0 when the query has no relevant document."""
    ideal = dcg(sorted((g for g in qrels.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg([max(0.0, qrels.get(d, 0.0)) for d in ranked[:k]]) / ideal


def recall_at_k(ranked: Sequence[str], relevant: Sequence[str] | set[str], k: int) -> float:
    rel = set(relevant)
    if not rel:
        return 0.0
    return len(rel & set(ranked[:k])) / len(rel)


def mrr_at_k(ranked: Sequence[str], relevant: Sequence[str] | set[str], k: int = 10) -> float:
    rel = set(relevant)
    for i, d in enumerate(ranked[:k]):
        if d in rel:
            return 1.0 / (i + 1)
    return 0.0


def citation_precision_recall(cited: Sequence[str], gold: Sequence[str]) -> tuple[float, float]:
    """Share of cited papers that are gold (1.0 when nothing is cited), share of gold papers cited."""
    c, g = set(cited), set(gold)
    precision = len(c & g) / len(c) if c else 1.0
    recall = len(c & g) / len(g) if g else 1.0
    return precision, recall


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def percentile(xs: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))]
