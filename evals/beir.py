"""Retrieval benchmark on any BEIR-layout dataset (corpus.jsonl, queries.jsonl, qrels/test.tsv).

The corpus is ingested once into a throwaway store (embeddings come from the user's cache, so a
second run embeds nothing); then every system answers every query in the same run.

Quality (nDCG@10, Recall@100, MRR@10) comes from one pass at k=100 per system. ms/query comes from a
second, separate pass per system at the app's k (``retrieval.k``), each system with its own empty
embedding cache: every query is embedded afresh, as a user's new question is, and no system gains from
vectors another system's pass cached.
"""

from __future__ import annotations

import csv
import json
import logging
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from evals.metrics import mean, mrr_at_k, ndcg_at_k, percentile, recall_at_k
from rag.config import Settings
from rag.errors import InputError

log = logging.getLogger(__name__)


@dataclass
class BeirData:
    name: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, float]]


def read_beir(root: Path, split: str = "test") -> BeirData:
    """Queries and graded judgments of a BEIR folder (ids mapped to paperchat's ``<folder>:<_id>``)."""
    qpath, rpath = root / "queries.jsonl", root / "qrels" / f"{split}.tsv"
    for p in (root / "corpus.jsonl", qpath, rpath):
        if not p.is_file():
            raise InputError("missing; a BEIR folder has corpus.jsonl, queries.jsonl and qrels/<split>.tsv",
                             where=str(p))
    queries = {}
    with qpath.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    row = json.loads(line)
                    queries[str(row["_id"])] = str(row["text"])
                except (ValueError, KeyError) as e:
                    raise InputError(f"bad query row ({e})", where=f"{qpath}:{n}") from e
    qrels: dict[str, dict[str, float]] = {}
    with rpath.open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[f"{root.name}:{row['corpus-id']}"] = float(row["score"])
    judged = {q: t for q, t in queries.items() if any(g > 0 for g in qrels.get(q, {}).values())}
    return BeirData(root.name, judged, qrels)


QUALITY_K = 100  # deep enough for Recall@100; the app itself retrieves retrieval.k papers


def score_system(run: Callable[[str], list[str]], data: BeirData, desc: str,
                 timed: Callable[[str], list[str]] | None = None) -> dict[str, float]:
    """Quality of ``run`` (a ranking of at least ``QUALITY_K`` papers). With ``timed``, ``mean_ms``/``p95_ms``
    come from a separate pass of it over the same queries (the caller sets its k and cache); without,
    only ``quality_pass_ms`` (the k=100 pass's own time) is reported."""
    ndcg, rec, mrr, ms = [], [], [], []
    for qid, text in tqdm(data.queries.items(), desc=desc, leave=False, disable=None):
        t0 = time.perf_counter()
        ranked = run(text)
        ms.append((time.perf_counter() - t0) * 1000)
        rel = data.qrels[qid]
        relevant = [d for d, g in rel.items() if g > 0]
        ndcg.append(ndcg_at_k(ranked, rel, 10))
        rec.append(recall_at_k(ranked, relevant, QUALITY_K))
        mrr.append(mrr_at_k(ranked, relevant, 10))
    out = {"ndcg@10": round(mean(ndcg), 4), "recall@100": round(mean(rec), 4), "mrr@10": round(mean(mrr), 4),
           "quality_pass_ms": round(mean(ms), 1), "queries": len(ndcg)}
    if timed is not None:
        tms = []
        for text in tqdm(data.queries.values(), desc=f"{desc} (timed)", leave=False, disable=None):
            t0 = time.perf_counter()
            timed(text)
            tms.append((time.perf_counter() - t0) * 1000)
        out.update(mean_ms=round(mean(tms), 1), p95_ms=round(percentile(tms, 95), 1))
    return out


def evaluate(root: Path, settings: Settings, systems: dict[str, dict[str, Any]] | None = None,
             embedder: Any = None, limit: int | None = None, timed: bool = True) -> dict[str, Any]:
    """Ingest ``root`` into a throwaway store and score each system. ``systems`` maps a name to
    Retriever options (mode and retrieval-setting overrides); the default is the comparison users make.
    ``timed``: also time each system at the app's k from its own empty embedding cache (``mean_ms``)."""
    from evals.throwaway import throwaway_runtime

    data = read_beir(root)
    if limit:
        data.queries = dict(list(data.queries.items())[:limit])
    with throwaway_runtime(settings, "paperchat-beir-", embedder) as rt:
        t0 = time.perf_counter()
        report = rt.ingestor().ingest([root / "corpus.jsonl"])
        ingest_s = time.perf_counter() - t0
        log.info("ingested %s: %s in %.1fs", root, report.summary(), ingest_s)
        results = score_systems(rt, root, data, systems, timing_k=settings.retrieval.k if timed else None)
    return {"dataset": data.name, "queries": len(data.queries), "ingest_s": round(ingest_s, 1),
            "results": results}


def retriever_for(rt: Any, opts: dict[str, Any], embedder: Any = None) -> Any:
    """A Retriever on ``rt``'s store for system options: ``mode`` plus RetrievalSettings overrides; it embeds
    queries with ``embedder`` (default ``rt``'s). ``retriever`` names a Retriever subclass as ``module:Class``
    (variants under study, e.g. tests/support/retrievers.py)."""
    import importlib

    from rag.qa.retrieval import Retriever

    opts = dict(opts)
    mode = opts.pop("mode", "hybrid")
    cls: Any = Retriever
    if "retriever" in opts:
        module, _, name = str(opts.pop("retriever")).partition(":")
        cls = getattr(importlib.import_module(module), name, None)
        if not (isinstance(cls, type) and issubclass(cls, Retriever)):
            raise InputError(f"retriever {module}:{name} is not a Retriever subclass")
    unknown = sorted(set(opts) - set(type(rt.settings.retrieval).model_fields))
    if unknown:
        raise InputError(f"unknown retrieval setting(s) {unknown}")
    cfg = rt.settings.retrieval.model_copy(update=opts)
    return cls(rt.store, embedder or rt.embedder, rt.lexical, cfg, mode=mode)


class _Swappable:
    """Forwards to ``target``, which can be replaced: the naive baseline indexes its chunks through the shared
    cache, then embeds its timed queries through an empty one."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


def _empty_cache(rt: Any, tmp: str, name: str) -> Any:
    """A cache of its own, empty, over the same model as ``rt``'s embedder."""
    from rag.index.embed_cache import CachedEmbedder

    return CachedEmbedder(getattr(rt.embedder, "inner", rt.embedder), Path(tmp) / f"{name}.sqlite")


def score_systems(rt: Any, root: Path, data: BeirData, systems: dict[str, dict[str, Any]] | None = None,
                  timing_k: int | None = None) -> dict[str, Any]:
    """Each system's figures on ``data``, whose corpus (``root``) ``rt``'s store already holds. Quality at
    k=100 with ``rt``'s (shared) embedding cache; with ``timing_k``, a separate timed pass at that k, each
    system embedding its queries through its own empty cache."""
    systems = systems or {"paperchat": {}, "bm25": {"mode": "bm25"}, "dense": {"mode": "dense"}}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="paperchat-timing-") as tmp:
        for name, opts in systems.items():
            own = _empty_cache(rt, tmp, name) if timing_k else None
            if name == "naive_langchain":
                from evals.naive import naive_langchain_run

                emb = _Swappable(rt.embedder)
                naive = naive_langchain_run(root, emb, rt.settings.home)
                timed: Callable[[str], list[str]] | None = None
                if own is not None and timing_k:
                    def timed(q: str, e: Any = emb, o: Any = own, r: Any = naive, k: int = timing_k) -> list[str]:
                        e.target = o
                        return r(q, k)

                def deep(q: str, r: Any = naive) -> list[str]:
                    return r(q, QUALITY_K)

                results[name] = score_system(deep, data, name, timed)
            else:
                retriever = retriever_for(rt, opts)
                fresh = retriever_for(rt, opts, embedder=own) if own is not None else None

                def run(q: str, r: Any = retriever) -> list[str]:
                    return [h.paper_id for h in r.search(q, k=QUALITY_K).hits]

                def timed_run(q: str, r: Any = fresh, k: int | None = timing_k) -> list[str]:
                    return [h.paper_id for h in r.search(q, k=k).hits]

                results[name] = score_system(run, data, name, timed_run if fresh is not None else None)
            if own is not None:
                results[name]["timing_k"] = timing_k
                own.close()
            log.info("%s: %s", name, results[name])
    return results
