"""Ingest with full text on the shared PDFs: pages/s and papers/s end to end (read, clean, cut, embed, write),
and the store size per paper, against the same PDFs ingested abstracts-only (issue 31 item 6).

    python -m bench.fulltext_ingest            # writes the "fulltext-ingest" section of docs/benchmarks.md
    python -m bench.fulltext_ingest --no-write

The good PDFs of ``../shared/pdfs`` (MANIFEST.tsv: every file not named ``bad-``) are ingested into a fresh
home each time, with the bundled local embedder loaded once before the clock starts; the store size is the
store folder on disk after the run (Chroma's SQLite and HNSW files).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import machine, update_section
from tests.support.data import PDFS


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# Questions only a paper's body answers (file name prefix, pages where the answer is), for the check that faster
# passages still find the right page: the paper in the top 3 with a passage spanning one of those pages.
BODY_QUESTIONS = (
    ("How many warmup steps does the Transformer's learning rate schedule use?", "arxiv-1706.03762", {7}),
    ("What value of label smoothing was used when training the Transformer?", "arxiv-1706.03762", {8}),
    ("On which GPUs and for how many hours was the big Transformer model trained?", "arxiv-1706.03762", {7}),
    ("What weight decay and mini-batch size train the residual networks on ImageNet?", "arxiv-1512.03385", {4}),
    ("How deep is the deepest residual network trained on CIFAR-10, and does it overfit?", "arxiv-1512.03385",
     {7, 8}),
    ("How many hidden units does fastText use for sentiment classification?", "arxiv-1607.01759", {3}),
    ("How many CPU threads were used to train fastText?", "arxiv-1607.01759", {3}),
    ("How is the Huffman tree built for hierarchical softmax in word2vec?", "arxiv-1411.2738", {11}),
    ("Which Markov chain Monte Carlo scheme samples the random permutations?", "journal-pre-2019", {2}),
    ("Which benchmark suite measures the speedup of TraceMonkey?", "acm-pldi-2009", {10, 11, 12, 13}),
    ("On which corpora, Brown and AP News, was the neural language model evaluated?", "journal-jmlr-2003",
     {11, 12, 13}),
    ("Which linear programming solver, CPLEX, was used for the random satisfiability instances?",
     "journal-plosone-2019", {5, 7}),
    ("Which cluster algorithm (Wolff) simulates the Ising ferromagnet on proximity graphs?", "journal-scirep-2017",
     {3}),
)


def body_hits(rt: object) -> tuple[int, list[str]]:
    """How many ``BODY_QUESTIONS`` find their paper in the top 3 with a passage on one of the right pages, and
    the questions missed."""
    retriever = rt.retriever()  # type: ignore[attr-defined]
    found, missed = 0, []
    for question, prefix, pages in BODY_QUESTIONS:
        hits = retriever.search(question, k=3).hits
        ok = any(Path((h.paper.origin or "").rsplit(":", 1)[0]).name.startswith(prefix) and any(
            pages & set(range(p.ref.page_start, p.ref.page_end + 1)) for p in h.passages) for h in hits)
        found += ok
        if not ok:
            missed.append(question)
    return found, missed


def run(full_text: bool, files: list[Path], embedder: object) -> dict[str, float]:
    from rag.config import get_settings
    from rag.runtime import Runtime

    home = Path(tempfile.mkdtemp(prefix="pc-fulltext-"))
    try:
        rt = Runtime(get_settings(home=home, ingest={"full_text": full_text}), _embedder=embedder)
        rt.export_encoder()  # once per home (~5-9 s idle), before the clock as model loading is (bench.ingest_ratio)
        t0 = time.perf_counter()
        report = rt.ingestor(progress=False).ingest(files)
        seconds = time.perf_counter() - t0
        chunks = rt.store.count_chunks()
        found, missed = body_hits(rt) if full_text else (0, [])
        rt.close()
        for q in missed:
            print("body question missed:", q)
        return {"seconds": seconds, "papers": report.added, "chunks": chunks, "passages": report.embedded_passages,
                "bytes": _size(rt.settings.store_path), "body_found": found}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    import pypdfium2 as pdfium

    from rag.config import Settings, prepare_runtime
    from rag.index.embeddings import SentenceTransformerEmbedder

    files = sorted(p for p in PDFS.glob("*.pdf") if not p.name.startswith("bad-"))
    pages = 0
    for f in files:
        doc = pdfium.PdfDocument(str(f))
        pages += len(doc)
        doc.close()
    settings = Settings()
    prepare_runtime(settings)
    embedder = SentenceTransformerEmbedder(settings.embeddings)
    embedder.embed(["warm up"])
    load = os.getloadavg()[0]
    from rag.ingest import loaders
    from rag.ingest.passages import embedding_text

    t0 = time.perf_counter()  # the reading alone: parse, clean, describe, cut into passages
    read = [p for f in files for p in loaders.load(f, passage_tokens=200).papers]
    t_read = time.perf_counter() - t0
    texts = [embedding_text(p, x) for p in read for x in p.passages]  # type: ignore[arg-type]
    t0 = time.perf_counter()
    embedder.embed(texts)  # type: ignore[attr-defined]
    t_embed = time.perf_counter() - t0
    plain = run(False, files, embedder)
    full = run(True, files, embedder)
    end = os.getloadavg()[0]
    body = (
        f"Measured on {machine()} with `python -m bench.fulltext_ingest` (the bundled all-MiniLM-L6-v2 on CPU, "
        f"loaded before the clock starts; a fresh store each run; the machine was shared with other jobs: load "
        f"average {load:.1f} at the start, {end:.1f} at the end).\n\n"
        f"The {len(files)} good PDFs of `../shared/pdfs` ({pages} pages):\n\n"
        "| ingest | papers | pages | vectors stored | s | pages/s | papers/s | store on disk | per paper |\n"
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
    for name, r in (("abstracts only", plain), ("full text (`--full-text`)", full)):
        body += (f"| {name} | {r['papers']:.0f} | {pages} | {r['chunks']:.0f} | {r['seconds']:.1f} | "
                 f"{pages / r['seconds']:.1f} | {r['papers'] / r['seconds']:.2f} | {r['bytes'] / 1e6:.1f} MB | "
                 f"{r['bytes'] / max(r['papers'], 1) / 1e3:.0f} kB |\n")
    extra = full["bytes"] - plain["bytes"]
    body += (f"\nFull text adds {full['passages']:.0f} passages ({full['passages'] / max(full['papers'], 1):.0f} per "
             f"paper, {full['passages'] / pages:.1f} per page) and {extra / 1e6:.1f} MB on disk "
             f"({extra / max(full['papers'], 1) / 1e3:.0f} kB per paper; an empty store's own files are most of the "
             "abstracts-only figure at this size).\n\n"
             f"Apart, in the same run: reading the {pages} pages (parse, clean, describe, cut) {t_read:.1f} s "
             f"({pages / t_read:.1f} pages/s); embedding the {len(texts)} passages alone {t_embed:.1f} s "
             f"({len(texts) / t_embed:.1f} passages/s). The rest of the full-text ingest is its abstracts, the "
             "store's writes and the lexical index.\n\n"
             f"Body-only questions (`BODY_QUESTIONS`, 13 facts of the shared PDFs found only in their bodies): "
             f"{full['body_found']:.0f} of {len(BODY_QUESTIONS)} find their paper in the top 3 with a passage on the "
             "right page.\n")
    print(body)
    if not args.no_write:
        update_section("fulltext-ingest", body)


if __name__ == "__main__":
    main()
