"""In-process `ask` latency, extractive mode, on the sample corpus: first-time (headline) and warmed.

    python -m bench.latency [--rounds N] [--no-write]

Ingests data/sample into a throwaway home with the default settings (sentence vectors off), loads the
models with one untimed question, then times every single-turn question of the seed eval set twice:

* **first-time** (the headline): each question is asked as the first question about its papers, in a
  process whose models are loaded: before each one the embedding cache loses every row added after the
  ingest (question vectors and abstract-sentence vectors) and a fresh ``AnswerChain`` is built (new
  in-memory evidence index), so the answer embeds its papers' sentences as a user's first question does.
* **warmed**: one ``AnswerChain`` that has first answered one label-based question per paper, so every
  abstract's sentence vectors are cached; no timed question was asked before. This is the figure for a
  server that has already been answering about this corpus.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, machine, percentile, update_section

BUSY_LOAD = 1.5  # 1-minute load average above which the figures are flagged as taken on a busy machine


def _cache_rows_after(db_path: Path, boundary: int | None = None) -> int:
    """With ``boundary`` None, the cache's last rowid; else drop the rows after it and return how many went.
    Rows are only ever appended (a key is inserted once), so rows after the ingest's last one are the vectors
    of questions and abstract sentences that answering added."""
    db = sqlite3.connect(db_path, timeout=30)
    try:
        if boundary is None:
            return int(db.execute("SELECT MAX(rowid) FROM vec").fetchone()[0] or 0)
        with db:
            n = db.execute("DELETE FROM vec WHERE rowid > ?", (boundary,)).rowcount
        return int(n)
    finally:
        db.close()


def _time(chain: Any, question: str, totals: list[float], stages: dict[str, list[float]]) -> None:
    t0 = time.perf_counter()
    ans = chain.ask(question)
    totals.append((time.perf_counter() - t0) * 1000)
    for k, v in ans.timings.items():
        stages.setdefault(k, []).append(v)


def _stage_rows(first: dict[str, list[float]], warm: dict[str, list[float]]) -> str:
    def cell(v: list[float] | None) -> str:
        return f"{percentile(v, 50):.1f} | {percentile(v, 95):.1f}" if v else "– | –"
    return "\n".join(f"| {k} | {cell(first.get(k))} | {cell(warm.get(k))} |" for k in sorted(set(first) | set(warm)))


def _misses(rt: Any) -> int:
    """Vectors computed so far: the exact embedder's (questions) and the sentence scorer's, when it is another."""
    scorer = rt.scoring_embedder
    return int(rt.embedder.misses) + (int(scorer.misses) if scorer is not rt.embedder else 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1, help="passes over the seed questions (>1 repeats them)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from rag.config import get_settings
    from rag.qa.chain import AnswerChain
    from rag.runtime import Runtime

    load_before = os.getloadavg()
    questions = [json.loads(line)["question"] for line in (ROOT / "evals" / "sets" / "seed.jsonl").open()
                 if line.strip() and "question" in json.loads(line)]
    first_ms: list[float] = []
    first_stages: dict[str, list[float]] = {}
    warm_ms: list[float] = []
    warm_stages: dict[str, list[float]] = {}
    dropped = 0
    with tempfile.TemporaryDirectory() as home:
        settings = get_settings(home=home)
        rt = Runtime(settings)
        rt.ingestor(progress=False).ingest(sorted((ROOT / "data" / "sample").glob("*.txt")))
        cache_db = Path(home) / "cache" / "embeddings.sqlite"
        boundary = _cache_rows_after(cache_db)
        # Load the models (and touch the lexical index) with a question no timed one repeats; its vectors go below.
        AnswerChain(rt).ask("What do these papers study?")
        embedded: list[float] = []  # vectors computed by each first-time question (its own and its papers' sentences)
        for _ in range(args.rounds):
            for q in questions:
                dropped += _cache_rows_after(cache_db, boundary)
                misses = _misses(rt)
                _time(AnswerChain(rt), q, first_ms, first_stages)
                embedded.append(_misses(rt) - misses)
        _cache_rows_after(cache_db, boundary)
        chain = AnswerChain(rt)
        # Warm-up as a server that has been answering about this corpus: one question per paper, built from
        # its label, so every abstract's sentence vectors are cached but no timed question has been seen.
        for paper in rt.store.papers():
            chain.ask(f"What is {paper.label.split(': ', 1)[-1]} about?")
        for _ in range(args.rounds):
            for q in questions:
                _time(chain, q, warm_ms, warm_stages)
        sentence_vectors = settings.ingest.sentence_vectors
        rt.close()
    f50, f95 = percentile(first_ms, 50), percentile(first_ms, 95)
    w50, w95 = percentile(warm_ms, 50), percentile(warm_ms, 95)
    print(f"{len(first_ms)} first-time asks: p50 {f50:.0f} ms, p95 {f95:.0f} ms "
          f"({dropped} cache rows dropped between them)")
    print(f"{len(warm_ms)} warmed asks: p50 {w50:.0f} ms, p95 {w95:.0f} ms")
    busy = load_before[0] > BUSY_LOAD
    busy_note = (f" — above {BUSY_LOAD} on {os.cpu_count()} cores: the machine was shared with other work during\n"
                 "this run, so these figures are slower than on an idle machine")
    load_note = "{:.2f} {:.2f} {:.2f}".format(*load_before) + (busy_note if busy else " (machine otherwise idle)")
    missed = ": not met first-time" if f95 > 300 else ""
    sv = f" (`ingest.sentence_vectors = {str(sentence_vectors).lower()}`)"
    body = f"""## `ask` latency (extractive mode, sample corpus)

`make bench-latency` (= `python -m bench.latency --rounds {args.rounds}`), {machine()}; load average before
the run: {load_note}. Default settings{sv}, models loaded once in the process (as in the app) before
anything is timed; {len(questions)} single-turn seed questions × {args.rounds}.

**First-time: p50 {f50:.0f} ms, p95 {f95:.0f} ms** (target p95 ≤ 300 ms{missed}). Each
question is the first question about its papers: before each one the embedding-cache rows added after
the ingest are dropped ({dropped} rows in all) and a fresh `AnswerChain` (new in-memory evidence index)
answers it, so it embeds the question and its papers' abstract sentences, as a user's first question about
those papers does: a median of {percentile(embedded, 50):.0f} vectors per question, the sentence ones computed
inside `generate_ms` (where the evidence sentences are scored). `ingest.sentence_vectors = true` moves that
work to ingest.

Warmed: p50 {w50:.0f} ms, p95 {w95:.0f} ms. One `AnswerChain` that has first answered one label-based
question per paper, so every abstract's sentence vectors are cached (a server that has been answering
about this corpus); no timed question was asked before.

| stage | first-time p50 ms | first-time p95 ms | warmed p50 ms | warmed p95 ms |
|---|---:|---:|---:|---:|
{_stage_rows(first_stages, warm_stages)}
"""
    if not args.no_write:
        print(f"wrote {update_section('latency', body)}")
    else:
        print(body)


if __name__ == "__main__":
    main()
