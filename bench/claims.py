"""How the citation verifier's three verdicts (supported | contradicted | not_in_source) hold on labelled pairs.

    python -m bench.claims [--pairs FILE] [--out OUT] [--misses]
    python -m bench.claims --own-sentences [PATH ...]

``--pairs FILE`` scores one labelled file; without it, the seven committed sets side by side (``SETS``:
``claims.jsonl`` and ``claims_heldout.jsonl`` … ``claims_heldout6.jsonl``, all development data now; the blind sets
of each rules version are described in evals/sets/README.md). A file labels each pair ``supported |
contradicted | not_in_source``, or ``supported | unsupported`` with a ``kind`` that ``rag.qa.claims.scoring.gold``
reads as a verdict. ``--out OUT`` writes one row per pair (``id``, ``label``, ``gold``, ``verdict``, ``rule``,
``said``, ``source_says``, ``ms``, the families that found something): as JSON lines when OUT ends in ``.jsonl``,
else as JSON with the scores. Each pair goes through ``rag.qa.verify.verify`` as a model's answer would.

Reported per set: how often each verdict is said; the precision of *contradicted* (its pairs are labelled
contradicted) and how many of them are wrong statements at all; contradiction recall; true paraphrases marked
contradicted and marked anything but supported; p95 ms per statement; and per rule family (``rag.qa.claims.table``)
its findings and their right share, measured before its severity (a demoted family is still measured). The EPPO
statements of the old bar are checked on the sample abstract: the true one must come back supported, the flipped
verb, the flipped negation and the invented 73% contradicted or not_in_source.

``--own-sentences`` is a label-free probe of false alarms: every sentence of every abstract of the given corpora
(default: ``data/sample``, the NeurIPS CSVs and Cranfield under ``../shared/datasets``), loaded as ``paperchat
ingest`` stores them, is checked by the claim checks against its own abstract (itself as evidence); a sentence
copied from its abstract says what the abstract says, so each finding is a false alarm. Prints the count, each
sentence with its reason, and the claim checks' CPU time per sentence.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.common import machine
from evals.metrics import percentile
from evals.sets import SETS_DIR
from rag.config import get_settings, prepare_runtime
from rag.index.embeddings import SentenceTransformerEmbedder
from rag.ingest import loaders
from rag.qa import claims
from rag.qa.claims import scoring
from rag.qa.claims.table import TABLE
from rag.qa.evidence import EvidenceIndex
from rag.qa.generate import Generation
from rag.qa.retrieval import PaperHit
from rag.qa.verify import verify
from rag.quarantine import sentences_of

log = logging.getLogger(__name__)

SETS = tuple(SETS_DIR / f"claims{s}.jsonl" for s in ("", "_heldout", *(f"_heldout{i}" for i in range(2, 7))))
# The statements of the old bar on the EPPO abstract: the true one, then three wrong ones (a flipped verb, a flipped
# negation, an invented number) that must not come back supported.
EPPO_TRUE = "EPPO penalizes the increase in energy loss in the final layer during reward calculation [1]."
EPPO = ("EPPO rewards the increase in energy loss in the first layer [1].",
        "EPPO does not mitigate reward hacking [1].",
        "EPPO mitigates reward hacking in 73% of the evaluated cases [1].")


def eppo(evidence: EvidenceIndex, pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The EPPO statements' verdicts, when the set holds the EPPO abstract."""
    row = next((r for r in pairs if "Energy loss-aware PPO" in r["abstract"]), None)
    if row is None:
        return []
    p = scoring.paper(row)
    out = []
    for text in (EPPO_TRUE, *EPPO):
        st = verify(Generation(text, [PaperHit(p.id, 1.0, paper=p)]), evidence).statements[0]
        out.append({"statement": text, "verdict": st.verdict, "why": st.why,
                    "ok": (st.verdict == "supported") == (text == EPPO_TRUE)})
    return out


def run(path: Path, embedder: SentenceTransformerEmbedder) -> dict[str, Any]:
    """Judge every pair of one file and score the verdicts."""
    pairs = scoring.load(path)
    rows = scoring.run(pairs, embedder)
    evidence = EvidenceIndex(embedder, scoring.idf_over(r["abstract"] for r in pairs))
    return {"set": str(path), **timed(rows), "eppo": eppo(evidence, pairs), "rows": rows}


def timed(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The scores, with the p95 wall and CPU time of a statement's check."""
    return {**scoring.scores(rows), "p95_ms": round(percentile([r["ms"] for r in rows], 95), 1),
            "p95_cpu_ms": round(percentile([r["cpu_ms"] for r in rows], 95), 1)}


def print_sets(reports: list[dict[str, Any]]) -> None:
    """The sets in adjacent columns: verdicts, then each family's findings and right share."""
    names = [Path(r["set"]).stem.replace("claims_", "").replace("claims", "dev") for r in reports]
    print(f"{'':34}" + "".join(f"{n:>11}" for n in names))

    def line(name: str, cells: Iterable[Any]) -> None:
        print(f"{name:34}" + "".join(f"{'-' if x is None else x!s:>11}" for x in cells))

    line("pairs", (r["pairs"] for r in reports))
    line("  labelled contradicted", (r["gold"].get("contradicted", 0) for r in reports))
    line("said contradicted", (r["said"]["contradicted"] for r in reports))
    line("said not_in_source", (r["said"]["not_in_source"] for r in reports))
    for name, key in (("contradicted: labelled so", "contradicted_precision"),
                      ("contradicted: a wrong statement", "contradicted_on_wrong"),
                      ("not_in_source: a wrong statement", "not_in_source_on_wrong"),
                      ("contradiction recall", "contradiction_recall"), ("wrong statements flagged", "flag_recall"),
                      ("paraphrases contradicted", "paraphrases_contradicted"),
                      ("paraphrases not supported", "paraphrases_not_supported"), ("p95 ms/statement", "p95_ms"),
                      ("p95 CPU ms/statement", "p95_cpu_ms")):
        line(name, (r[key] for r in reports))
    for what, key in (("contradicted", "precision_contradicted"), ("a flag", "precision_flag")):
        print(f"per family (severity): findings n, right share as {what}")
        for family in TABLE:
            line(f"  {family} ({TABLE[family].severity})",
                 (f"{c['n']}:{c[key]}" if c["n"] else "-" for c in (r["families"][family] for r in reports)))


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
                    why = [reason for _, reason in claims.hits(s, source, s)]
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
                       help="score this pairs file alone (default: the committed sets side by side)")
    which.add_argument("--own-sentences", nargs="*", metavar="PATH", default=None,
                       help="check every abstract sentence against its own abstract (false alarms); default corpora: "
                            + ", ".join(OWN_CORPORA))
    ap.add_argument("--out", type=Path, default=None, help="write rows and totals as JSON")
    ap.add_argument("--misses", action="store_true", help="print every pair whose verdict is not its label's")
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
    reports = [run(path, embedder) for path in ([args.pairs] if args.pairs else SETS)]
    if len(reports) > 1:
        every = [row for r in reports for row in r["rows"]]
        reports.append({"set": "all", **timed(every), "eppo": [], "rows": []})
    print_sets(reports)
    for e in (e for r in reports for e in r["eppo"]):
        print(f"EPPO check: {e['verdict']}{'' if e['ok'] else ' (WRONG)'}: {e['statement']}  ({e['why']})")
    if args.misses:
        for r in reports:
            for row in r["rows"]:
                if row["verdict"] != row["gold"]:
                    print(f"  {Path(r['set']).stem:20} {row['id']:14} {row['gold']:>13} said {row['verdict']:13} "
                          f"{row['statement'][:120]}  [{row['why']}]")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        if args.out.suffix == ".jsonl":
            args.out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for r in reports
                                        for row in r["rows"]), encoding="utf-8")
        else:
            args.out.write_text(json.dumps({"machine": machine(), "sets": reports}, indent=1, ensure_ascii=False),
                                encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
