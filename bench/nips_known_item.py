"""Build a BEIR-layout known-item set from the NeurIPS CSVs: the query is a paper's title, the
corpus holds abstracts *without* titles, the one relevant document is that paper.

    python -m bench.nips_known_item OUT_DIR [--queries N]

A realistic check for pointed questions over ML abstracts (named methods, specific phrasing),
where dense-only retrieval is known to be weak; used next to Cranfield to choose the fusion.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from pathlib import Path

from bench.common import NIPS


def build(out: Path, n_queries: int = 300, seed: int = 13) -> Path:
    rows = []
    for path in sorted(NIPS.glob("*.csv")):
        with path.open(encoding="utf-8") as f:
            for r in csv.DictReader(f):
                if r.get("Abstract", "").strip() and r.get("Title", "").strip():
                    rows.append((f"{r['Year']}-{r['']}", r["Title"].strip(), r["Abstract"].strip()))
    out.mkdir(parents=True, exist_ok=True)
    (out / "qrels").mkdir(exist_ok=True)
    with (out / "corpus.jsonl").open("w") as f:
        for pid, _, abstract in rows:
            f.write(json.dumps({"_id": pid, "title": "", "text": abstract}) + "\n")
    picked = random.Random(seed).sample(rows, min(n_queries, len(rows)))
    with (out / "queries.jsonl").open("w") as f:
        for pid, title, _ in picked:
            f.write(json.dumps({"_id": pid, "text": title}) + "\n")
    with (out / "qrels" / "test.tsv").open("w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for pid, _, _ in picked:
            f.write(f"{pid}\t{pid}\t1\n")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--queries", type=int, default=300)
    a = ap.parse_args()
    print(build(a.out, a.queries))
