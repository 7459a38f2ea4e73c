"""Retrieval benchmark on any BEIR-layout dataset (corpus.jsonl, queries.jsonl, qrels/test.tsv).

The corpus is ingested once into a throwaway store (embeddings come from the user's cache, so a
second run embeds nothing); then every system answers every query in the same run.
"""

from __future__ import annotations

import csv
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from evals.metrics import mean, mrr_at_k, ndcg_at_k, recall_at_k
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


def score_system(run: Callable[[str], list[str]], data: BeirData, desc: str) -> dict[str, float]:
    ndcg, rec, mrr, ms = [], [], [], []
    for qid, text in tqdm(data.queries.items(), desc=desc, leave=False, disable=None):
        t0 = time.perf_counter()
        ranked = run(text)
        ms.append((time.perf_counter() - t0) * 1000)
        rel = data.qrels[qid]
        relevant = [d for d, g in rel.items() if g > 0]
        ndcg.append(ndcg_at_k(ranked, rel, 10))
        rec.append(recall_at_k(ranked, relevant, 100))
        mrr.append(mrr_at_k(ranked, relevant, 10))
    return {"ndcg@10": round(mean(ndcg), 4), "recall@100": round(mean(rec), 4), "mrr@10": round(mean(mrr), 4),
            "mean_ms": round(mean(ms), 1), "queries": len(ndcg)}


def evaluate(root: Path, settings: Settings, systems: dict[str, dict[str, Any]] | None = None,
             embedder: Any = None, limit: int | None = None) -> dict[str, Any]:
    """Ingest ``root`` into a throwaway store and score each system. ``systems`` maps a name to
    Retriever options (mode and retrieval-setting overrides); the default is the comparison users make."""
    from evals.throwaway import throwaway_runtime

    data = read_beir(root)
    if limit:
        data.queries = dict(list(data.queries.items())[:limit])
    with throwaway_runtime(settings, "paperchat-beir-", embedder) as rt:
        t0 = time.perf_counter()
        report = rt.ingestor().ingest([root / "corpus.jsonl"])
        ingest_s = time.perf_counter() - t0
        log.info("ingested %s: %s in %.1fs", root, report.summary(), ingest_s)
        results = score_systems(rt, root, data, systems)
    return {"dataset": data.name, "queries": len(data.queries), "ingest_s": round(ingest_s, 1),
            "results": results}


def retriever_for(rt: Any, opts: dict[str, Any]) -> Any:
    """A Retriever on ``rt``'s store for system options: ``mode`` plus RetrievalSettings overrides."""
    from rag.qa.retrieval import Retriever

    opts = dict(opts)
    mode = opts.pop("mode", "hybrid")
    unknown = sorted(set(opts) - set(type(rt.settings.retrieval).model_fields))
    if unknown:
        raise InputError(f"unknown retrieval setting(s) {unknown}")
    cfg = rt.settings.retrieval.model_copy(update=opts)
    return Retriever(rt.store, rt.embedder, rt.lexical, cfg, mode=mode)


def score_systems(rt: Any, root: Path, data: BeirData, systems: dict[str, dict[str, Any]] | None = None
                  ) -> dict[str, Any]:
    """Each system's figures on ``data``, whose corpus (``root``) ``rt``'s store already holds."""
    systems = systems or {"paperchat": {}, "bm25": {"mode": "bm25"}, "dense": {"mode": "dense"}}
    results: dict[str, Any] = {}
    for name, opts in systems.items():
        if name == "naive_langchain":
            from evals.naive import naive_langchain_run

            results[name] = score_system(naive_langchain_run(root, rt.embedder, rt.settings.home), data, name)
            continue
        retriever = retriever_for(rt, opts)

        def run(q: str, r: Any = retriever) -> list[str]:
            return [h.paper_id for h in r.search(q, k=100).hits]

        results[name] = score_system(run, data, name)
        log.info("%s: %s", name, results[name])
    return results
