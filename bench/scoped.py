"""Retrieval inside a collection vs the whole library and vs an author filter, at one size.

    python -m bench.scoped [--papers 10000] [--members 20] [--questions 60] [--workdir DIR] [--json]

Uses the home that ``bench.scale`` ingests for the same size (``<workdir>/home-N``, the synthetic
arXiv-like corpus; ingested here first if missing, resumable). In one process, after a warm-up, each
fresh question (title phrases of random papers, as ``bench.scale`` makes them) is retrieved three
ways, in rotating order so no way always runs warm: unscoped; scoped to a collection of ``--members``
random papers, timing what a turn does for it (read the members from Chroma, apply them, search);
and filtered by the author of one of those papers (the filter the issue compares against).
Reports p50/p95 per way and the ratio of scoped to unscoped p95; writes ``docs/img/scoped.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, pct
from bench.scale import WORKDIR, ensure_corpus, ingest, questions

log = logging.getLogger("bench.scoped")


def measure(home: Path, qs: list[str], members: int, seed: int) -> dict[str, Any]:
    from rag.config import get_settings
    from rag.index.paper_query import PaperQuery, scoped
    from rag.runtime import Runtime

    rt = Runtime(get_settings(home=home))
    try:
        retriever = rt.retriever()
        rt.lexical.sync(rt.store)
        rng = random.Random(seed)
        ids = rng.sample(rt.store.paper_ids(), members)
        sets = rt.collections()
        name = f"bench-scoped-{members}"
        try:
            sets.delete(name)
        except Exception:  # not there yet
            pass
        sets.add(name, ids)
        author = next(a for p in rt.store.papers(ids) for a in p.authors)
        for q in qs[:5]:  # warm-up: model, caches, Chroma pages
            retriever.search(q)
        ways: dict[str, list[float]] = {"unscoped": [], "collection": [], "author": []}
        inside = 0

        def run(way: str, q: str) -> None:
            nonlocal inside
            t0 = time.perf_counter()
            if way == "unscoped":
                retriever.search(q)
            elif way == "collection":
                flt = scoped(PaperQuery(collection=name), sets.members(name))
                hits = retriever.search(q, filters=flt).hits
                inside += all(h.paper_id in set(ids) for h in hits)
            else:
                retriever.search(q, filters=PaperQuery(author=author))
            ways[way].append((time.perf_counter() - t0) * 1000)

        order = list(ways)
        for i, q in enumerate(qs[5:]):
            for way in order[i % 3:] + order[:i % 3]:
                run(way, q)
        sets.delete(name)
        out: dict[str, Any] = {"papers": len(rt.store.paper_ids()), "members": members, "questions": len(qs) - 5,
                               "author": author, "scoped_hits_all_inside": inside == len(qs) - 5}
        for way, xs in ways.items():
            out[way] = {"p50_ms": pct(xs, 50, 1), "p95_ms": pct(xs, 95, 1), "mean_ms": round(statistics.mean(xs), 1)}
        out["collection_vs_unscoped_p95"] = round(out["collection"]["p95_ms"] / out["unscoped"]["p95_ms"], 3)
        out["collection_vs_author_p95"] = round(out["collection"]["p95_ms"] / out["author"]["p95_ms"], 3)
        return out
    finally:
        rt.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--papers", type=int, default=10_000)
    ap.add_argument("--members", type=int, default=20)
    ap.add_argument("--questions", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=WORKDIR)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
    args.workdir.mkdir(parents=True, exist_ok=True)
    corpus = ensure_corpus(args.papers, args.workdir)
    home = args.workdir / f"home-{args.papers}"
    ingest(args.papers, corpus, home, reuse=True)
    qs = questions(corpus, args.papers, args.questions + 5, args.seed)
    result = measure(home, qs, args.members, args.seed) | {
        "command": "python -m bench.scoped " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d")}
    (ROOT / "docs" / "img" / "scoped.json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result))
    else:
        for way in ("unscoped", "collection", "author"):
            print(f"{way:>10}: p50 {result[way]['p50_ms']} ms, p95 {result[way]['p95_ms']} ms")
        print(f"collection / unscoped p95: {result['collection_vs_unscoped_p95']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
