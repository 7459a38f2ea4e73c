"""Full text at 1,000 papers: retrieval p95 with every paper's passages stored against the same papers abstracts-only,
and the first question's answer after a process starts (issue 31's "Done when").

    python -m bench.fulltext_scale                # writes the "fulltext-scale" section of docs/benchmarks.md
    python -m bench.fulltext_scale --papers 200 --no-write

Two homes over the same synthetic papers (``bench.synth``, the corpus of ``bench.scale``), their abstracts
ingested with the bundled encoder: one abstracts-only, one where each paper also has ``--pages`` pages of full text
(4 passages a page, as the shared PDFs give with 200-token passages). The passages' text is real sentences of
other synthetic abstracts with some of the paper's own (so BM25 sees a realistic vocabulary); their vectors are the
paper's abstract vector plus noise (cosine ~0.8 to it), written straight to the store: embedding 40,000 passages
would take hours on this machine, and what is measured here is what a store of that size costs a question, not
what the vectors mean. The passage BM25 is built by the same hook an ingest runs (its time is reported), then
one paper's full text is added and the incremental update timed.

Measured in child processes: *retrieval* (one process per home, warmed on a few questions, then
``Retriever.search`` on fresh title-phrase questions, the two homes alternating in rounds) and the *first
question* (a fresh process per question that opens the model, the store and the paper-level BM25 as a server's
warm-up does, then times its first ``AnswerChain.ask``: the passage index is loaded from its saved file inside
that first question).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import machine, percentile, update_section
from bench.scale import WORKDIR, ensure_corpus, questions

PASSAGES_PER_PAGE = 4
WORDS = 130  # words per synthetic passage: ~170 word pieces, as the shared PDFs' 200-token passages measure


def _settings(home: Path) -> Any:
    from rag.config import get_settings

    return get_settings(home=home, ingest={"full_text": True})


def _sentences(corpus: Path) -> list[list[str]]:
    from rag.text import split_sentences

    return [split_sentences(" ".join(json.loads(line)["abstract"].split())) for line in corpus.open()]


def _passage_texts(own: list[str], pool: list[str], n: int, rng: random.Random) -> list[str]:
    out = []
    for _ in range(n):
        words: list[str] = []
        while len(words) < WORDS:
            words.extend((rng.choice(own) if own and rng.random() < 0.3 else rng.choice(pool)).split())
        out.append(" ".join(words))
    return out


def add_full_text(home: Path, corpus: Path, pages: int, seed: int = 0) -> dict[str, float]:
    """Give every stored paper ``pages`` pages of synthetic passages; the passage index's build time."""
    from rag.index.rows import passage_id, passage_metadata
    from rag.index.store import ChunkRow
    from rag.ingest.fulltext import Passage
    from rag.ingest.passages import text_hash
    from rag.runtime import Runtime

    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    sents = _sentences(corpus)
    pool = [s for ss in sents for s in ss]
    rt = Runtime(_settings(home))
    store = rt.store
    ids = store.paper_ids()
    vectors = {pid: vec for _, pid, vec in store.paper_vectors(ids)}
    papers = {sp.id: sp for sp in store.papers(ids)}
    n = pages * PASSAGES_PER_PAGE
    written = 0
    t0 = time.perf_counter()
    batch: list[ChunkRow] = []
    for k, pid in enumerate(sorted(papers)):
        sp = papers[pid]
        texts = _passage_texts(sents[k % len(sents)], pool, n, rng)
        body = [Passage(t, f"{1 + i // 8} Section", 1 + i // PASSAGES_PER_PAGE, 1 + i // PASSAGES_PER_PAGE, i)
                for i, t in enumerate(texts)]
        h = text_hash(body)
        noise = nrng.standard_normal((n, vectors[pid].shape[0])).astype(np.float32)
        noise *= 0.75 / np.linalg.norm(noise, axis=1, keepdims=True)
        vecs = vectors[pid] + noise
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        for i, p in enumerate(body):
            batch.append(ChunkRow(passage_id(pid, h, i), pid, p.text, vecs[i],
                                  passage_metadata(sp, h, i, n, p.page_start, p.page_end, p.section, 200)))
        if len(batch) >= 4000:
            store.upsert(batch)
            written += len(batch)
            batch = []
    store.upsert(batch)
    written += len(batch)
    store.bump_generation()
    write_s = time.perf_counter() - t0
    from rag.index.passage_lexical import PassageIndex

    t0 = time.perf_counter()
    for hook in rt.index_hooks():  # what an ingest ends with: both BM25 indexes follow the store
        hook(store)
    index_s = time.perf_counter() - t0
    index = PassageIndex.of(rt.lexical)
    counts = dict(index.counts)
    rt.close()
    return {"passages": written + 0.0, "write_s": write_s, "index_s": index_s, "built": counts.get("built", 0),
            "size_mb": index.path.stat().st_size / 1e6 if index.path else 0.0}


def add_one(home: Path) -> dict[str, float]:
    """Ingest one more paper with full text (real embedding) and time the passage index's follow-up."""
    from rag.index.passage_lexical import PassageIndex
    from rag.ingest.fulltext import Passage
    from rag.records import Paper
    from rag.runtime import Runtime

    rt = Runtime(_settings(home))
    rt.lexical.sync(rt.store)
    index = PassageIndex.of(rt.lexical)
    index.sync(rt.store, rt.lexical.state)
    before = dict(index.counts)
    body = tuple(Passage(f"Passage {i} of the added paper reports a chunk size of {64 + i} MB on its cluster.",
                         "2 Design", 2, 2, i) for i in range(40))
    paper = Paper(id="added-1", title="An added file system paper", abstract="A file system for large clusters, "
                  "its chunk size and replication, measured on a production workload.", passages=body)
    ingestor = rt.ingestor(progress=False)
    ingestor.on_change = [lambda store: rt.lexical.sync(store)]  # the passage index is left to the next question
    ingestor.ingest_papers([paper])
    t0 = time.perf_counter()
    index.sync(rt.store, rt.lexical.state)  # what the first question after that ingest does
    update_s = time.perf_counter() - t0
    after = dict(index.counts)
    rt.close()
    return {"updated": after.get("updated", 0) - before.get("updated", 0),
            "built": after.get("built", 0) - before.get("built", 0), "update_s": update_s}


# ---------------------------------------------------------------- child processes

def _peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: its own, reset by exec, unlike ``ru_maxrss``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    from rag.qa.chain import AnswerChain
    from rag.runtime import Runtime

    rt = Runtime(_settings(Path(spec["home"])))
    rt.embedder.embed(["warm up"])  # a server's warm-up: the model, the store, the paper-level BM25
    rt.lexical.sync(rt.store)
    out: dict[str, Any] = {"load": os.getloadavg()[0]}
    if spec["mode"] == "first":
        chain = AnswerChain(rt)
        t0 = time.perf_counter()
        chain.ask(spec["questions"][0])
        out["ms"] = [(time.perf_counter() - t0) * 1000]
    else:
        retriever = rt.retriever()
        for q in spec["warmup"]:
            retriever.search(q)
        out["ms"] = []
        for q in spec["questions"]:
            t0 = time.perf_counter()
            retriever.search(q)
            out["ms"].append((time.perf_counter() - t0) * 1000)
    out["rss_mb"] = _peak_rss_mb()
    rt.close()
    return out


def child(spec: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    res = subprocess.run([sys.executable, "-m", "bench.fulltext_scale", "--child", json.dumps(spec)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def measure(homes: dict[str, Path], qs: list[str], rounds: int, first: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {k: {"retrieve": [], "first": [], "loads": [], "rss_retrieve": [],
                                          "rss_first": []} for k in homes}
    per = (len(qs) - 5 - first) // rounds
    for r in range(rounds):  # the two homes alternate, so a change of load hits both
        for name, home in homes.items():
            res = child({"mode": "retrieve", "home": str(home), "warmup": qs[:5],
                         "questions": qs[5 + r * per:5 + (r + 1) * per]})
            out[name]["retrieve"] += res["ms"]
            out[name]["loads"].append(res["load"])
            out[name]["rss_retrieve"].append(res["rss_mb"])
    for i in range(first):
        for name, home in homes.items():
            res = child({"mode": "first", "home": str(home), "questions": [qs[-1 - i]]})
            out[name]["first"] += res["ms"]
            out[name]["loads"].append(res["load"])
            out[name]["rss_first"].append(res["rss_mb"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", type=int, default=1000)
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--questions", type=int, default=100, help="timed retrievals per home")
    ap.add_argument("--first", type=int, default=10, help="fresh processes per home, one first question each")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--workdir", type=Path, help="keep the two homes here and reuse them when present")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(json.loads(args.child))))
        return
    from rag.runtime import Runtime

    corpus = ensure_corpus(args.papers, WORKDIR)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="pc-ftscale-"))
    load0 = os.getloadavg()[0]
    try:
        plain, full = work / "abstracts", work / "fulltext"
        built_file = work / "built.json"
        if not built_file.is_file():
            t0 = time.perf_counter()
            rt = Runtime(_settings(plain))
            added_papers = rt.ingestor(progress=False).ingest([corpus]).added
            rt.export_encoder()
            rt.close()
            ingest_s = time.perf_counter() - t0
            shutil.rmtree(full, ignore_errors=True)
            shutil.copytree(plain, full)
            built = add_full_text(full, corpus, args.pages) | {"papers": added_papers, "ingest_s": ingest_s}
            built |= {f"add_{k}": v for k, v in add_one(full).items()}
            built_file.write_text(json.dumps(built))
        built = json.loads(built_file.read_text())
        qs = questions(corpus, int(built["papers"]), args.questions + 5 + args.first + 20, seed=1)
        res = measure({"abstracts only": plain, "full text": full}, qs, rounds=4, first=args.first)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    body = render(args, built, res, load0)
    print(body)
    if not args.no_write:
        update_section("fulltext-scale" if args.papers == 1000 else f"fulltext-scale-{args.papers}", body)


def render(args: argparse.Namespace, built: dict[str, float], res: dict[str, dict[str, Any]], load0: float) -> str:
    def p(xs: list[float], q: float) -> float:
        return percentile(xs, q)

    a, f = res["abstracts only"], res["full text"]
    ratio = p(f["retrieve"], 95) / p(a["retrieve"], 95)
    loads = a["loads"] + f["loads"]
    body = (f"Measured on {machine()} with `python -m bench.fulltext_scale --papers {args.papers} --pages "
            f"{args.pages}` (load average {load0:.1f} at the start, {min(loads):.1f}–{max(loads):.1f} in the "
            f"timed processes).\n\n"
            f"{built['papers']:,.0f} synthetic papers (abstracts ingested in {built['ingest_s']:.0f} s); the full-text "
            f"home adds "
            f"{built['passages']:,.0f} passages ({args.pages} pages × {PASSAGES_PER_PAGE} per paper). The passage "
            f"BM25 was built once by the ingest hook in {built['index_s']:.1f} s (its saved file: "
            f"{built['size_mb']:.0f} MB); adding one more paper with 40 passages updated it by increments "
            f"in {built['add_update_s']:.2f} s (rebuilds: {built['add_built']:.0f}, updates: "
            f"{built['add_updated']:.0f}).\n\n"
            "| home | retrieval p50 / p95 ms | first question's answer p50 / p95 ms (fresh process each) "
            "| peak RSS MB: retrieval process / first-question process |\n"
            "|---|--:|--:|--:|\n")
    for name, r in res.items():
        body += (f"| {name} | {p(r['retrieve'], 50):.0f} / {p(r['retrieve'], 95):.0f} | "
                 f"{p(r['first'], 50):.0f} / {p(r['first'], 95):.0f} | "
                 f"{max(r['rss_retrieve']):.0f} / {max(r['rss_first']):.0f} |\n")
    body += (f"\nRetrieval p95 full text ÷ abstracts only: **{ratio:.2f}** (target ≤ 2); first question's answer "
             f"p95 with full text: **{p(f['first'], 95):.0f} ms** (target ≤ 1,000). {len(a['retrieve'])} "
             f"retrievals and {len(a['first'])} first questions per home.\n")
    return body


if __name__ == "__main__":
    main()
