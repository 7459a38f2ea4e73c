"""Run the seed question set (evals/sets/seed.jsonl) through the answer chain and score it by type.

Gold rules are resolved against the stored papers (see evals/sets/README.md). Scores: single → gold
cited first; multi → every gold paper cited; out-of-corpus → the cannot-answer reply with no
citations; follow-up → gold retrieved (and cited first) in the last turn; author/category → gold
recall among citations; plus fact recall (facts found verbatim in the answer).

    python -m evals.seed_run [--mode extractive] [--json]      # over $PAPERCHAT_HOME's store
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path
from typing import Any

from rag.answer import Answer
from rag.chain import AnswerChain, Conversation
from rag.prompts import CANNOT_ANSWER
from rag.runtime import Runtime
from rag.text import plain_text

log = logging.getLogger(__name__)

SEED = Path(__file__).resolve().parent / "sets" / "seed.jsonl"


def load_cases(path: Path = SEED) -> list[dict[str, Any]]:
    """The cases of a JSONL set, in file order."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _name(s: str) -> str:
    s = unicodedata.normalize("NFKD", s)
    return " ".join("".join(c for c in s if not unicodedata.combining(c)).casefold().split())


def _prefix_text(s: str) -> str:
    return " ".join(plain_text(s).replace("*", "").split()).casefold()


def rule_matches(rule: dict[str, str], paper: dict[str, Any]) -> bool:
    """One gold rule against one stored paper (metadata row): every key it gives must match."""
    if "id" in rule and paper.get("paper_id", paper.get("id")) != rule["id"]:
        return False
    if "author" in rule and _name(rule["author"]) not in {_name(a) for a in paper.get("authors") or []}:
        return False
    if "abstract_prefix" in rule and not _prefix_text(paper.get("abstract") or "").startswith(
            _prefix_text(rule["abstract_prefix"])):
        return False
    return not ("title_contains" in rule and rule["title_contains"] not in (paper.get("title") or ""))


def resolve_gold(rules: list[dict[str, str]], papers: list[dict[str, Any]]) -> list[str | None]:
    """Paper id per rule (None when no stored paper, or more than one, matches)."""
    out: list[str | None] = []
    for rule in rules:
        found = [p.get("paper_id", p.get("id")) for p in papers if rule_matches(rule, p)]
        out.append(found[0] if len(found) == 1 else None)
    return out


def score_case(case: dict[str, Any], gold: list[str | None], answer: Answer) -> dict[str, Any]:
    """The row for one case: what was cited/retrieved and whether the case passed."""
    kind = case["type"]
    cited = answer.cited_ids
    retrieved = [r["paper_id"] for r in answer.retrieved]
    found = [g for g in gold if g and g in cited]
    row: dict[str, Any] = {"id": case["id"], "type": kind, "answerable": answer.answerable,
                           "cited": cited, "gold": gold, "ms": round(answer.timings.get("total_ms", 0.0), 1)}
    if kind == "out-of-corpus":
        row["ok"] = (not answer.answerable) and answer.answer == CANNOT_ANSWER and not cited
    elif kind == "single":
        row["ok"] = bool(cited) and cited[0] == gold[0]
    elif kind == "multi":
        row["ok"] = all(g in cited for g in gold)
    elif kind == "follow-up":
        row["ok"] = gold[0] in retrieved
        row["cited_first"] = bool(cited) and cited[0] == gold[0]
    else:  # author, category
        row["recall"] = len(found) / len(gold) if gold else 0.0
        row["ok"] = row["recall"] == 1.0
    if case.get("facts"):
        row["facts"] = sum(f in answer.answer for f in case["facts"]) / len(case["facts"])
    if not row["ok"]:
        row["answer"] = answer.answer[:300]
        row["standalone"] = answer.standalone_question
    return row


def run_seed(runtime: Runtime, path: Path = SEED, chain: AnswerChain | None = None,
             mode: str = "extractive") -> dict[str, Any]:
    """Every case through the chain; per-type rates and per-case rows."""
    chain = chain or AnswerChain(runtime)
    papers = runtime.store.papers()
    rows = []
    for case in load_cases(path):
        gold = resolve_gold(case.get("gold") or [], papers)
        if case["type"] == "follow-up":
            conv = Conversation(chain, mode=mode)  # type: ignore[arg-type]
            for turn in case["turns"]:
                answer = conv.ask(turn)
        else:
            answer = chain.ask(case["question"], mode=mode)  # type: ignore[arg-type]
        row = score_case(case, gold, answer)
        if any(g is None for g in gold):
            row["unresolved_gold"] = True
        rows.append(row)
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_type[r["type"]].append(r)
    rates = {kind: round(sum(r["ok"] for r in rs) / len(rs), 4) for kind, rs in by_type.items()}
    facts = [r["facts"] for r in rows if "facts" in r]
    extra = {
        "follow-up_cited_first": _rate([r["cited_first"] for r in by_type.get("follow-up", [])]),
        "author_recall": _mean([r["recall"] for r in by_type.get("author", [])]),
        "category_recall": _mean([r["recall"] for r in by_type.get("category", [])]),
        "fact_recall": _mean(facts),
    }
    counts = {kind: len(rs) for kind, rs in by_type.items()}
    return {"cases": len(rows), "counts": counts, "rates": rates, **extra, "rows": rows}


def measure_latency(chain: AnswerChain, questions: list[str], n: int = 60, mode: str = "extractive",
                    fresh: bool = False) -> dict[str, Any]:
    """Warm in-process ``ask`` latency: one untimed pass over the questions, then ``n`` timed asks.

    ``fresh`` makes every timed question new text (a numbered variant), so its embedding is computed
    rather than found in a cache; papers' sentence vectors stay warm either way."""
    import time
    import uuid

    run = uuid.uuid4().hex[:6]  # variants never seen before, by any cache
    for q in questions:
        chain.ask(q, mode=mode)  # type: ignore[arg-type]
    times = []
    for i in range(n):
        q = questions[i % len(questions)]
        if fresh:
            q = f"{q.rstrip('?.')} (variant {run}-{i})?"
        t0 = time.perf_counter()
        chain.ask(q, mode=mode)  # type: ignore[arg-type]
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()

    def pct(p: float) -> float:
        return round(times[min(len(times) - 1, int(round(p / 100 * (len(times) - 1))))], 1)

    return {"n": n, "p50_ms": pct(50), "p95_ms": pct(95), "max_ms": round(times[-1], 1),
            "mean_ms": round(sum(times) / n, 1)}


def _rate(flags: list[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 4) if xs else 0.0


def main(argv: list[str] | None = None) -> int:
    from rag.config import get_settings

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--set", type=Path, default=SEED, help="JSONL question set")
    p.add_argument("--mode", default="extractive", choices=["extractive", "llm"])
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    p.add_argument("--latency", type=int, default=0, metavar="N",
                   help="instead, time N warm asks of the set's questions (after one untimed pass)")
    args = p.parse_args(argv)
    log.info("seed run: set=%s mode=%s", args.set, args.mode)
    rt = Runtime(get_settings())
    try:
        if args.latency:
            cases = load_cases(args.set)
            questions = [c.get("question") or c["turns"][0] for c in cases]
            chain = AnswerChain(rt)
            for fresh in (False, True):
                stats = measure_latency(chain, questions, args.latency, args.mode, fresh=fresh)
                print(json.dumps({"questions": "fresh" if fresh else "repeated", **stats}))
            return 0
        report = run_seed(rt, args.set, mode=args.mode)
    finally:
        rt.close()
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return 0
    for kind, rate in report["rates"].items():
        print(f"{kind:>14}: {rate:.1%} of {report['counts'][kind]}")
    for key in ("follow-up_cited_first", "author_recall", "category_recall", "fact_recall"):
        print(f"{key:>22}: {report[key]:.1%}")
    for r in report["rows"]:
        if not r["ok"]:
            text = " ".join(r.get("answer", "").split())[:200]
            print(f"FAIL {r['id']}: cited={r['cited']} gold={r['gold']}\n     q={r.get('standalone')!r}\n     {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
