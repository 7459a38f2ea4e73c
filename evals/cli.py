"""The eval subcommands of `paperchat` (registered by rag.cli)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rag.config import Settings


def register(sub: Any, commands: dict[str, Any]) -> None:
    er = sub.add_parser("eval-retrieval", help="nDCG@10 / Recall@100 / MRR@10 on a BEIR-layout dataset, "
                                               "paperchat vs BM25, dense and a naive LangChain baseline")
    er.add_argument("dataset", type=Path, help="folder with corpus.jsonl, queries.jsonl, qrels/test.tsv")
    er.add_argument("--systems", nargs="*", default=["paperchat", "bm25", "dense", "naive_langchain"],
                    help="which systems to run (default: all four)")
    er.add_argument("--limit", type=int, help="only the first N judged queries")
    er.add_argument("--json", action="store_true", help="print one JSON object")
    commands["eval-retrieval"] = cmd_eval_retrieval


SYSTEM_OPTIONS: dict[str, dict[str, Any]] = {
    "paperchat": {}, "bm25": {"mode": "bm25"}, "dense": {"mode": "dense"}, "naive_langchain": {},
}


def cmd_eval_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    from evals.beir import evaluate
    from rag.config import prepare_runtime
    from rag.errors import InputError

    unknown = [s for s in args.systems if s not in SYSTEM_OPTIONS]
    if unknown:
        raise InputError(f"unknown system(s) {unknown}; choose from {sorted(SYSTEM_OPTIONS)}")
    prepare_runtime(settings)
    out = evaluate(args.dataset, settings, {s: SYSTEM_OPTIONS[s] for s in args.systems}, limit=args.limit)
    if args.json:
        sys.stdout.write(json.dumps({"dataset": out["dataset"], "results": {
            name: {k: r[k] for k in ("ndcg@10", "recall@100", "mrr@10")} for name, r in out["results"].items()},
            "queries": out["queries"]}) + "\n")
        return 0
    print(f"{out['dataset']}: {out['queries']} judged queries (ingest {out['ingest_s']} s)")
    print(f"{'system':>16}  {'nDCG@10':>8}  {'R@100':>7}  {'MRR@10':>7}  {'ms/query':>8}")
    for name, r in out["results"].items():
        print(f"{name:>16}  {r['ndcg@10']:8.4f}  {r['recall@100']:7.4f}  {r['mrr@10']:7.4f}  {r['mean_ms']:8.1f}")
    return 0
