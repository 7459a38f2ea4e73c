"""The eval subcommands of `paperchat` (registered by rag.cli)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rag.answer import AnswerMode
from rag.config import Settings


def register(sub: Any, commands: dict[str, Any]) -> None:
    er = sub.add_parser("eval-retrieval", help="nDCG@10 / Recall@100 / MRR@10 on a BEIR-layout dataset, "
                                               "paperchat vs BM25, dense and a naive LangChain baseline")
    er.add_argument("dataset", type=Path, help="folder with corpus.jsonl, queries.jsonl, qrels/test.tsv")
    er.add_argument("--systems", nargs="*", default=["paperchat", "bm25", "dense", "naive_langchain"],
                    help="which systems to run (default: all four)")
    er.add_argument("--limit", type=int, help="only the first N judged queries")
    er.add_argument("--json", action="store_true", help="print one JSON object")
    commands["eval-retrieval"] = cmd_eval_retrieval

    ev = sub.add_parser("eval", help="answer-quality eval of a question set: Markdown, HTML and JSON reports")
    ev.add_argument("set", nargs="?", type=Path, help="JSONL question set (default: the bundled seed set)")
    ev.add_argument("--out", type=Path, help="report folder (default: eval-reports/<set>-<mode>-<time>)")
    ev.add_argument("--mode", choices=["extractive", "llm"], help="answer mode (default: llm when configured)")
    ev.add_argument("-k", type=int, help="papers per answer (default: retrieval.k)")
    ev.add_argument("--corpus", nargs="+", metavar="PATH",
                    help="ingest these (files, folders, globs, @sample) into a throwaway store and evaluate "
                         "there, instead of the set's own corpus (its <set>.corpus file; the bundled sample "
                         "for the seed set); a set with neither runs on your store")
    ev.add_argument("--distractors", nargs="+", metavar="PATH",
                    help="also ingest these (files, folders, globs, @sample) into the throwaway store beside "
                         "the set's corpus: papers on neighbouring topics that should not be cited")
    ev.add_argument("--collection", metavar="NAME",
                    help="ask every question within this collection; with a throwaway store, the set's own corpus "
                         "is ingested into it (the distractors are not), so scoping is what keeps them out")
    ev.add_argument("--current-store", action="store_true", help="run on your store even for the seed set")
    ev.add_argument("--judge", action="store_true", help="add LLM-judged metrics (needs evals.judge_base_url)")
    ev.add_argument("--check", nargs="?", const="default", metavar="THRESHOLDS",
                    help="fail (exit 1) when a figure is below its threshold (default: the bundled "
                         "evals/thresholds.toml)")
    ev.add_argument("--limit", type=int, help="only the first N cases")
    ev.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"),
                    help="instead of running: what got better and worse from report A to report B")
    ev.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    commands["eval"] = cmd_eval

    ex = sub.add_parser("export-feedback", help="thumbs-down votes from the chat UI → a new eval set (JSONL)")
    ex.add_argument("--out", type=Path, default=Path("feedback-set.jsonl"), help="the set to write")
    ex.add_argument("--votes", choices=["down", "up", "all"], default="down", help="which votes to export")
    ex.add_argument("--force", action="store_true", help="replace --out if it exists")
    commands["export-feedback"] = cmd_export_feedback


SYSTEM_OPTIONS: dict[str, dict[str, Any]] = {
    "paperchat": {}, "bm25": {"mode": "bm25"}, "dense": {"mode": "dense"}, "naive_langchain": {},
}


def cmd_eval_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    from evals.beir import evaluate
    from rag.config import prepare_runtime
    from rag.errors import InputError

    unknown = [s for s in args.systems if s not in SYSTEM_OPTIONS]
    if unknown:
        raise InputError(f"unknown system(s) {unknown}; choose from {sorted(SYSTEM_OPTIONS)}")
    prepare_runtime(settings)
    out = evaluate(args.dataset, settings, {s: SYSTEM_OPTIONS[s] for s in args.systems}, limit=args.limit)
    if args.json:
        sys.stdout.write(json.dumps({"dataset": out["dataset"], "results": {
            name: {k: r[k] for k in ("ndcg@10", "recall@100", "mrr@10")} for name, r in out["results"].items()},
            "queries": out["queries"]}) + "\n")
        return 0
    print(f"{out['dataset']}: {out['queries']} judged queries (ingest {out['ingest_s']} s)")
    print(f"{'system':>16}  {'nDCG@10':>8}  {'R@100':>7}  {'MRR@10':>7}  {'ms/query':>8}")
    for name, r in out["results"].items():
        print(f"{name:>16}  {r['ndcg@10']:8.4f}  {r['recall@100']:7.4f}  {r['mrr@10']:7.4f}  {r['mean_ms']:8.1f}")
    return 0


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    import time
    from datetime import UTC, datetime

    from evals.gate import THRESHOLDS, check, load_thresholds
    from evals.report import write_report
    from evals.sets import SEED, load_set

    if args.compare:
        return _compare(args)

    from rag.qa.chain import resolve_mode

    set_path = args.set or SEED
    cases = load_set(set_path)[: args.limit or None]
    thresholds = load_thresholds(THRESHOLDS if args.check == "default" else Path(args.check)) if args.check else None
    mode = resolve_mode(settings, args.mode)
    judge = _judge(settings) if args.judge else None
    corpus, distractors = _eval_corpus(args, set_path)
    stamp = datetime.now(UTC)
    out = args.out or Path("eval-reports") / f"{set_path.stem}-{mode}-{stamp:%Y%m%d-%H%M%S}"
    t0 = time.perf_counter()
    result = _evaluate(args, settings, cases, mode, judge, corpus, distractors)
    commit = _checkout_commit()
    result["meta"] = {
        "set": str(set_path), "set_name": set_path.stem, "mode": mode, "k": args.k or settings.retrieval.k,
        "cases": len(cases), "corpus": [str(p) for p in corpus] if corpus else "current store",
        "distractors": [str(p) for p in distractors], "collection": args.collection,
        "when": f"{stamp:%Y-%m-%d %H:%M} UTC", "seconds": round(time.perf_counter() - t0, 1), "commit": commit,
        "command": "paperchat " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["eval"] else "paperchat eval",
        "embeddings": settings.embeddings.model, "judge": settings.evals.judge_model if judge else None,
    }
    paths = write_report(result, out)
    failures = check(result, thresholds) if thresholds else []
    return _print_outcome(args, result, paths, thresholds, failures)


def _compare(args: argparse.Namespace) -> int:
    """`paperchat eval --compare A B`: what got better and worse from report A to report B."""
    from evals.compare import compare, to_markdown
    from evals.report import load_report

    a, b = (load_report(p) for p in args.compare)
    for rep, p in ((a, args.compare[0]), (b, args.compare[1])):
        rep["meta"]["label"] = str(p)
    result = compare(a, b)
    if args.json:
        sys.stdout.write(json.dumps({k: v for k, v in result.items() if not k.startswith("rows_")}) + "\n")
    else:
        sys.stdout.write(to_markdown(result))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "compare.md").write_text(to_markdown(result), encoding="utf-8")
    return 0


def _judge(settings: Settings) -> Any:
    """The LLM judge of `--judge`, refused without an endpoint."""
    from evals.judge import Judge
    from rag.errors import InputError

    if not settings.evals.judge_base_url:
        raise InputError("--judge needs a judge endpoint: set evals.judge_base_url "
                         "(PAPERCHAT_EVALS__JUDGE_BASE_URL) and evals.judge_model")
    return Judge(settings)


def _eval_corpus(args: argparse.Namespace, set_path: Path) -> tuple[list[Path] | None, list[Path]]:
    """The files of the throwaway store (None: run on the user's store) and which of them are distractors:
    --corpus, else the set's own corpus file (the bundled sample for the seed set), plus --distractors."""
    from evals.sets import SEED, expand_corpus, set_corpus
    from rag.errors import InputError
    from rag.resources import sample_corpus

    corpus: list[Path] | None = expand_corpus(args.corpus) if args.corpus else None
    if corpus is None and not args.current_store:
        corpus = set_corpus(set_path)
        if corpus is None and set_path.resolve() == SEED.resolve():
            corpus = sample_corpus()
    distractors = expand_corpus(args.distractors) if args.distractors else []
    if distractors:
        if not corpus:
            raise InputError("--distractors adds papers beside the set's own corpus in a throwaway store, and "
                             f"{set_path.name} names none: pass --corpus PATH… as well (or write "
                             f"{set_path.with_suffix('.corpus').name} beside the set)")
        corpus = corpus + [d for d in distractors if d not in corpus]
    return corpus, distractors


def _evaluate(args: argparse.Namespace, settings: Settings, cases: Any, mode: AnswerMode, judge: Any,
              corpus: list[Path] | None, distractors: list[Path]) -> dict[str, Any]:
    """Run the cases on a throwaway store holding ``corpus`` (the set's own papers in --collection), or on the
    user's store when there is no corpus."""
    from rag.errors import EmptyLibrary, InputError
    from rag.runtime import Runtime

    if corpus:
        from evals.throwaway import throwaway_runtime

        with throwaway_runtime(settings) as rt:
            own = [p for p in corpus if p not in distractors]
            ingested = rt.ingestor().ingest(own, collection=args.collection)
            if distractors:
                rt.ingestor().ingest([d for d in corpus if d in distractors])
            if rt.store.count_chunks() == 0:  # the throwaway store, not the user's library: say what went wrong
                why = "; ".join(ingested.file_errors[:3]) or f"{ingested.skipped} record(s) skipped"
                raise InputError(f"the eval corpus gave no paper to evaluate on ({why})")
            return _run(rt, cases, mode, args.k, judge, args.collection)
    rt = Runtime(settings)
    try:
        if rt.store.count_chunks() == 0:
            raise EmptyLibrary(f"{EmptyLibrary()}, or pass --corpus FILE… to evaluate on a throwaway "
                               "store")
        if args.collection:
            rt.collections().members(args.collection)  # an unknown name fails before the first case
        return _run(rt, cases, mode, args.k, judge, args.collection)
    finally:
        rt.close()


def _print_outcome(args: argparse.Namespace, result: dict[str, Any], paths: dict[str, Path], thresholds: Any,
                   failures: list[str]) -> int:
    """The summary (JSON or a table), the gate's verdict; 1 when the gate failed."""
    import logging

    from evals.report import headline, split_table

    if args.json:
        sys.stdout.write(json.dumps({"summary": result["summary"], "splits": result.get("splits"),
                                     "meta": result["meta"],
                                     "reports": {k: str(v) for k, v in paths.items()},
                                     "gate": None if thresholds is None else {"passed": not failures,
                                                                              "failures": failures}}) + "\n")
    else:
        for name, value in headline(result):
            print(f"{name:>34}: {value}")
        table = split_table(result)
        if table:
            cols, rows = table
            print(f"{'by split':>34}: " + "".join(f"{c:>16}" for c in cols))
            for name, *values in rows:
                print(f"{name:>34}: " + "".join(f"{v:>16}" for v in values))
        print(f"reports: {paths['html']} · {paths['md']} · {paths['json']}")
    if failures:
        logging.getLogger("paperchat").error("eval gate failed (%d):\n%s", len(failures), "\n".join(failures))
        print("eval gate FAILED:\n" + "\n".join(failures), file=sys.stderr)
        return 1
    if thresholds is not None and not args.json:
        print("eval gate passed")
    return 0


def _checkout_commit() -> str | None:
    """The commit of the git checkout paperchat runs from, or None for an installed package: a virtualenv
    inside some other repository must not lend that repository's commit to the report."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=root, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.split()
    if out.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != root:
        return None
    return lines[1]


def _run(rt: Any, cases: Any, mode: AnswerMode, k: int | None, judge: Any,
         collection: str | None = None) -> dict[str, Any]:
    from evals.run import run_eval
    from rag.index.paper_query import PaperQuery
    from rag.qa.chain import AnswerChain

    scope = PaperQuery(collection=collection) if collection else None
    return run_eval(AnswerChain(rt), cases, mode=mode, k=k, judge=judge, filters=scope)


def cmd_export_feedback(args: argparse.Namespace, settings: Settings) -> int:
    from evals.feedback import export_feedback

    counts = export_feedback(settings.home / "feedback.jsonl", args.out, votes=args.votes, force=args.force)
    print(f"{counts['cases']} case(s) from {counts['votes']} vote(s) → {args.out}"
          + (f" ({counts['skipped']} unreadable line(s) skipped)" if counts["skipped"] else ""))
    print(f"add gold rules to the needs_review cases, then: paperchat eval {args.out}")
    return 0
