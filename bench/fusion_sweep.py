"""Compare fusion settings on several BEIR-layout collections in one run (ingest once each).

    python -m bench.fusion_sweep DIR [DIR ...]

Prints nDCG@10 / Recall@100 / MRR@10 per system and collection. Used to choose the shipped
defaults on more than one collection; it never looks at individual query ids.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from evals.beir import evaluate
from rag.config import get_settings

SYSTEMS = {
    "prf3_replace": {"feedback_docs": 3, "feedback_blend": False},
    "prf3_blend": {"feedback_docs": 3, "feedback_blend": True},
    "prf3_agree_blend": {"feedback_docs": 3, "feedback_blend": True, "feedback_skip_agree": True},
    "prf3_agree_replace": {"feedback_docs": 3, "feedback_blend": False, "feedback_skip_agree": True},
    "prf5_blend": {"feedback_docs": 5, "feedback_blend": True},
    "bm25": {"mode": "bm25"},
    "dense": {"mode": "dense"},
    "rrf": {},
    "rrf_b1.5": {"bm25_weight": 1.5},
    "rrf_prf3": {"feedback_docs": 3},
    "rrf_prf5": {"feedback_docs": 5},
    "rrf_b1.5_prf3": {"bm25_weight": 1.5, "feedback_docs": 3},
    "rrf_k20_prf3": {"rrf_k": 20, "feedback_docs": 3},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--systems", nargs="*", help="subset of: " + ", ".join(SYSTEMS))
    ap.add_argument("--limit", type=int)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    systems = {k: v for k, v in SYSTEMS.items() if not args.systems or k in args.systems}
    settings = get_settings()
    from rag.config import prepare_runtime

    prepare_runtime(settings)
    for d in args.dirs:
        out = evaluate(d, settings, systems, limit=args.limit)
        print(json.dumps(out))
        for name, r in out["results"].items():
            print(f"{out['dataset']:>12} {name:>16}  ndcg@10 {r['ndcg@10']:.4f}  R@100 {r['recall@100']:.4f}  "
                  f"mrr@10 {r['mrr@10']:.4f}  {r['mean_ms']:.0f} ms")


if __name__ == "__main__":
    main()
