"""Run a question set through the answer chain and score every case (deterministic metrics first).

Per case: retrieval (recall@k, MRR@10, nDCG@10 of the gold papers among the retrieved ones), citations
(validity: citations that point at a retrieved paper, counting those the verifier had to remove;
precision and recall against gold, ALCE-style; support rate from the
chain's verifier: the share of citations no statement contradicts), statements (each cited statement's verdict,
read from ``Answer.statements``: the count and share supported, contradicted and not in the cited abstract, as the
rules or the LLM judge gave them), answer (fact recall,
cannot-answer on out-of-corpus questions, follow-up success,
single-paper answers that cite the gold paper alone, the refusal floor under filters), latency per stage,
and, when a judge is configured, LLM-judged faithfulness, relevance and citation support. Summaries are
given over the whole set and, when its cases carry a ``split`` (dev / test), for each split apart.
Pass/fail by type:

- single: the gold paper is cited first;  multi / author / category / filter: every gold paper is cited;
- follow-up: the gold paper is retrieved for the last turn;  out-of-corpus, and any case marked
  ``answerable: false`` (e.g. a filtered question the filtered papers do not answer): the cannot-answer
  reply, no citations;  any answerable case that gets the cannot-answer reply fails. An out-of-corpus case
  whose ``answered_by`` papers the store holds (distractors that happen to answer it) is scored as a
  single-paper question with them as gold; its row keeps ``labelled_as``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from tqdm import tqdm

from evals.judge import Judge
from evals.metrics import citation_precision_recall, mean, mrr_at_k, ndcg_at_k, percentile, recall_at_k
from evals.sets import Case, in_store, resolve_gold
from rag.answer import Answer, AnswerMode
from rag.index.paper_query import PaperQuery
from rag.qa.chain import AnswerChain, Conversation
from rag.qa.findings import VERDICTS
from rag.qa.prompts import CANNOT_ANSWER

log = logging.getLogger(__name__)

FILTERED_TYPES = ("author", "category", "filter")  # case types whose question restricts the papers
SUMMARY_METRICS = ("recall@k", "mrr@10", "ndcg@10", "citation_validity", "citation_precision", "citation_recall",
                   "support_rate", "statement_supported_rate", "statement_contradicted_rate",
                   "statement_not_in_source_rate", "fact_recall")


def case_metrics(case: Case, gold: list[str | None], answer: Answer) -> dict[str, float]:
    """The deterministic per-case numbers (gold-based ones only when gold resolved)."""
    cited = answer.cited_ids
    retrieved = [r["paper_id"] for r in answer.retrieved]
    m: dict[str, float] = {}
    removed = answer.removed_citations  # the verifier's count of markers that named no retrieved paper
    if answer.citations or removed:
        m["citation_validity"] = sum(c in set(retrieved) for c in cited) / (len(cited) + removed)
    if answer.citations:
        m["support_rate"] = sum(c.supported for c in answer.citations) / len(answer.citations)
    if answer.statements:  # each cited statement's verdict (the rules' or the LLM judge's), from its field
        for v in VERDICTS:
            m[f"statements_{v}"] = sum(s.verdict == v for s in answer.statements)
            m[f"statement_{v}_rate"] = m[f"statements_{v}"] / len(answer.statements)
    known = [g for g in gold if g]
    if known and case.answerable:
        m["recall@k"] = recall_at_k(retrieved, known, len(retrieved) or 1)
        m["mrr@10"] = mrr_at_k(retrieved, known, 10)
        m["ndcg@10"] = ndcg_at_k(retrieved, dict.fromkeys(known, 1.0), 10)
        m["citation_precision"], m["citation_recall"] = citation_precision_recall(cited, known)
    if case.facts:
        m["fact_recall"] = sum(f in answer.answer for f in case.facts) / len(case.facts)
    return m


def verdict(case: Case, gold: list[str | None], answer: Answer) -> tuple[bool | None, str]:
    """(passed, why not) by case type; ``None`` for unlabelled cases."""
    cited = answer.cited_ids
    retrieved = [r["paper_id"] for r in answer.retrieved]
    refused = not answer.answerable
    if not case.labelled:
        return None, "unlabelled (needs gold papers)"
    if not case.answerable:
        ok = refused and answer.answer == CANNOT_ANSWER and not cited
        return ok, "" if ok else f"answered an out-of-corpus question (cited {len(cited)})"
    if any(g is None for g in gold):
        bad = [i for i, g in enumerate(gold) if g is None]
        return False, f"gold rule(s) {bad} match no stored paper, or more than one"
    if refused:
        return False, "gave the cannot-answer reply to an answerable question"
    if case.type == "single":
        ok = bool(cited) and cited[0] == gold[0]
        return ok, "" if ok else ("gold paper not cited" if gold[0] not in cited else
                                  f"gold paper cited as [{cited.index(gold[0]) + 1}], not first")
    if case.type == "follow-up":
        ok = gold[0] in retrieved
        return ok, "" if ok else "gold paper not retrieved for the last turn"
    missing = [g for g in gold if g not in cited]
    return not missing, "" if not missing else f"{len(missing)} of {len(gold)} gold papers not cited"


def run_case(chain: AnswerChain, case: Case, mode: AnswerMode, k: int | None,
             filters: PaperQuery | None = None) -> Answer:
    if len(case.turns) > 1:
        conv = Conversation(chain, k=k, filters=filters, mode=mode)
        answer = None
        for turn in case.turns:
            answer = conv.ask(turn)
        assert answer is not None
        return answer
    return chain.ask(case.question, k=k, filters=filters, mode=mode)


def score_case(case: Case, gold: list[str | None], answer: Answer, labels: dict[str, str]) -> dict[str, Any]:
    ok, why = verdict(case, gold, answer)
    row: dict[str, Any] = {
        "id": case.id, "type": case.type, "question": case.question, "ok": ok, "why": why,
        "answerable": case.answerable, "refused": not answer.answerable,
        "cited": answer.cited_ids, "gold": gold, "retrieved": [r["paper_id"] for r in answer.retrieved],
        "labels": {pid: labels.get(pid, pid) for pid in {*answer.cited_ids, *(g for g in gold if g)}},
        "metrics": case_metrics(case, gold, answer),
        "timings": {k: round(float(v), 1) for k, v in answer.timings.items()},
        "answer": answer.answer[:1200], "standalone": answer.standalone_question, "filters": answer.filters,
        "warnings": answer.warnings,
    }
    if case.split:
        row["split"] = case.split
    if len(case.turns) > 1:
        row["turns"] = case.turns
    if case.facts:
        row["facts"] = case.facts
        row["facts_missing"] = [f for f in case.facts if f not in answer.answer]
    if case.type == "follow-up" and gold and gold[0]:
        row["cited_first"] = bool(answer.cited_ids) and answer.cited_ids[0] == gold[0]
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregates over the rows: pass rates by type, metric means, answer rates, latency percentiles."""
    labelled = [r for r in rows if r["ok"] is not None]
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in labelled:
        by_type[r["type"]].append(r)
    out: dict[str, Any] = {
        "cases": len(rows), "labelled": len(labelled),
        "passed": sum(bool(r["ok"]) for r in labelled),
        "pass_rate": round(mean([float(bool(r["ok"])) for r in labelled]), 4),
        "by_type": {t: {"n": len(rs), "pass_rate": round(mean([float(bool(r["ok"])) for r in rs]), 4)}
                    for t, rs in sorted(by_type.items())},
    }
    metrics = {}
    for name in SUMMARY_METRICS:
        vals = [r["metrics"][name] for r in rows if name in r["metrics"]]
        if vals:
            metrics[name] = {"mean": round(mean(vals), 4), "n": len(vals)}
    out["metrics"] = metrics
    out["statements"] = {v: sum(int(r["metrics"].get(f"statements_{v}", 0)) for r in rows) for v in VERDICTS}
    ooc = [r for r in labelled if not r["answerable"]]
    ans = [r for r in labelled if r["answerable"]]
    fu = by_type.get("follow-up", [])
    refused_ok = [float(r["refused"] and not r["cited"]) for r in ooc]
    # Single-paper answers that cite the gold paper and nothing else: a second citation is padding there.
    single = [r for r in by_type.get("single", []) if r["answerable"] and r["gold"] and r["gold"][0]]
    # Questions that restrict the papers (an author, a category) and that none of the papers they restrict to
    # answers: refused with no citation, not answered from papers outside the filter or beside the point.
    filtered_ooc = [r for r in ooc if r["type"] in FILTERED_TYPES]
    out["answer"] = {
        "cannot_answer_accuracy": round(mean(refused_ok), 4) if ooc else None,
        "false_refusal_rate": round(mean([float(r["refused"]) for r in ans]), 4) if ans else None,
        "single_only_gold": round(mean([float(r["cited"] == r["gold"][:1]) for r in single]), 4) if single else None,
        "filtered_refusal": (round(mean([float(r["refused"] and not r["cited"]) for r in filtered_ooc]), 4)
                             if filtered_ooc else None),
        "follow_up_success": round(mean([float(bool(r["ok"])) for r in fu]), 4) if fu else None,
        "follow_up_cited_first": round(mean([float(r.get("cited_first", False)) for r in fu]), 4) if fu else None,
    }
    stages: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        for k, v in r["timings"].items():
            stages[k].append(v)
    out["latency_ms"] = {k: {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1),
                             "max": round(max(v), 1)} for k, v in sorted(stages.items())}
    judged = [r["judge"] for r in rows if r.get("judge")]
    if judged:
        jm: dict[str, Any] = {}
        for key in ("faithfulness", "relevance", "citation_support"):
            vals = [j[key] for j in judged if j.get(key) is not None]
            jm[key] = {"mean": round(mean(vals), 4) if vals else None, "n": len(vals)}
        jm["errors"] = sum(1 for j in judged if j.get("error"))
        out["judge"] = jm
    return out


def run_eval(chain: AnswerChain, cases: list[Case], mode: AnswerMode = "extractive", k: int | None = None,
             judge: Judge | None = None, progress: bool = True,
             on_row: Callable[[dict[str, Any]], None] | None = None,
             filters: PaperQuery | None = None) -> dict[str, Any]:
    """Every case through ``chain`` (within ``filters``, e.g. a collection, when given); returns
    {"summary", "rows"} (rows in set order)."""
    papers = chain.runtime.store.papers()
    labels = {p.id: p.heading for p in papers}
    rows = []
    for asked in tqdm(cases, desc="eval", unit="case", disable=not progress or None, leave=False):
        case = in_store(asked, papers)
        gold = resolve_gold(case.gold, papers)
        answer = run_case(chain, case, mode, k, filters)
        row = score_case(case, gold, answer, labels)
        if case is not asked:
            row["labelled_as"] = asked.type  # out of corpus, but this store holds its answer (``answered_by``)
        if judge is not None:
            v = judge.score(case.question, answer)
            if v.to_dict():
                row["judge"] = v.to_dict()
        rows.append(row)
        if on_row:
            on_row(row)
        log.info("%s %s %s", case.id, "PASS" if row["ok"] else ("----" if row["ok"] is None else "FAIL"), row["why"])
    return {"summary": summarise(rows), **split_summaries(rows), "rows": rows}


def split_summaries(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"splits": {split: summary}}`` when the set has splits (cases without one count as "unsplit"), else {}."""
    if not any(r.get("split") for r in rows):
        return {}
    names = sorted({r.get("split") or "unsplit" for r in rows})
    return {"splits": {n: summarise([r for r in rows if (r.get("split") or "unsplit") == n]) for n in names}}
