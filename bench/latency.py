"""Warm in-process `ask` latency, extractive mode, on the sample corpus (p50/p95 per stage).

    python -m bench.latency [--rounds N] [--no-write]

Ingests data/sample into a throwaway home, warms up with one question per paper (built from its
label), then asks every single-turn question of the seed eval set through one AnswerChain (models
loaded once, as in the app). Every timed question is new to the process.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

from bench.report import machine, update_section
from evals.metrics import percentile

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1, help="passes over the seed questions (>1 repeats them)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from rag.config import get_settings
    from rag.qa.chain import AnswerChain
    from rag.runtime import Runtime

    questions = [json.loads(line)["question"] for line in (ROOT / "evals" / "sets" / "seed.jsonl").open()
                 if line.strip() and "question" in json.loads(line)]
    with tempfile.TemporaryDirectory() as home:
        rt = Runtime(get_settings(home=home))
        rt.ingestor(progress=False).ingest(sorted((ROOT / "data" / "sample").glob("*.txt")))
        chain = AnswerChain(rt)
        # Warm-up as a server that has been answering about this corpus: one question per paper,
        # built from its label, so no timed question (nor its embedding) has been seen before.
        for paper in rt.store.papers():
            chain.ask(f"What is {paper.label.split(': ', 1)[-1]} about?")
        totals: list[float] = []
        stages: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for q in questions:
                t0 = time.perf_counter()
                ans = chain.ask(q)
                totals.append((time.perf_counter() - t0) * 1000)
                for k, v in ans.timings.items():
                    stages.setdefault(k, []).append(v)
        rt.close()
    p50, p95 = percentile(totals, 50), percentile(totals, 95)
    print(f"{len(totals)} asks: p50 {p50:.0f} ms, p95 {p95:.0f} ms")
    rows = "\n".join(f"| {k} | {percentile(v, 50):.1f} | {percentile(v, 95):.1f} |" for k, v in sorted(stages.items()))
    body = f"""## Warm `ask` latency (extractive mode, sample corpus)

`make bench-latency` (= `python -m bench.latency --rounds {args.rounds}`), {machine()}.
{len(totals)} asks ({len(questions)} single-turn seed questions × {args.rounds}), in process, after a warm-up of
one label-based question per paper; no timed question was asked before.

**p50 {p50:.0f} ms, p95 {p95:.0f} ms** (target p95 ≤ 300 ms).

| stage | p50 ms | p95 ms |
|---|---:|---:|
{rows}
"""
    if not args.no_write:
        print(f"wrote {update_section('latency', body)}")


if __name__ == "__main__":
    main()
