"""Where scoring a scope's papers here stops beating Chroma's filtered search, by scope size.

    python -m bench.scope_size [--papers 10000] [--sizes 20 100 250 500 1000] [--questions 40] [--workdir DIR]

On the home ``bench.scale`` ingests for ``--papers`` (``<workdir>/home-N``, which must exist), random scopes of each
size (``paper_ids`` filters) are searched with the titles of random papers as questions, two passes each way:
scored from the members' stored vectors (``retrieval.local_scope`` raised to the size) and by Chroma's filtered
query (``local_scope = 0``). Prints the median ``Retriever.search`` milliseconds per pass; this is how the default
``retrieval.local_scope`` was chosen (docs/benchmarks.md, "Retrieval inside a collection").
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import sys
import time
from pathlib import Path

from bench.scale import WORKDIR

log = logging.getLogger("bench.scope_size")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scope_size", description=__doc__.split("\n")[0])
    ap.add_argument("--papers", type=int, default=10000, help="the bench.scale home of this size (default 10000)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 100, 250, 500, 1000], help="scope sizes")
    ap.add_argument("--questions", type=int, default=40, help="questions per pass (default 40)")
    ap.add_argument("--workdir", type=Path, default=WORKDIR, help=f"bench.scale's workdir (default {WORKDIR})")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")

    from rag.config import get_settings
    from rag.index.paper_query import PaperQuery
    from rag.qa.retrieval import Retriever
    from rag.runtime import Runtime

    home = args.workdir / f"home-{args.papers}"
    if not home.exists():
        log.error("no home at %s: run `python -m bench.scale --sizes %d --reuse --ingest-only` first", home,
                  args.papers)
        return 2
    rt = Runtime(get_settings(home=home))
    try:
        base = rt.retriever()
        rt.lexical.sync(rt.store)
        ids = rt.store.paper_ids()
        rng = random.Random(1)
        qs = [p.title for p in rt.store.papers(rng.sample(ids, args.questions + 3))]
        for q in qs[:3]:  # warm-up: model, caches
            base.search(q)

        def way(local_scope: int) -> Retriever:
            cfg = base.cfg.model_copy(update={"local_scope": local_scope})
            return Retriever(rt.store, rt.embedder, rt.lexical, cfg)

        for n in args.sizes:
            scope = PaperQuery(paper_ids=tuple(rng.sample(ids, min(n, len(ids)))))
            out: dict[str, float] = {}
            for name, ret in (("here", way(n)), ("chroma", way(0)), ("here 2", way(n)), ("chroma 2", way(0))):
                ts = []
                for q in qs[3:]:
                    t0 = time.perf_counter()
                    ret.search(q, filters=scope)
                    ts.append((time.perf_counter() - t0) * 1000)
                out[name] = round(statistics.median(ts), 1)
            sys.stdout.write(f"{n:>6} papers: " + ", ".join(f"{k} {v} ms" for k, v in out.items()) + "\n")
    finally:
        rt.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
