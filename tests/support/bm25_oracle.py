"""The BM25 oracle's side of the differential test: a loaded ``LexicalIndex`` written in bm25s's file layout,
so that ``bm25s.BM25.load`` and bm25s's own scorer can check our scores (tests/test_retrieval.py).

Test-only: bm25s is a dev dependency, and this reads the index's loaded state (``_bm25``) the way no product
code needs to.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rag.index.lexical import LexicalIndex


def containing(lex: LexicalIndex, tid: int) -> np.ndarray:
    """A boolean mask over positions: the papers holding term id ``tid``."""
    v = lex._bm25
    mask = np.zeros(len(lex), dtype=bool)
    if v is not None:
        for i, seg in enumerate(v.segments):
            mask[v.slots_to_positions(i, seg.postings(tid)[0])] = True
    return mask


def export_bm25s(lex: LexicalIndex, folder: Path) -> None:
    """Save the loaded index's scores in bm25s's file layout (a CSC matrix of Lucene-variant BM25 scores,
    positions as document ids), so ``bm25s.BM25.load`` and its scorer can check ours."""
    v = lex._bm25
    if v is None:
        raise RuntimeError("nothing loaded")
    live_terms = [t for t in range(len(v.vocab.terms)) if v.df[t] > 0]
    cols_data, cols_idx, indptr = [], [], [0]
    for t in live_terms:
        scores = lex.term_scores({v.vocab.terms[t]: 1.0})
        pos = np.flatnonzero(containing(lex, t))
        cols_idx.append(pos.astype(np.int32))
        cols_data.append(scores[pos].astype(np.float32))
        indptr.append(indptr[-1] + len(pos))
    folder.mkdir(parents=True, exist_ok=True)
    params = {"k1": lex.k1, "b": lex.b, "delta": 0.5, "method": "lucene", "idf_method": "lucene",
              "dtype": "float32", "int_dtype": "int32", "num_docs": v.n, "version": "paperchat",
              "backend": "numpy"}
    (folder / "params.index.json").write_text(json.dumps(params, indent=1))
    (folder / "vocab.index.json").write_text(
        json.dumps({v.vocab.terms[t]: i for i, t in enumerate(live_terms)}, ensure_ascii=False), encoding="utf-8")
    for name, arr in (("data", np.concatenate(cols_data or [np.zeros(0, np.float32)])),
                      ("indices", np.concatenate(cols_idx or [np.zeros(0, np.int32)])),
                      ("indptr", np.array(indptr, dtype=np.int64))):
        np.save(folder / f"{name}.csc.index.npy", arr, allow_pickle=False)
