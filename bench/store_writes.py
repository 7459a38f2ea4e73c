"""How fast a Chroma server takes precomputed vectors: the write side of an ingest whose embedding runs elsewhere
(Ray workers, GPUs), for the throughput model in docs/deployment.md ("Throughput model").

    python -m bench.store_writes [--papers 5000] [--batch 64] [--chroma-path DIR] [--corpus C.jsonl]

Papers come from a ``bench.synth`` corpus (renumbered under arXiv ids no bench corpus uses, 9913.*), are chunked
as an ingest chunks them (``paper_rows``, the bundled model's tokenizer and window), and get random unit vectors
of the model's dimension instead of an encoder's. A ``chroma run`` on 127.0.0.1 serves a fresh folder, or a copy
of ``--chroma-path`` (a bench home's store, to measure at that size; the original is never written). The
timed loop is the driver's write protocol per batch: bump the generation, upsert the rows. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.support.servers import ChromaServer


class RandomVectors:
    """The bundled model's tokenizer and window, random unit vectors instead of its forward pass."""

    def __init__(self, exact: Any) -> None:
        self.exact, self.rng = exact, np.random.default_rng(0)

    name = property(lambda self: self.exact.name)
    dim = property(lambda self: self.exact.dim)
    max_tokens = property(lambda self: self.exact.max_tokens)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return list(self.exact.count_tokens(texts))

    def embed(self, texts: list[str]) -> np.ndarray:
        v = self.rng.standard_normal((len(texts), self.exact.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--papers", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=64, help="papers per write (the Ray driver's batch; default 64)")
    ap.add_argument("--chroma-path", type=Path, help="a Chroma data folder to grow (copied, never written)")
    ap.add_argument("--corpus", type=Path, default=Path("~/.cache/paperchat-bench/scale/corpus-10000.jsonl"))
    args = ap.parse_args(argv)

    from rag.config import get_settings
    from rag.index.embeddings import make_embedder
    from rag.index.store import ChromaStore
    from rag.ingest.loaders import iter_records
    from rag.ingest.pipeline import paper_rows
    from rag.records import Paper

    work = Path(tempfile.mkdtemp(prefix="store-writes-"))
    try:
        if args.chroma_path:
            shutil.copytree(args.chroma_path.expanduser(), work / "chroma")
        papers = []
        for item in iter_records(args.corpus.expanduser()):
            if isinstance(item, Paper):
                item.id = f"arxiv:9913.{len(papers):05d}"
                item.doi = None
                papers.append(item)
                if len(papers) == args.papers:
                    break
        with ChromaServer(work / "chroma", log_path=work / "chroma.log") as server:
            settings = get_settings(home=work / "home", store={"mode": "server", "host": "127.0.0.1",
                                                              "port": server.port})
            vectors = RandomVectors(make_embedder(settings))
            store = ChromaStore(settings, vectors.name, vectors.dim)
            before = store.count_chunks()
            chunks, write_s, t_all = 0, 0.0, time.perf_counter()
            for i in range(0, len(papers), args.batch):
                batch = [(p, p.content_hash()) for p in papers[i:i + args.batch]]
                rows = paper_rows(batch, vectors, vectors.max_tokens, 1)  # as Ingestor: the window, 1 sentence overlap
                t = time.perf_counter()
                store.bump_generation()
                store.upsert(rows)
                write_s += time.perf_counter() - t
                chunks += len(rows)
            total_s = time.perf_counter() - t_all
            out = {"papers": len(papers), "chunks": chunks, "batch_papers": args.batch,
                   "store_chunks_before": before, "store_chunks_after": store.count_chunks(),
                   "write_s": round(write_s, 2), "papers_per_s": round(len(papers) / write_s, 1),
                   "chunks_per_s": round(chunks / write_s, 1), "wall_s_with_chunking": round(total_s, 2)}
            store.close()
        print(json.dumps(out, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
