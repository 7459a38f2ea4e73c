"""The local encoder alone: throughput by batch size, and memory with and without oneDNN.

    python -m bench.encoder [--texts 400] [--batches 240]

* **throughput**: texts/s embedding the first ``--texts`` abstracts of a synthetic corpus
  (``bench/synth.py``) through ``SentenceTransformerEmbedder`` (exact-length batches), for batch
  sizes 8, 16, 32 and 64;
* **memory**: RSS after ``--batches`` forward passes of 16 texts whose widths are drawn from 20–256
  tokens (what exact-length batching produces), with oneDNN on and off, each in a fresh process.

Prints one JSON object; nothing is written.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import synth


def _rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 2**20


def _embedder(batch: int = 16) -> Any:
    from rag.config import Settings
    from rag.index.embeddings import make_embedder

    return make_embedder(Settings(embeddings={"batch_size": batch}))


def throughput(texts: list[str], batch: int) -> float:
    e = _embedder(batch)
    e.embed(texts[:batch])  # warm-up
    t0 = time.perf_counter()
    e.embed(texts)
    return len(texts) / (time.perf_counter() - t0)


def memory(onednn: bool, batches: int) -> dict[str, float]:
    """RSS after ``batches`` forwards of random widths (call in a fresh process)."""
    import numpy as np
    import torch

    e = _embedder()
    torch.backends.mkldnn.enabled = onednn  # after loading: the embedder turns it off
    rng = random.Random(0)
    start = top = _rss_mb()
    for _ in range(batches):
        width = rng.randint(20, 256)
        ids = [(np.array([101] + [rng.randint(1000, 20000) for _ in range(width - 2)] + [102], dtype=np.int32), None)
               for _ in range(16)]
        e._forward_batches(ids)
        top = max(top, _rss_mb())
    # (ru_maxrss would not do: Linux carries the parent's high-water mark across fork and exec)
    return {"rss_after_load_mb": round(start), "rss_end_mb": round(_rss_mb()), "rss_max_mb": round(top)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=400, help="abstracts for the throughput runs (default 400)")
    ap.add_argument("--batches", type=int, default=240, help="forward passes for the memory runs (default 240)")
    ap.add_argument("--memory-child", choices=["on", "off"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.memory_child:
        print(json.dumps(memory(args.memory_child == "on", args.batches)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        synth.write(args.texts, corpus, progress=False)
        rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    texts = [f"{r['title']}. {' '.join(r['abstract'].split())}" for r in rows]
    out: dict[str, Any] = {"texts": len(texts), "texts_per_s": {}}
    for batch in (8, 16, 32, 64):
        out["texts_per_s"][batch] = round(throughput(texts, batch), 1)
    out["memory"] = {}
    for mode in ("on", "off"):
        res = subprocess.run([sys.executable, "-m", "bench.encoder", "--memory-child", mode, "--batches",
                              str(args.batches)], capture_output=True, text=True, check=True)
        out["memory"][f"onednn_{mode}"] = json.loads(res.stdout.strip().splitlines()[-1])
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
