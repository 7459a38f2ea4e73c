"""What following an ingest costs the lexical side, and the engines it was chosen among.

Two parts, each in child processes so that times and peak RSS are one step's own:

* ``engines``: the lexical index alone over the same chunk-0 rows paperchat stores (the first
  ``--papers`` of a synthetic arXiv corpus from ``bench/synth.py``, read with the arXiv loader and
  written as rows with ``rag.index.rows.chunk_metadata``; no Chroma, no encoder). For each engine:
  build over ``--papers``, add ``--extra`` more, open the saved index in a fresh process, and the p95 of
  a top-100 BM25 query (questions from random titles). Engines: ``segments`` (``rag.index.lexical``,
  what ships), ``fts5`` (SQLite FTS5 with its ``bm25()``, over our analysed terms) and ``tantivy`` (when
  the ``tantivy`` package is importable; same analysed terms, whitespace-split).
* ``store``: the shipped index against a real store (``--home`` with a store built by ``store-build``:
  every paper one chunk with a random unit vector, written with ``ChromaStore.upsert``; no encoder). A
  serving process syncs, then ``--extra`` papers are written to the store and the same process syncs
  again: the wait the next question sees. Then a fresh process opens the index, and a second home (a
  second host on the same store) syncs from nothing.

``python -m bench.lexical_update store-build --corpus C --papers 100000 --home H``,
``python -m bench.lexical_update engines --corpus C --papers 100000 --extra 100``,
``python -m bench.lexical_update store --corpus C --home H --extra 100``.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import ROOT, percentile


def rows(corpus: Path, start: int, n: int) -> Iterator[dict[str, Any]]:
    """Chunk-0 metadata rows of papers ``start``..``start+n`` of the corpus, as the store holds them."""
    from rag.index.rows import chunk_metadata
    from rag.ingest import loaders

    k = 0
    for p in loaders.iter_records(corpus, fmt="arxiv-jsonl"):
        if not hasattr(p, "content_hash"):
            continue
        if k >= start + n:
            return
        if k >= start:
            yield chunk_metadata(p, p.content_hash(), 0, 1, 0)
        k += 1


def questions(corpus: Path, n_papers: int, count: int, seed: int = 0) -> list[str]:
    titles = [md.get("title", "") for md in rows(corpus, 0, n_papers)]
    rng = random.Random(seed)
    return [" ".join(t.split()[:6]) for t in rng.sample(titles, count)]


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------- engines (children)

def _analysed(md: dict[str, Any]) -> str:
    from rag.analysis import analyze
    from rag.index.lexical import paper_text
    from rag.index.rows import read_paper

    return " ".join(analyze(paper_text(read_paper(md))))


def child_engine(engine: str, step: str, corpus: Path, papers: int, extra: int, folder: Path) -> dict[str, Any]:
    """One step of one engine, in this (child) process."""
    from rag.analysis import analyze
    from rag.index.lexical import LexicalIndex

    if engine == "tantivy":
        import tantivy
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    if engine == "segments":
        lex = LexicalIndex(folder)
        if step == "build":
            lex._build(rows(corpus, 0, papers), (1, papers))
        elif step == "update":
            batch = list(rows(corpus, papers, extra))
            t0 = time.perf_counter()
            assert lex._load((1, papers))
            out["load_s"] = round(time.perf_counter() - t0, 3)
            lex._apply([], batch, (2, papers + extra))  # analyse, write the segment, update the catalog, commit
        elif step == "open":
            assert lex._load((2, papers + extra))
            out["papers"] = len(lex)
        elif step == "query":
            assert lex._load((2, papers + extra))
            qs = questions(corpus, papers, 200)
            times = []
            for q in qs:
                t = time.perf_counter()
                terms: dict[str, float] = {}
                for w in analyze(q):
                    terms[w] = terms.get(w, 0.0) + 1.0
                s = lex.term_scores(terms)
                n = min(100, int((s > 0).sum()))
                if n:
                    top = np.argpartition(-s, n - 1)[:n]
                    top[np.argsort(-s[top], kind="stable")]
                times.append((time.perf_counter() - t) * 1000)
            out.update(p50_ms=round(statistics.median(times), 2), p95_ms=round(percentile(times, 95), 2))
    elif engine == "fts5":
        db = folder / "fts.sqlite"
        if step == "build":
            folder.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(db)
            con.execute("CREATE VIRTUAL TABLE t USING fts5(pid UNINDEXED, body, tokenize='unicode61')")
            con.executemany("INSERT INTO t VALUES (?, ?)", ((md["paper_id"], _analysed(md))
                                                            for md in rows(corpus, 0, papers)))
            con.commit()
            con.execute("INSERT INTO t(t) VALUES ('optimize')")
            con.commit()
        elif step == "update":
            batch = list(rows(corpus, papers, extra))
            t0 = time.perf_counter()
            con = sqlite3.connect(db)
            con.executemany("INSERT INTO t VALUES (?, ?)", ((md["paper_id"], _analysed(md)) for md in batch))
            con.commit()
        elif step == "open":
            con = sqlite3.connect(db)
            con.execute("SELECT rowid FROM t WHERE t MATCH 'flow' LIMIT 1").fetchall()
        elif step == "query":
            con = sqlite3.connect(db)
            times = []
            for q in questions(corpus, papers, 200):
                terms = [w for w in dict.fromkeys(analyze(q)) if w.isalnum()]
                if not terms:
                    continue
                t = time.perf_counter()
                con.execute("SELECT pid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 100",
                            (" OR ".join(f'"{w}"' for w in terms),)).fetchall()
                times.append((time.perf_counter() - t) * 1000)
            out.update(p50_ms=round(statistics.median(times), 2), p95_ms=round(percentile(times, 95), 2))
    elif engine == "tantivy":
        def schema() -> Any:
            sb = tantivy.SchemaBuilder()
            sb.add_text_field("pid", stored=True, tokenizer_name="raw")
            sb.add_text_field("body", stored=False, tokenizer_name="whitespace")
            return sb.build()

        if step == "build":
            folder.mkdir(parents=True, exist_ok=True)
            index = tantivy.Index(schema(), path=str(folder))
            w = index.writer(heap_size=200_000_000, num_threads=1)
            for md in rows(corpus, 0, papers):
                w.add_document(tantivy.Document(pid=md["paper_id"], body=_analysed(md)))
            w.commit()
            w.wait_merging_threads()
        elif step == "update":
            batch = list(rows(corpus, papers, extra))
            t0 = time.perf_counter()
            index = tantivy.Index.open(str(folder))
            w = index.writer(heap_size=50_000_000, num_threads=1)
            for md in batch:
                w.add_document(tantivy.Document(pid=md["paper_id"], body=_analysed(md)))
            w.commit()
            w.wait_merging_threads()
        elif step == "open":
            index = tantivy.Index.open(str(folder))
            index.reload()
            index.searcher()
        elif step == "query":
            index = tantivy.Index.open(str(folder))
            searcher = index.searcher()
            times = []
            for q in questions(corpus, papers, 200):
                terms = [w for w in dict.fromkeys(analyze(q)) if w.isalnum()]
                if not terms:
                    continue
                t = time.perf_counter()
                query = index.parse_query(" ".join(terms), ["body"])
                searcher.search(query, 100)
                times.append((time.perf_counter() - t) * 1000)
            out.update(p50_ms=round(statistics.median(times), 2), p95_ms=round(percentile(times, 95), 2))
    out.update(seconds=round(time.perf_counter() - t0, 3), peak_rss_mb=round(peak_mb()))
    return out


def _run_child(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "bench.lexical_update", *args], cwd=ROOT, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def engines(corpus: Path, papers: int, extra: int, names: list[str], workdir: Path) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for engine in names:
        folder = workdir / engine
        shutil.rmtree(folder, ignore_errors=True)
        results[engine] = {}
        for step in ("build", "update", "open", "query"):
            results[engine][step] = _run_child(["child", engine, step, str(corpus), str(papers), str(extra),
                                                str(folder)])
            print(engine, step, results[engine][step], file=sys.stderr, flush=True)
        results[engine]["disk_mb"] = round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 1)
    return results


# ---------------------------------------------------------------- the shipped index against a real store

def store_build(corpus: Path, papers: int, home: Path, start: int = 0) -> dict[str, Any]:
    """Write papers ``start``.. as one chunk each, with random unit vectors, into the store at ``home``."""
    from rag.config import get_settings
    from rag.index.rows import chunk_id
    from rag.index.store import ChromaStore, ChunkRow

    store = ChromaStore(get_settings(home=home), "synthetic-random-unit", 384)
    rng = np.random.default_rng(start)
    t0 = time.perf_counter()
    batch: list[ChunkRow] = []
    store.bump_generation()
    for md in rows(corpus, start, papers):
        v = rng.standard_normal(384).astype(np.float32)
        batch.append(ChunkRow(chunk_id(md["paper_id"], md["content_hash"], 0), md["paper_id"], md["abstract"],
                              v / np.linalg.norm(v), md))
        if len(batch) >= 2000:
            store.upsert(batch)
            batch = []
    if batch:
        store.upsert(batch)
    store.bump_generation()
    out = {"papers": papers, "chunks": store.count_chunks(), "seconds": round(time.perf_counter() - t0, 1)}
    store.close()
    return out


def child_store(step: str, corpus: Path, home: Path, extra: int, papers: int) -> dict[str, Any]:
    from rag.config import get_settings
    from rag.index.lexical import LexicalIndex
    from rag.index.store import ChromaStore

    out: dict[str, Any] = {}
    if step == "serve-then-add":  # a serving process: synced, then papers arrive, then the next question
        store = ChromaStore(get_settings(home=home), None, None)
        lex = LexicalIndex.for_store(home, store)
        t0 = time.perf_counter()
        lex.sync(store)
        out["first_sync_s"] = round(time.perf_counter() - t0, 2)
        store.close()
        out["added"] = store_build(corpus, extra, home, start=papers)
        store = ChromaStore(get_settings(home=home), None, None)
        t0 = time.perf_counter()
        lex.sync(store)
        out["sync_after_add_s"] = round(time.perf_counter() - t0, 2)
        out["papers"] = len(lex)
    elif step in ("open", "second-host"):
        store = ChromaStore(get_settings(home=home), None, None)
        root = home / "second-host-lexical" if step == "second-host" else None
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
        lex = LexicalIndex(root) if root is not None else LexicalIndex.for_store(home, store)
        t0 = time.perf_counter()
        lex.sync(store)
        out["sync_s"] = round(time.perf_counter() - t0, 2)
        out["papers"] = len(lex)
    out["peak_rss_mb"] = round(peak_mb())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.lexical_update", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("engines", help="each engine alone over the same rows: build, update, open, query")
    e.add_argument("--corpus", type=Path, required=True)
    e.add_argument("--papers", type=int, default=100_000)
    e.add_argument("--extra", type=int, default=100)
    e.add_argument("--engines", nargs="+", default=["segments", "fts5", "tantivy"])
    e.add_argument("--workdir", type=Path, default=None)
    e.add_argument("--out", type=Path, default=None)
    b = sub.add_parser("store-build", help="a store of synthetic papers with random unit vectors (no encoder)")
    b.add_argument("--corpus", type=Path, required=True)
    b.add_argument("--papers", type=int, default=100_000)
    b.add_argument("--home", type=Path, required=True)
    s = sub.add_parser("store", help="the shipped index against the store at --home: update, open, second host")
    s.add_argument("--corpus", type=Path, required=True)
    s.add_argument("--home", type=Path, required=True)
    s.add_argument("--papers", type=int, default=100_000, help="papers already in the store (the extra follow)")
    s.add_argument("--extra", type=int, default=100)
    s.add_argument("--out", type=Path, default=None)
    c = sub.add_parser("child")
    c.add_argument("args", nargs="+")
    args = ap.parse_args(argv)
    if args.cmd == "child":
        a = args.args
        if a[0] == "store":
            res = child_store(a[1], Path(a[2]), Path(a[3]), int(a[4]), int(a[5]))
        else:
            res = child_engine(a[0], a[1], Path(a[2]), int(a[3]), int(a[4]), Path(a[5]))
        print(json.dumps(res))
        return 0
    if args.cmd == "store-build":
        print(json.dumps(store_build(args.corpus, args.papers, args.home)))
        return 0
    if args.cmd == "engines":
        with tempfile.TemporaryDirectory() as tmp:
            res = engines(args.corpus, args.papers, args.extra, args.engines, args.workdir or Path(tmp))
    else:
        res = {step: _run_child(["child", "store", step, str(args.corpus), str(args.home), str(args.extra),
                                 str(args.papers)]) for step in ("serve-then-add", "open", "second-host")}
    text = json.dumps(res, indent=1)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
