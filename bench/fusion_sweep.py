"""Compare fusion settings on any BEIR-layout folders in one run (ingest once each, in throwaway stores).

    python -m bench.fusion_sweep DIR [DIR ...] [--systems NAME ...]

Prints nDCG@10 / Recall@100 / MRR@10 per system and collection. The systems are bench/quality_sweep.py's
catalogue; to choose the shipped pipeline use `make bench-quality`, which adds the question sets and the
answers to the same table. It never looks at individual query ids.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from bench.quality_sweep import SYSTEMS
from evals.beir import evaluate
from rag.config import get_settings, prepare_runtime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--systems", nargs="*", help="subset of: " + ", ".join(SYSTEMS))
    ap.add_argument("--limit", type=int)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    systems = {k: v for k, v in SYSTEMS.items() if not args.systems or k in args.systems}
    settings = get_settings()
    prepare_runtime(settings)
    for d in args.dirs:
        out = evaluate(d, settings, systems, limit=args.limit)
        print(json.dumps(out))
        for name, r in out["results"].items():
            print(f"{out['dataset']:>12} {name:>16}  ndcg@10 {r['ndcg@10']:.4f}  R@100 {r['recall@100']:.4f}  "
                  f"mrr@10 {r['mrr@10']:.4f}  {r['mean_ms']:.0f} ms")


if __name__ == "__main__":
    main()
