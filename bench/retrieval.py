"""Retrieval quality, the one entry point: systems side by side on every collection, plus the shipped answers.

    python -m bench.retrieval [--systems shipped bm25 dense rrf] [--add NAME=JSON] [--collections ...]
                              [--beir DIR ...] [--home DIR] [--out OUT] [--limit N]
    python -m bench.retrieval --docs [--nips-queries 300]      # = make bench-retrieval

Systems come from one catalogue (``SYSTEMS``: retrieval mode plus RetrievalSettings overrides, and
``naive_langchain``, LangChain's default splitter + Chroma similarity search with the same model, on BEIR
collections only); ``--add`` adds more, including a Retriever subclass under study
(``{"retriever": "module:Class"}``).

Collections, each ingested once into its own home under ``--home`` (default ``reports/quality-home``; a
re-run whose input files, embedding and ingest settings are unchanged reuses it):

- ``cranfield`` (../shared/datasets/cranfield) and ``nips-known-item`` (NeurIPS titles as queries against
  the untitled abstracts, bench/nips_known_item.py), BEIR layout: nDCG@10, Recall@100, MRR@10; ``--beir``
  adds any other BEIR-layout folder the same way;
- ``library``: the NeurIPS CSVs (the corpus ``evals/sets/neurips.corpus`` names) plus the bundled sample,
  1,214 papers. Two question sets run on it: ``seed`` (written on the sample: the NeurIPS papers are its
  distractors) and ``neurips`` (dev and test apart, never merged).

On the sets, per system, retrieval only, with the question the chain would retrieve for (its standalone
question and the filters the question names, taken from the shipped run; for a follow-up, the last turn as
condensed): single-paper questions give the share whose top-1 paper is gold and nDCG@10 of the gold
paper; multi-paper ones (``multi``, ``author``, ``category``, ``filter``) the recall of their gold papers
in the top k=5 (the answer's k); follow-ups the share whose top-1 is gold (in the JSON).

Answer-level figures come from the configured (shipped) pipeline only, in extractive mode, scored by
evals/run.py: single-paper answers citing the gold paper first and citing it alone, multi-paper answers
citing every gold paper, answerable questions refused, cannot-answer accuracy on out-of-corpus questions.

Writes ``OUT.md`` and ``OUT.json`` (default ``reports/quality_sweep``) and prints the markdown. ``--docs``
instead rewrites the "Retrieval quality" section of docs/benchmarks.md: the BEIR collections only, systems
shipped, bm25, dense, rrf and naive_langchain, each also timed at the app's k (mean and p95 ms/query). It
never looks at individual query ids, so nothing here tunes on the test split.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import CRANFIELD, REPORTS, machine, update_section
from bench.nips_known_item import build as build_known_item
from evals.beir import read_beir, retriever_for, score_systems
from evals.metrics import mean, ndcg_at_k, recall_at_k
from evals.run import run_eval
from evals.sets import SEED, SETS_DIR, load_set, set_corpus
from rag.config import Settings, get_settings, prepare_runtime
from rag.index.paper_query import PaperQuery
from rag.resources import sample_corpus
from rag.runtime import Runtime

log = logging.getLogger(__name__)

NEURIPS = SETS_DIR / "neurips.jsonl"
K = 5  # papers per answer (retrieval.k)

# A system: retrieval mode plus RetrievalSettings overrides. Each one that fuses names its feedback setting,
# so a change of the shipped defaults cannot silently turn "rrf" into something else.
SYSTEMS: dict[str, dict[str, Any]] = {
    "shipped": {},  # the configured settings: the shipped defaults unless PAPERCHAT_RETRIEVAL__* says otherwise
    "bm25": {"mode": "bm25"},
    "dense": {"mode": "dense"},
    # Plain equal-weight RRF, named in full: the shipped fusion is not RRF, and the anchor rule is not part of it.
    "rrf": {"fusion": "rrf", "anchor_df": 0, "feedback_docs": 0, "bm25_weight": 1.0, "dense_weight": 1.0},
    "naive_langchain": {},  # LangChain's splitter + Chroma similarity search (evals/naive.py); BEIR collections only
    "rrf_prf3_blend": {"fusion": "rrf", "anchor_df": 0, "feedback_docs": 3, "feedback_blend": True},  # until 2026-12
    "rrf_prf3_replace": {"fusion": "rrf", "anchor_df": 0, "feedback_docs": 3, "feedback_blend": False},
    "rrf_prf3_anchor": {"fusion": "rrf", "anchor_df": 3, "feedback_docs": 3, "feedback_blend": True},
    "rrf_b1.5": {"fusion": "rrf", "anchor_df": 0, "bm25_weight": 1.5, "feedback_docs": 0},
    "score": {"fusion": "score", "anchor_df": 0, "feedback_docs": 0},
    "score_anchor": {"fusion": "score", "anchor_df": 3, "feedback_docs": 0},
    "score_prf3_blend": {"fusion": "score", "anchor_df": 0, "feedback_docs": 3, "feedback_blend": True},
    "score_prf3_anchor": {"fusion": "score", "anchor_df": 3, "feedback_docs": 3, "feedback_blend": True},
    "score_prf3_anchor1": {"fusion": "score", "anchor_df": 1, "feedback_docs": 3, "feedback_blend": True},
    "score_prf3_anchor_b0.6": {"fusion": "score", "anchor_df": 3, "feedback_docs": 3, "feedback_blend": True,
                               "bm25_weight": 1.5},
    "score_prf3_anchor_b0.4": {"fusion": "score", "anchor_df": 3, "feedback_docs": 3, "feedback_blend": True,
                               "dense_weight": 1.5},
}
DEFAULT_SYSTEMS = ("shipped", "bm25", "dense", "rrf")
DOCS_SYSTEMS = ("shipped", "bm25", "dense", "rrf", "naive_langchain")
BEIR_ONLY = ("naive_langchain",)  # not a Retriever: it has no answer to the question sets
MULTI = ("multi", "author", "category", "filter")


# ---- reusable homes ---------------------------------------------------------------------------------
def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def collection_runtime(settings: Settings, home: Path, files: list[Path], embedder: Any) -> Runtime:
    """A runtime whose store holds exactly ``files``: reused when the inputs match what it was built from
    (file contents, embedding, chunking and ingest settings), else rebuilt from scratch."""
    inputs = {"files": [[str(f), _digest(f)] for f in files],
              "settings": {k: settings.model_dump(mode="json")[k] for k in ("embeddings", "chunking", "ingest")}}
    manifest = home / "inputs.json"
    reuse = manifest.is_file() and json.loads(manifest.read_text()) == inputs
    if not reuse and home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    s = settings.with_overrides(home=home, store={"mode": "embedded", "path": home / "chroma",
                                                  "chroma_collection": "bench"})
    rt = Runtime(s, _embedder=embedder)  # type: ignore[arg-type]
    if reuse:
        log.info("%s: reusing the store built from %d file(s)", home.name, len(files))
        return rt
    t0 = time.perf_counter()
    report = rt.ingestor().ingest(files)
    if report.file_errors:
        raise RuntimeError(f"{home.name}: ingest failed: {report.file_errors}")
    log.info("%s: ingested %s in %.0f s", home.name, report.summary(), time.perf_counter() - t0)
    manifest.write_text(json.dumps(inputs, indent=1))  # written last: an interrupted ingest is redone
    return rt


# ---- question sets ----------------------------------------------------------------------------------
def _groups(rows: list[dict[str, Any]], set_name: str) -> dict[str, list[dict[str, Any]]]:
    """Rows by reported collection: the set, or one entry per split."""
    splits = sorted({r.get("split") for r in rows if r.get("split")})
    if not splits:
        return {set_name: rows}
    return {f"{set_name}-{s}": [r for r in rows if r.get("split") == s] for s in splits}


def retrieval_figures(rt: Runtime, rows: list[dict[str, Any]], opts: dict[str, Any]) -> dict[str, Any]:
    """One system's retrieval figures over scored eval rows (their standalone question and filters)."""
    retriever = retriever_for(rt, opts)
    first, ndcg, multi, follow = [], [], [], []
    for r in rows:
        gold = [g for g in r["gold"] if g]
        if not r["answerable"] or not gold or len(gold) != len(r["gold"]):
            continue
        ranked = [h.paper_id for h in retriever.search(r["standalone"], k=10,
                                                       filters=PaperQuery(**r["filters"])).hits]
        if r["type"] == "single":
            first.append(float(bool(ranked) and ranked[0] == gold[0]))
            ndcg.append(ndcg_at_k(ranked, dict.fromkeys(gold, 1.0), 10))
        elif r["type"] in MULTI:
            multi.append(recall_at_k(ranked, gold, K))
        elif r["type"] == "follow-up":
            follow.append(float(bool(ranked) and ranked[0] == gold[0]))
    out: dict[str, Any] = {"n_single": len(first), "n_multi": len(multi), "n_follow_up": len(follow)}
    out["gold_first"] = round(mean(first), 4) if first else None
    out["ndcg@10"] = round(mean(ndcg), 4) if ndcg else None
    out[f"multi_recall@{K}"] = round(mean(multi), 4) if multi else None
    out["follow_up_first"] = round(mean(follow), 4) if follow else None
    return out


def answer_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The shipped answers' figures over scored rows (evals.run's verdicts and summary)."""
    from evals.run import summarise

    s = summarise(rows)
    ans = [r for r in rows if r["ok"] is not None and r["answerable"]]
    multi = [r for r in rows if r["ok"] is not None and r["type"] in MULTI]
    return {
        "single_cited_first": s["by_type"].get("single", {}).get("pass_rate"),
        "single_only_gold": s["answer"]["single_only_gold"],
        "multi_all_gold": round(mean([float(bool(r["ok"])) for r in multi]), 4) if multi else None,
        "answerable_refused": sum(bool(r["refused"]) for r in ans), "answerable": len(ans),
        "cannot_answer_accuracy": s["answer"]["cannot_answer_accuracy"],
        "pass_rate": s["pass_rate"], "cases": s["cases"],
    }


# ---- output --------------------------------------------------------------------------------------------
def _f(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:.1%}" if pct else f"{x:.3f}"


def to_markdown(result: dict[str, Any]) -> str:
    beir, sets = result["beir"], result["sets"]
    head = ["system"]
    for name in beir:
        head += [f"{name} nDCG@10", "R@100", "MRR@10"]
    for name in sets:
        head += [f"{name} gold@1", "nDCG@10", f"multi R@{K}"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for system in result["systems"]:
        cells = [system]
        for r in beir.values():
            x = r["results"][system]
            cells += [_f(x["ndcg@10"]), _f(x["recall@100"]), _f(x["mrr@10"])]
        for r in sets.values():
            x = r["retrieval"].get(system) or {}
            cells += [_f(x.get("gold_first")), _f(x.get("ndcg@10")), _f(x.get(f"multi_recall@{K}"))]
        lines.append("| " + " | ".join(cells) + " |")
    counts = "; ".join(f"{n}: {r['queries']} queries" for n, r in beir.items())
    counts += "".join(f"; {n}: {x['n_single']} single, {x['n_multi']} multi" for n, r in sets.items()
                      for x in [next(iter(r["retrieval"].values()))])
    lines += ["", f"Queries: {counts.lstrip('; ')}.", "",
              "Answers of the shipped pipeline (extractive):", "",
              "| collection | cited first (single) | only gold cited (single) | multi: every gold cited | "
              "answerable refused | cannot-answer accuracy | pass rate |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in sets.items():
        a = r["answers"]
        lines.append(f"| {name} | {_f(a['single_cited_first'], True)} | {_f(a['single_only_gold'], True)} | "
                     f"{_f(a['multi_all_gold'], True)} | {a['answerable_refused']} of {a['answerable']} | "
                     f"{_f(a['cannot_answer_accuracy'], True)} | {_f(a['pass_rate'], True)} |")
    m = result["meta"]
    lines += ["", f"`{m['command']}` · {m['machine']} · {m['seconds']:.0f} s wall"]
    return "\n".join(lines) + "\n"


# ---- the run ---------------------------------------------------------------------------------------
def sweep(settings: Settings, systems: dict[str, dict[str, Any]], home: Path, limit: int | None = None,
          collections: tuple[str, ...] = ("cranfield", "nips-known-item", "library"), beir_dirs: tuple[Path, ...] = (),
          timing_k: int | None = None, nips_queries: int = 300) -> dict[str, Any]:
    """Every system on every collection (named ones, then the ``beir_dirs``). ``timing_k``: the BEIR systems
    are also timed at that k, each through its own empty embedding cache (``mean_ms``, ``p95_ms``)."""
    embedder = Runtime(settings).embedder  # the user's model and embedding cache, shared by every home
    beir: dict[str, Any] = {}
    sets: dict[str, Any] = {}
    named = {"cranfield": CRANFIELD, "nips-known-item": None}
    for name in [*collections, *map(str, beir_dirs)]:
        if name != "library":
            root = (Path(name) if name not in named
                    else named[name] or build_known_item(home / "nips-known-item-beir", nips_queries))
            data = read_beir(root)
            if limit:
                data.queries = dict(list(data.queries.items())[:limit])
            key = name if name in named else root.name
            rt = collection_runtime(settings, home / key, [root / "corpus.jsonl"], embedder)
            try:
                beir[key] = {"queries": len(data.queries),
                             "results": score_systems(rt, root, data, systems, timing_k=timing_k)}
            finally:
                rt.close()
            continue
        corpus = set_corpus(NEURIPS) or []
        rt = collection_runtime(settings, home / name, corpus + [p for p in sample_corpus() if p not in corpus],
                                embedder)
        try:
            from rag.qa.chain import AnswerChain

            chain = AnswerChain(rt)
            for set_path in (SEED, NEURIPS):
                cases = load_set(set_path)[: limit or None]
                t0 = time.perf_counter()
                rows = run_eval(chain, cases, mode="extractive", progress=False)["rows"]
                log.info("%s: %d cases answered in %.0f s", set_path.stem, len(rows), time.perf_counter() - t0)
                for group, grows in _groups(rows, set_path.stem).items():
                    sets[group] = {"answers": answer_figures(grows),
                                   "retrieval": {s: retrieval_figures(rt, grows, o) for s, o in systems.items()
                                                 if s not in BEIR_ONLY}}
        finally:
            rt.close()
    return {"systems": list(systems), "beir": beir, "sets": sets}


def parse_added(items: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"--add wants NAME=JSON, got {item!r}")
        opts = json.loads(spec)
        if not isinstance(opts, dict):
            raise SystemExit(f"--add {name}: the JSON must be an object of retrieval settings (and mode)")
        out[name] = opts
    return out


def docs_section(result: dict[str, Any], settings: Settings, nips_queries: int, load_before: str) -> str:
    """The "Retrieval quality" section of docs/benchmarks.md from a timed run on the BEIR collections."""
    r = settings.retrieval
    tables = []
    for name, out in result["beir"].items():
        rows = [f"| {s} | {x['ndcg@10']:.4f} | {x['recall@100']:.4f} | {x['mrr@10']:.4f} "
                f"| {x['mean_ms']:.0f} | {x['p95_ms']:.0f} |" for s, x in out["results"].items()]
        tables.append(f"**{name}** ({out['queries']} judged queries)\n\n"
                      f"| system | nDCG@10 | Recall@100 | MRR@10 | ms/query at k={r.k} "
                      "(mean) | p95 |\n|---|---:|---:|---:|---:|---:|\n" + "\n".join(rows))
    fusion = (f"weighted RRF (k={r.rrf_k}, BM25 weight {r.bm25_weight}, dense weight {r.dense_weight})"
              if r.fusion == "rrf" else f"score fusion (min-max normalised scores, BM25 weight {r.bm25_weight}, "
              f"dense weight {r.dense_weight})")
    return f"""## Retrieval quality

`make bench-retrieval` (= `python -m bench.retrieval --docs`), {machine()}; load average before the run:
{load_before}. The same numbers for one dataset: `paperchat eval-retrieval ../shared/datasets/cranfield`.

Quality and time come from two passes per system (`evals/beir.py`). nDCG@10, Recall@100 and MRR@10: one
pass retrieving 100 papers per query. ms/query: a separate pass over the same queries at the app's
k = {r.k} (`retrieval.k`), each system with its own empty embedding cache, so every query is embedded
afresh (as a user's new question is) and no system reuses query vectors another system's pass cached;
models are loaded and indexes open before either pass. The collections' tables are the ones the shipped
settings were chosen on (tuned, not held out).

Shipped pipeline (`shipped`): BM25 (Snowball stemming, title ×2) and all-MiniLM-L6-v2 over
sentence-window chunks (best chunk per paper), {fusion}, a named identifier found in at most {r.anchor_df}
papers putting them first, one round of pseudo-relevance feedback from the top
{r.feedback_docs} papers (RM3-style terms for BM25, Rocchio {r.feedback_dense} for the dense query).
`rrf` is equal-weight RRF without feedback; `naive_langchain` is LangChain's default
`RecursiveCharacterTextSplitter` + `langchain_chroma.Chroma` similarity search with the same
embedding model. The NeurIPS set is built by `bench/nips_known_item.py` ({nips_queries} titles
as queries against the 1,174 abstracts with titles removed).

""" + "\n\n".join(tables)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", nargs="+", help="from: " + ", ".join(SYSTEMS) + " (default: "
                    + " ".join(DEFAULT_SYSTEMS) + "; with --docs " + " ".join(DOCS_SYSTEMS) + ")")
    ap.add_argument("--add", nargs="+", default=[], metavar="NAME=JSON",
                    help='more systems, e.g. \'rrf_k10={"rrf_k": 10, "feedback_docs": 0}\'')
    ap.add_argument("--collections", nargs="*", choices=["cranfield", "nips-known-item", "library"],
                    help="default: all three; with --docs cranfield nips-known-item")
    ap.add_argument("--beir", nargs="+", type=Path, default=[], metavar="DIR", help="more BEIR-layout collections")
    ap.add_argument("--home", type=Path, default=REPORTS / "quality-home",
                    help="where the collections' stores are kept between runs")
    ap.add_argument("--out", type=Path, default=REPORTS / "quality_sweep", help="writes OUT.md and OUT.json")
    ap.add_argument("--limit", type=int, help="only the first N queries / cases of each collection (smoke runs)")
    ap.add_argument("--docs", action="store_true",
                    help="rewrite the Retrieval quality section of docs/benchmarks.md (timed, BEIR collections)")
    ap.add_argument("--nips-queries", type=int, default=300, help="titles asked in nips-known-item (default 300)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    for noisy in ("httpx", "chromadb", "sentence_transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    names = args.systems or list(DOCS_SYSTEMS if args.docs else DEFAULT_SYSTEMS)
    unknown = [s for s in names if s not in SYSTEMS]
    if unknown:
        raise SystemExit(f"unknown system(s) {unknown}; choose from {', '.join(SYSTEMS)} or use --add")
    systems = {s: SYSTEMS[s] for s in names} | parse_added(args.add)
    collections = args.collections if args.collections is not None else (
        ["cranfield", "nips-known-item"] if args.docs else ["cranfield", "nips-known-item", "library"])
    load_before = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    settings = get_settings()
    prepare_runtime(settings)
    t0 = time.perf_counter()
    result = sweep(settings, systems, args.home, args.limit, tuple(collections), tuple(args.beir),
                   timing_k=settings.retrieval.k if args.docs else None, nips_queries=args.nips_queries)
    result["meta"] = {"command": "python -m bench.retrieval " + " ".join(sys.argv[1:] if argv is None else argv),
                      "machine": machine(), "seconds": round(time.perf_counter() - t0, 1), "systems": systems,
                      "retrieval_settings": settings.retrieval.model_dump(), "limit": args.limit}
    if args.docs:
        body = docs_section(result, settings, args.nips_queries, load_before)
        print(body)
        print(f"wrote {update_section('retrieval', body)}")
        return
    md = to_markdown(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    args.out.with_suffix(".md").write_text(md)
    print(md)
    print(f"wrote {args.out.with_suffix('.md')} and .json")


if __name__ == "__main__":
    main()
