"""How often the citation verifier calls a contradiction unsupported, on hand-labelled (statement, abstract) pairs.

    python -m bench.claims [--pairs PATH | --heldout] [--out reports/claims.json] [--misses]
    python -m bench.claims --own-sentences [PATH ...]

With no ``--pairs`` it scores three labelled sets side by side: ``evals/sets/claims.jsonl`` (dev: the rules of
``rag.qa.claims`` were tuned while looking at it), ``evals/sets/claims_heldout.jsonl`` (first held-out set: held out
for the first version of the rules, then used as development data, so now "dev 2") and
``evals/sets/claims_heldout5.jsonl`` (held out: written blind to ``rag/qa`` and committed before the fourth version
of the rules; scored once per version, never used to adjust them). ``claims_heldout2.jsonl`` to
``claims_heldout4.jsonl`` were held out in their turn and are development data now (score them with ``--pairs``).
``--heldout`` scores the held-out set alone and ``--pairs PATH`` any file of the same
format. Each pair (built and labelled as evals/sets/README.md describes)
goes through ``rag.qa.verify.verify`` exactly as a model's answer would: the statement with a ``[1]`` marker,
the abstract as the only source, the bundled embedding model, idf over that file's abstracts. Reported for "unsupported"
(the positive class): precision and recall overall, recall per kind of wrong statement (negation,
direction, number, method, offtopic) with the precision of flagging that kind against the true paraphrases,
and the share of true paraphrases flagged. Two verdicts are scored: the verifier's (support score and
claim checks, what the user sees) and the claim checks alone (``rag.qa.claims``, what they add).

``--own-sentences`` is a label-free probe of false alarms: every sentence of every abstract of the given corpora
(default: ``data/sample``, the NeurIPS CSVs and Cranfield under ``../shared/datasets``), loaded as ``paperchat
ingest`` stores them, is checked by the claim checks against its own abstract (itself as evidence); a sentence
copied from its abstract says what the abstract says, so each flag is a false alarm. Prints the count, each
flagged sentence with its reason, and the claim checks' CPU time per sentence.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.common import machine
from evals.sets import SETS_DIR
from rag.analysis import analyze
from rag.config import get_settings, prepare_runtime
from rag.index.embeddings import SentenceTransformerEmbedder
from rag.ingest import loaders
from rag.qa import claims
from rag.qa.evidence import EvidenceIndex
from rag.qa.generate import Generation
from rag.qa.retrieval import PaperHit
from rag.qa.verify import verify
from rag.quarantine import sentences_of
from rag.records import StoredPaper

log = logging.getLogger(__name__)

PAIRS = SETS_DIR / "claims.jsonl"
DEV2 = SETS_DIR / "claims_heldout.jsonl"  # held out for the first rules, development data for the second
HELDOUT = SETS_DIR / "claims_heldout5.jsonl"  # the blind set; heldout2 to heldout4 are spent
# The two statements issue 19 quotes: both must come back unsupported.
EPPO = ("EPPO rewards the increase in energy loss in the first layer [1].",
        "EPPO does not mitigate reward hacking [1].")


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def idf_over(abstracts: Iterable[str]):
    """BM25 idf over the set's distinct abstracts (the verifier weighs a statement's terms by it)."""
    docs = [frozenset(analyze(a)) for a in dict.fromkeys(abstracts)]
    df = Counter(t for d in docs for t in d)
    n = len(docs)
    return lambda terms: {t: math.log(1 + (n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in terms}


def paper(row: dict[str, Any]) -> StoredPaper:
    return StoredPaper(id=row["source"], label=row["title"], title=None, authors=(), categories=(), year=None,
                       abstract=row["abstract"])


def judge(row: dict[str, Any], evidence: EvidenceIndex) -> dict[str, Any]:
    """The verifier's verdict on one pair, and whether the claim checks alone flagged it."""
    p = paper(row)
    cited = row["statement"].rstrip().rstrip(".") + " [1]."  # the marker inside the sentence, as models write it
    out = verify(Generation(cited, [PaperHit(p.id, 1.0, paper=p)]), evidence)
    st = out.statements[0] if out.statements else None
    why = st.why if st else "no statement found"
    claim_flag = bool(st) and not st.supported and any(
        "is about something else" not in part for part in why.split("; ") if part)
    return {"id": row["id"], "kind": row["kind"], "label": row["label"], "statement": row["statement"],
            "flagged": not (st and st.supported), "claims_flagged": claim_flag, "why": why}


def scores(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Precision / recall of "unsupported" over all rows, recall and precision-vs-paraphrases per kind."""
    pos = [r for r in rows if r["label"] == "unsupported"]
    neg = [r for r in rows if r["label"] == "supported"]
    tp = sum(r[key] for r in pos)
    fp = sum(r[key] for r in neg)
    out: dict[str, Any] = {
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / len(pos), 3) if pos else None,
        "paraphrases_flagged": round(fp / len(neg), 3) if neg else None,
        "paraphrases": len(neg), "unsupported": len(pos), "kinds": {}}
    for kind in sorted({r["kind"] for r in pos}):
        mine = [r for r in pos if r["kind"] == kind]
        hit = sum(r[key] for r in mine)
        out["kinds"][kind] = {"n": len(mine), "recall": round(hit / len(mine), 3),
                              "precision_vs_paraphrases": round(hit / (hit + fp), 3) if hit + fp else None}
    return out


def run(path: Path, embedder: SentenceTransformerEmbedder) -> dict[str, Any]:
    """Judge every pair of one file (idf over that file's abstracts) and score the verdicts."""
    pairs = load(path)
    evidence = EvidenceIndex(embedder, idf_over(r["abstract"] for r in pairs))
    t0 = time.perf_counter()
    rows = [judge(r, evidence) for r in pairs]
    eppo_abstract = next((r for r in pairs if "Energy loss-aware PPO" in r["abstract"]), None)
    eppo = []
    if eppo_abstract:
        p = paper(eppo_abstract)
        for text in EPPO:
            st = verify(Generation(text, [PaperHit(p.id, 1.0, paper=p)]), evidence).statements[0]
            eppo.append({"statement": text, "supported": st.supported, "why": st.why})
    ms = (time.perf_counter() - t0) * 1000 / max(1, len(rows))
    return {"set": str(path), "pairs": len(rows), "ms_per_pair": round(ms, 1),
            "verifier": scores(rows, "flagged"), "claims_only": scores(rows, "claims_flagged"), "eppo": eppo,
            "rows": rows}


def print_one(report: dict[str, Any]) -> None:
    v, c = report["verifier"], report["claims_only"]
    print(f"{report['pairs']} pairs from {report['set']} ({v['paraphrases']} true paraphrases, "
          f"{v['unsupported']} unsupported); {report['ms_per_pair']} ms/pair")
    print(f"{'':24}{'verifier':>22}{'claim checks only':>22}")
    for name, key in (("unsupported precision", "precision"), ("unsupported recall", "recall"),
                      ("paraphrases flagged", "paraphrases_flagged")):
        print(f"{name:24}{v[key]!s:>22}{c[key]!s:>22}")
    for kind, k in v["kinds"].items():
        label = f"  {kind} (n={k['n']})"
        print(f"{label:24}{'recall ' + str(k['recall']) + ' / prec ' + str(k['precision_vs_paraphrases']):>22}"
              f"{'recall ' + str(c['kinds'][kind]['recall']):>22}")


def print_side_by_side(dev: dict[str, Any], dev2: dict[str, Any], held: dict[str, Any]) -> None:
    """Dev sets (tuned on) and the held-out set (never tuned on) in adjacent columns, verifier and claim checks
    alone."""
    reports = (dev, dev2, held)
    print(f"dev      = {dev['set']}: {dev['pairs']} pairs, the rules were tuned on it")
    print(f"dev 2    = {dev2['set']}: {dev2['pairs']} pairs, held out for the first rules, tuned on for these")
    print(f"held-out = {held['set']}: {held['pairs']} pairs, written blind, never used to adjust the rules")
    print(f"{'':26}{'verifier':>33}{'claim checks only':>33}")
    print(f"{'':26}" + f"{'dev':>11}{'dev 2':>11}{'held-out':>11}" * 2)

    def line(name: str, get) -> None:
        cells = [get(r[which]) for which in ("verifier", "claims_only") for r in reports]
        print(f"{name:26}" + "".join(f"{'-' if x is None else x!s:>11}" for x in cells))

    line("pairs (paraphrases)", lambda s: f"{s['paraphrases'] + s['unsupported']} ({s['paraphrases']})")
    for name, key in (("unsupported precision", "precision"), ("unsupported recall", "recall"),
                      ("paraphrases flagged", "paraphrases_flagged")):
        line(name, lambda s, key=key: s[key])
    for kind in sorted(set().union(*(r["verifier"]["kinds"] for r in reports))):
        n = "/".join(str(r["verifier"]["kinds"].get(kind, {}).get("n", 0)) for r in reports)
        line(f"  {kind} (n={n})", lambda s, kind=kind: s["kinds"].get(kind, {}).get("recall"))
    print(f"ms/pair: dev {dev['ms_per_pair']}, dev 2 {dev2['ms_per_pair']}, held-out {held['ms_per_pair']}")


OWN_CORPORA = ("data/sample", "../shared/datasets/nips-2013-2015", "../shared/datasets/cranfield")


def own_sentences(paths: Iterable[str]) -> dict[str, Any]:
    """Each abstract sentence checked against its own abstract: every flag is a false alarm."""
    root = Path(__file__).resolve().parents[1]
    checked, flagged, cpu = 0, [], 0.0
    for path in paths:
        where = Path(path) if Path(path).is_absolute() else root / path
        files = sorted(f for f in where.iterdir() if f.suffix in {".txt", ".csv"}) if where.is_dir() and \
            not (where / "corpus.jsonl").exists() else [where]
        for f in files:
            for p in loaders.load(f).papers:
                sentences = sentences_of(p.abstract)
                t0 = time.process_time()
                source = claims.Source.of(sentences, frozenset(), " ".join(x for x in (p.title, p.label) if x))
                for s in sentences:
                    why = claims.check(s, source, s)
                    checked += 1
                    if why:
                        flagged.append({"paper": p.id, "sentence": s, "why": "; ".join(why)})
                cpu += time.process_time() - t0
    return {"sentences": checked, "flagged": flagged,
            "cpu_ms_per_sentence": round(1000 * cpu / max(1, checked), 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--pairs", "--set", dest="pairs", type=Path, default=None,
                       help="score this pairs file alone (default: dev and held-out side by side)")
    which.add_argument("--heldout", action="store_true", help=f"score {HELDOUT.name} alone")
    which.add_argument("--own-sentences", nargs="*", metavar="PATH", default=None,
                       help="check every abstract sentence against its own abstract (false alarms); default corpora: "
                            + ", ".join(OWN_CORPORA))
    ap.add_argument("--out", type=Path, default=None, help="write rows and totals as JSON")
    ap.add_argument("--misses", action="store_true", help="print every pair the verifier got wrong")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    if args.own_sentences is not None:
        result = own_sentences(args.own_sentences or OWN_CORPORA)
        for f in result["flagged"]:
            print(f"  flagged {f['paper']}: {f['sentence'][:160]}  [{f['why']}]")
        print(f"{len(result['flagged'])}/{result['sentences']} abstract sentences flagged against their own abstract; "
              f"claim checks {result['cpu_ms_per_sentence']} ms CPU per sentence (Source built per abstract)")
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({"machine": machine(), **result}, indent=1, ensure_ascii=False),
                                encoding="utf-8")
        return 0
    settings = get_settings()
    prepare_runtime(settings)
    embedder = SentenceTransformerEmbedder(settings.embeddings)
    if args.pairs or args.heldout:
        reports = {"pairs": run(args.pairs or HELDOUT, embedder)}
        print_one(reports["pairs"])
    else:
        reports = {"dev": run(PAIRS, embedder), "dev2": run(DEV2, embedder), "heldout": run(HELDOUT, embedder)}
        print_side_by_side(reports["dev"], reports["dev2"], reports["heldout"])
    for e in (e for r in reports.values() for e in r["eppo"]):
        print(f"EPPO check: {'supported' if e['supported'] else 'UNSUPPORTED'}: {e['statement']}  ({e['why']})")
    if args.misses:
        for name, r in reports.items():
            for row in r["rows"]:
                if row["flagged"] != (row["label"] == "unsupported"):
                    print(f"  miss {name:8} {row['id']:24} {row['statement']}  [{row['why']}]")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        out = {"machine": machine(), **reports}
        args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
