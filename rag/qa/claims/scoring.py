"""How the rule families are measured on labelled (statement, abstract) pairs: ``bench.claims`` prints it and
``tests/test_claims_gate.py`` holds each family to its bar in ``table``.

A pair is one JSON object a line with ``id``, ``statement``, ``abstract``, ``title``, ``source`` and a label in
one of two formats: ``label`` ∈ supported | contradicted | not_in_source, or the older ``label`` ∈ supported |
unsupported with a ``kind`` (evals/sets/README.md), read as three verdicts by ``gold``. Each pair goes through
``rag.qa.verify.verify`` as a model's answer would (the statement with a ``[1]`` marker, the abstract its only
source), and every family's findings are kept before their severity, so a demoted family is still measured.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rag.analysis import analyze
from rag.errors import InputError
from rag.index.embeddings import Embedder
from rag.qa.claims.rules import hits as claims_hits
from rag.qa.claims.source import Source
from rag.qa.claims.table import TABLE
from rag.qa.evidence import EvidenceIndex, content_terms, term_in
from rag.qa.findings import VERDICTS, Finding, Verdict, verdict_of
from rag.qa.generate import Generation
from rag.qa.retrieval import PaperHit
from rag.qa.verify import statements, verify
from rag.quarantine import sentences_of
from rag.records import StoredPaper
from rag.text import plain_text

# The older sets' kinds as verdicts: a negated or reversed claim, and a number changed from one the abstract states
# (each was written by changing one number, unit or count of the abstract: evals/sets/README.md), are what the
# abstract says otherwise; a method or dataset the abstract never names, and another abstract's claim, are not in it.
KIND_VERDICT: dict[str, Verdict] = {"paraphrase": "supported", "negation": "contradicted",
                                    "direction": "contradicted", "number": "contradicted",
                                    "method": "not_in_source", "offtopic": "not_in_source"}
_FIELDS = ("id", "statement", "abstract")


def gold(row: dict[str, Any]) -> Verdict:
    """A pair's verdict by its labels: ``verdict`` when given, a three-way ``label``, else ``label`` and ``kind``."""
    for key in ("verdict", "label"):
        if row.get(key) in VERDICTS:
            return row[key]
    if row.get("label") == "unsupported" and row.get("kind") in KIND_VERDICT:
        return KIND_VERDICT[row["kind"]]
    raise ValueError(f"no verdict: label {row.get('label')!r}, kind {row.get('kind')!r}")


def load(path: Path) -> list[dict[str, Any]]:
    """The pairs of one file; a line that is not a pair is an ``InputError`` naming the file, line and field."""
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"not JSON ({e.msg})", where=f"{path}:{i}") from e
        missing = [f for f in _FIELDS if not isinstance(row.get(f), str) or not row[f].strip()]
        if missing:
            raise InputError(f"missing or empty field {missing[0]!r}", where=f"{path}:{i}")
        try:
            row["gold"] = gold(row)
        except ValueError as e:
            raise InputError(str(e), where=f"{path}:{i}") from e
        rows.append(row)
    return rows


def idf_over(abstracts: Iterable[str]) -> Callable[[Iterable[str]], dict[str, float]]:
    """BM25 idf over the set's distinct abstracts (the verifier weighs a statement's terms by it)."""
    docs = [frozenset(analyze(a)) for a in dict.fromkeys(abstracts)]
    df = Counter(t for d in docs for t in d)
    n = len(docs)
    return lambda terms: {t: math.log(1 + (n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in terms}


def paper(row: dict[str, Any]) -> StoredPaper:
    return StoredPaper(id=row.get("source") or row["id"], label=row.get("title") or row["id"], title=None,
                       authors=(), categories=(), year=None, abstract=row["abstract"])


def cited(row: dict[str, Any]) -> str:
    """The pair's statement as a model's answer cites it: the marker inside the sentence."""
    return row["statement"].rstrip().rstrip(".") + " [1]."


def judge(row: dict[str, Any], evidence: EvidenceIndex) -> dict[str, Any]:
    """The verifier's verdict on one pair, what decided it, every family's findings and the time it took."""
    p = paper(row)
    t0, c0 = time.perf_counter(), time.thread_time()
    out = verify(Generation(cited(row), [PaperHit(p.id, 1.0, paper=p)]), evidence)
    ms, cpu_ms = (time.perf_counter() - t0) * 1000, (time.thread_time() - c0) * 1000
    st = out.statements[0] if out.statements else None
    hits = out.hits[0] if out.hits else []
    return {"id": row["id"], "label": row["label"], "gold": row["gold"], "kind": row.get("kind", ""),
            "statement": row["statement"], "verdict": st.verdict if st else "not_in_source",
            "rule": st.rule if st else "no_statement", "said": st.said if st else "",
            "source_says": st.source_says if st else "", "why": st.why if st else "no statement found",
            "families": sorted({family for family, _ in hits}), "ms": round(ms, 2),
            "cpu_ms": round(cpu_ms, 2)}


def run(pairs: Sequence[dict[str, Any]], embedder: Embedder) -> list[dict[str, Any]]:
    """Judge every pair of one set, idf over that set's abstracts. The abstracts' sentences and the statements are
    embedded first, in batches, so ``ms`` is the check of a statement whose vector is known (the rules and the
    support score), not the embedding model's time."""
    evidence = EvidenceIndex(embedder, idf_over(r["abstract"] for r in pairs), max_texts=max(2048, len(pairs)))
    evidence.papers(list({p.id: p for p in map(paper, pairs)}.values()))
    evidence.embed([s.text for r in pairs for s in statements(cited(r))])
    return [judge(r, evidence) for r in pairs]


def rules_only(pairs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every pair through the rule families alone, without the embedding model (fast enough for ``make test``):
    the evidence sentence is the one sharing the most idf weight with the statement, where the verifier also
    weighs sentence cosine, and there is no support score (no ``on_topic``). The verdict is the families'."""
    idf = idf_over(r["abstract"] for r in pairs)
    out = []
    for row in pairs:
        p = paper(row)
        sentences = sentences_of(p.abstract)
        found = statements(cited(row))
        text = found[0].text if found else row["statement"]
        weights = idf(content_terms(text))
        total = sum(weights.values()) or 1.0
        evidence = max(sentences, key=lambda s: sum(w for t, w in weights.items()
                                                     if term_in(t, frozenset(analyze(plain_text(s))))) / total)
        source = Source.of(sentences, frozenset(), f" {p.label} ")
        hits = claims_hits(text, source, evidence)
        verdict = verdict_of(Finding(f, v, r) for f, r in hits if (v := TABLE[f].verdict))
        out.append({"id": row["id"], "label": row["label"], "gold": row["gold"], "kind": row.get("kind", ""),
                    "statement": row["statement"], "verdict": verdict,
                    "families": sorted({f for f, _ in hits}), "why": "; ".join(r for _, r in hits)})
    return out


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def family_scores(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per family: its findings, how many fell on true paraphrases, and its right share as a contradiction (the
    pair's gold verdict is contradicted) and as a flag (the pair is not supported)."""
    out: dict[str, dict[str, Any]] = {}
    for name in TABLE:
        mine = [r for r in rows if name in r["families"]]
        contra = sum(r["gold"] == "contradicted" for r in mine)
        flag = sum(r["gold"] != "supported" for r in mine)
        out[name] = {"n": len(mine), "on_paraphrases": len(mine) - flag,
                     "precision_contradicted": _share(contra, len(mine)), "precision_flag": _share(flag, len(mine)),
                     "severity": TABLE[name].severity}
    return out


def scores(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The verdicts against the labels: how often each verdict is said and right, contradiction recall, the share of
    true paraphrases marked contradicted and marked anything but supported, per family (each row's ``ms`` and
    ``cpu_ms`` are its wall and CPU time)."""
    said = {v: [r for r in rows if r["verdict"] == v] for v in VERDICTS}
    paraphrases = [r for r in rows if r["gold"] == "supported"]
    contradictions = [r for r in rows if r["gold"] == "contradicted"]
    wrong = [r for r in rows if r["gold"] != "supported"]
    return {
        "pairs": len(rows), "gold": dict(Counter(r["gold"] for r in rows)),
        "said": {v: len(rs) for v, rs in said.items()},
        "contradicted_precision": _share(sum(r["gold"] == "contradicted" for r in said["contradicted"]),
                                         len(said["contradicted"])),
        "contradicted_on_wrong": _share(sum(r["gold"] != "supported" for r in said["contradicted"]),
                                        len(said["contradicted"])),
        "not_in_source_on_wrong": _share(sum(r["gold"] != "supported" for r in said["not_in_source"]),
                                         len(said["not_in_source"])),
        "contradiction_recall": _share(sum(r["verdict"] == "contradicted" for r in contradictions),
                                       len(contradictions)),
        "flag_recall": _share(sum(r["verdict"] != "supported" for r in wrong), len(wrong)),
        "paraphrases_contradicted": _share(sum(r["verdict"] == "contradicted" for r in paraphrases),
                                           len(paraphrases)),
        "paraphrases_not_supported": _share(sum(r["verdict"] != "supported" for r in paraphrases),
                                            len(paraphrases)),
        "families": family_scores(rows)}
