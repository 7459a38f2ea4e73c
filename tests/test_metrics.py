"""Metric formulas on hand-computed examples, so a wrong formula fails."""

from __future__ import annotations

import math

import pytest

from evals.metrics import citation_precision_recall, mrr_at_k, ndcg_at_k, percentile, recall_at_k


def test_ndcg_graded_by_hand() -> None:
    qrels = {"a": 3, "b": 2, "c": 1}
    ranked = ["b", "x", "a"]
    dcg = 2 / math.log2(2) + 0 + 3 / math.log2(4)  # 2 + 1.5
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(ranked, qrels, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["a", "b", "c"], qrels, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "y"], qrels, 10) == 0.0
    assert ndcg_at_k(["x", "a"], qrels, 1) == 0.0  # cut-off respected
    assert ndcg_at_k(["a"], {}, 10) == 0.0


def test_recall_and_mrr_by_hand() -> None:
    assert recall_at_k(["a", "x", "b"], {"a", "b", "c", "d"}, 2) == pytest.approx(0.25)
    assert recall_at_k(["a", "x", "b"], {"a", "b", "c", "d"}, 3) == pytest.approx(0.5)
    assert mrr_at_k(["x", "y", "a"], {"a"}, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x", "y", "a"], {"a"}, 2) == 0.0


def test_citation_precision_recall_alce_style() -> None:
    assert citation_precision_recall(["a", "b", "x"], ["a", "b", "c", "d"]) == pytest.approx((2 / 3, 2 / 4))
    assert citation_precision_recall([], ["a"]) == (1.0, 0.0)  # citing nothing is not imprecise
    assert citation_precision_recall(["a"], []) == (0.0, 1.0)


def test_percentile_nearest_rank() -> None:
    xs = [float(i) for i in range(1, 101)]
    assert percentile(xs, 50) == 50.0 and percentile(xs, 95) == 95.0 and percentile(xs, 100) == 100.0
    assert percentile([], 95) == 0.0
