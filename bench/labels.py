"""Labels and summary lines of the untitled sample papers against hand-written references.

    python -m bench.labels [--out reports/labels.json]
    python -m bench.labels --titles [--out reports/labels-titles.json] [--show-dev N]

Ingests ``data/sample`` into a throwaway home and reads every paper back as the store holds it. For each line of
``evals/sets/sample_labels.jsonl`` (criterion in evals/sets/README.md) it reports:

- label: content-word recall (the reference label's stemmed content words, ``rag.analysis.analyze``, found in the
  stored label with its author prefix removed), and, when the reference names a method (a ``NAME:`` head with an
  identifier such as ``EPPO``, ``Gap-Init``, ``SyncMind``), whether the stored label names it too;
- summary: the line the extractive answer gives the paper for a question about it ("What does the paper about
  <the first eight words of its abstract> contribute?", the paper as the only hit, the same ``generate`` path an
  answer takes; the opening words are often background, which is what a summary must not echo) and the line a listing
  gives it (``listing=True``): whether it is the reference sentence (or the stored sentence containing it), and
  whether it is background: a sentence that comes before the abstract first speaks of its own work (we/our/this
  paper…, else before the reference sentence).

Prints a table (totals first) and writes the per-paper rows and totals as JSON.

``--titles`` scores the labelling rules on text alone (no ingest, a few seconds) against the real titles of the
NeurIPS 2013–2015 abstracts (``../shared/datasets/nips-2013-2015/*.csv``, rows deduplicated by title and
abstract), a check of how the rules, written on the 40 sample papers, carry over to papers they never saw. Each
title is the reference: title recall (its stemmed content words found in ``paper_phrase`` of the abstract as
ingest normalises it), title identifiers named (words with two or more capitals in the title's head, before any
colon: "RDC", "SVRG", "PAC-Bayes"; a paper counts when the label names one of them), and how many abstracts
state no contribution the rules find (``label_phrase`` empty, so ``key_phrase`` decides). Beside it the same
figures for a naive label, the first sentence of the abstract clipped to the same length. Papers split by a
stable hash of the title into ``dev`` (change the rules looking at these) and ``heldout`` (report only: the
JSON keeps per-paper rows for ``dev`` alone, and ``--show-dev`` prints only dev rows).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

from bench.common import NIPS, machine
from evals.sets import SETS_DIR, rule_matches
from evals.throwaway import throwaway_runtime
from rag.analysis import analyze
from rag.config import get_settings
from rag.contribution import MAX_CHARS, MAX_WORDS, label_phrase, paper_phrase
from rag.display import label_surnames
from rag.qa.evidence import EvidenceIndex
from rag.qa.generate import GenerationInput
from rag.qa.generate.extractive import ExtractiveGenerator, attribute
from rag.qa.retrieval import PaperHit
from rag.records import StoredPaper
from rag.resources import sample_corpus
from rag.text import normalize_abstract, plain_text, split_sentences, strip_html

log = logging.getLogger(__name__)

REFERENCE = SETS_DIR / "sample_labels.jsonl"
_OWN_VOICE = re.compile(r"\b(?:we|our|us)\b|\bthis (?:paper|work|study|article)\b|\bhere\b", re.I)
_IDENT = re.compile(r"[^\W_][\w\-]*")


def comparable(s: str) -> str:
    """The README's comparison form: plain text, emphasis marks dropped, whitespace folded, case ignored."""
    return " ".join(plain_text(s).replace("*", "").split()).casefold()


def phrase_of(label: str, authors: tuple[str, ...]) -> str:
    """The label without its "Miao et al.: " head (a titled paper's label is all phrase)."""
    who = label_surnames(list(authors))
    return label[len(who) + 2:] if who and label.startswith(who + ": ") else label


def method_names(reference_label: str) -> list[str]:
    """Identifiers of the method a reference label names in its head ("EPPO", "Gap-Init", "P2L"); [] when the
    head is a plain phrase ("Falling trees", "Q-learning theory") or there is no head."""
    if ":" not in reference_label:
        return []
    head = reference_label.split(":", 1)[0]
    return [w for w in _IDENT.findall(head) if sum(c.isupper() for c in w) >= 2]


def label_scores(reference: str, produced: str) -> dict[str, Any]:
    want = set(analyze(reference))
    got = set(analyze(produced))
    names = method_names(reference)
    words = {w.casefold() for w in _IDENT.findall(produced)}
    return {"recall": round(len(want & got) / len(want), 4) if want else 1.0,
            "missing": sorted(want - got),
            "names": names, "name_match": (any(n.casefold() in words for n in names) if names else None)}


def summary_scores(summary: str, sentences: tuple[str, ...], reference: str, authors: list[str],
                   listing: bool) -> dict[str, Any]:
    """Which abstract sentences the summary line is made of, whether the reference is one of them, and whether
    its first one is background."""
    rendered = comparable(summary)
    chosen = [i for i, s in enumerate(sentences)
              if comparable(attribute(s, authors, first=True) if listing else attribute(s, [], first=False)).rstrip(".")
              in rendered]
    ref = comparable(reference)
    ref_at = next((i for i, s in enumerate(sentences) if ref in comparable(s)), None)
    own = next((i for i, s in enumerate(sentences) if _OWN_VOICE.search(s)), ref_at)
    first = chosen[0] if chosen else None
    return {"text": summary, "refused": not summary, "sentences": chosen, "reference_at": ref_at,
            "is_reference": ref_at is not None and ref_at in chosen,
            "background": first is not None and own is not None and first < own}


def run() -> dict[str, Any]:
    refs = [json.loads(line) for line in REFERENCE.read_text().splitlines() if line.strip()]
    settings = get_settings()
    rows: list[dict[str, Any]] = []
    with throwaway_runtime(settings, prefix="paperchat-labels-") as rt:
        report = rt.ingestor(progress=False).ingest(sample_corpus())
        if report.file_errors:
            raise RuntimeError(f"sample ingest failed: {report.file_errors}")
        papers = rt.store.papers()
        evidence = EvidenceIndex(rt.embedder, rt.lexical.idf)
        gen = ExtractiveGenerator(evidence)
        for ref in refs:
            rule = {"author": ref["author"], "abstract_prefix": ref["abstract_prefix"]}
            found = [p for p in papers if rule_matches(rule, p)]
            if len(found) != 1:
                raise RuntimeError(f"{rule} matches {len(found)} stored papers")
            p: StoredPaper = found[0]
            ev = evidence.papers([p])[0]
            hit = [PaperHit(p.id, 1.0, paper=p)]
            # Worded from the opening sentence, the way a reader recalls a paper's topic: that sentence is often
            # background, so a summary chosen by overlap with the question alone would be background too.
            topic = " ".join(plain_text(ev.sentences[0]).replace("*", "").split()[:8]).rstrip(" .,;:")
            answer = gen.generate(GenerationInput(f"What does the paper about {topic} contribute?", hit))
            listing = gen.generate(GenerationInput(f"papers by {ref['author']}", hit, filtered=True, listing=True,
                                                   filter_text=f"author: {ref['author']}", total_matches=1))
            rows.append({
                "author": ref["author"], "id": p.id, "label": p.label, "reference_label": ref["label"],
                **label_scores(ref["label"], phrase_of(p.label, p.authors)),
                "answer": summary_scores(answer.summaries.get(1, ""), ev.sentences, ref["summary"], [], False),
                "listing": summary_scores(listing.summaries.get(1, ""), ev.sentences, ref["summary"],
                                          list(p.authors), True),
            })
    n = len(rows)
    named = [r for r in rows if r["name_match"] is not None]
    totals = {
        "papers": n,
        "label_recall": round(sum(r["recall"] for r in rows) / n, 4),
        "label_name_match": f"{sum(bool(r['name_match']) for r in named)}/{len(named)}",
        "answer_summary_is_reference": f"{sum(r['answer']['is_reference'] for r in rows)}/{n}",
        "answer_summary_background": f"{sum(r['answer']['background'] for r in rows)}/{n}",
        "answer_refused": f"{sum(r['answer']['refused'] for r in rows)}/{n}",
        "listing_summary_is_reference": f"{sum(r['listing']['is_reference'] for r in rows)}/{n}",
        "listing_summary_background": f"{sum(r['listing']['background'] for r in rows)}/{n}",
    }
    return {"totals": totals, "papers": rows}


def title_split(title: str) -> str:
    """``dev`` or ``heldout``: half the titles each, by a hash of the folded title (stable across runs)."""
    digest = hashlib.sha256(" ".join(title.split()).casefold().encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "heldout"


def neurips_papers(folder: Path = NIPS) -> list[dict[str, str]]:
    """``{"title", "abstract", "split"}`` of each distinct NeurIPS paper; the abstract as ingest stores it."""
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, str]] = []
    for f in sorted(folder.glob("*.csv")):
        with f.open(encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                title = " ".join(strip_html(row["Title"]).split())
                abstract = normalize_abstract(row["Abstract"])
                if not title or not abstract or (title, abstract) in seen:
                    continue
                seen.add((title, abstract))
                out.append({"title": title, "abstract": abstract, "split": title_split(title)})
    return out


def first_sentence(abstract: str) -> str:
    """The naive label: the abstract's first sentence cut to a label's length (``MAX_WORDS`` words, ``MAX_CHARS``
    characters), by a rule of its own so that changes to the labelling rules leave it alone."""
    sents = split_sentences(plain_text(abstract))
    words = sents[0].split()[:MAX_WORDS] if sents else []
    while words and len(" ".join(words)) > MAX_CHARS:
        words.pop()
    return " ".join(words)


def title_identifiers(title: str) -> list[str]:
    head = title.split(":", 1)[0]
    return [w for w in _IDENT.findall(head) if sum(c.isupper() for c in w) >= 2]


def title_scores(title: str, label: str) -> dict[str, Any]:
    want, got = set(analyze(title)), set(analyze(label))
    ids = title_identifiers(title)
    words = {w.casefold() for w in _IDENT.findall(label)}
    return {"recall": round(len(want & got) / len(want), 4) if want else None,
            "ids": ids, "named": any(i.casefold() in words for i in ids) if ids else None}


def _title_totals(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    scored = [r[key]["recall"] for r in rows if r[key]["recall"] is not None]
    with_ids = [r for r in rows if r[key]["named"] is not None]
    return {"title_recall": round(sum(scored) / len(scored), 4),
            "identifier_named": f"{sum(bool(r[key]['named']) for r in with_ids)}/{len(with_ids)}",
            "empty": sum(not r[key]["label"] for r in rows)}


def run_titles(folder: Path = NIPS) -> dict[str, Any]:
    """Title figures of ``paper_phrase`` and of the first-sentence baseline, per split."""
    rows: list[dict[str, Any]] = []
    for p in neurips_papers(folder):
        label = paper_phrase(p["abstract"])
        base = first_sentence(p["abstract"])
        rows.append({"split": p["split"], "title": p["title"],
                     "fallback": not label_phrase(p["abstract"]),
                     "label": {"label": label, **title_scores(p["title"], label)},
                     "baseline": {"label": base, **title_scores(p["title"], base)}})
    totals: dict[str, Any] = {}
    for split in ("dev", "heldout", "all"):
        part = [r for r in rows if split in ("all", r["split"])]
        totals[split] = {"papers": len(part), "label": _title_totals(part, "label"),
                         "fallback": sum(r["fallback"] for r in part),
                         "baseline": _title_totals(part, "baseline")}
    return {"totals": totals, "dev_papers": [r for r in rows if r["split"] == "dev"]}


def titles_to_text(result: dict[str, Any], show_dev: int = 0) -> str:
    lines = ["| split | papers | label title recall | label identifier named | label empty | "
             "no contribution found (key_phrase fallback) | first-sentence recall | first-sentence identifier "
             "named |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for split, t in result["totals"].items():
        lab, base = t["label"], t["baseline"]
        lines.append(f"| {split} | {t['papers']} | {lab['title_recall']:.3f} | {lab['identifier_named']} | "
                     f"{lab['empty']} | {t['fallback']} | {base['title_recall']:.3f} | {base['identifier_named']} |")
    if show_dev:
        lines += ["", "| recall | named | title | label |", "|---:|:-:|---|---|"]
        mark = {True: "y", False: "n", None: "–"}
        for r in result["dev_papers"][:show_dev]:
            lab = r["label"]
            rec = "–" if lab["recall"] is None else f"{lab['recall']:.2f}"
            lines.append(f"| {rec} | {mark[lab['named']]} | {r['title']} | {lab['label']} |")
    m = result["meta"]
    lines += ["", f"`{m['command']}` · {m['machine']} · {m['seconds']:.1f} s wall"]
    return "\n".join(lines)


def to_text(result: dict[str, Any]) -> str:
    t = result["totals"]
    lines = ["| papers | label recall | method named | answer summary = reference | answer background | "
             "listing summary = reference | listing background |", "|---:|---:|---:|---:|---:|---:|---:|",
             f"| {t['papers']} | {t['label_recall']:.3f} | {t['label_name_match']} | "
             f"{t['answer_summary_is_reference']} | {t['answer_summary_background']} | "
             f"{t['listing_summary_is_reference']} | {t['listing_summary_background']} |", "",
             "| author | recall | name | ans ref/bg | list ref/bg | label |", "|---|---:|:-:|:-:|:-:|---|"]
    mark = {True: "y", False: "n", None: "–"}
    for r in result["papers"]:
        a, li = r["answer"], r["listing"]
        lines.append(f"| {r['author']} | {r['recall']:.2f} | {mark[r['name_match']]} | "
                     f"{mark[a['is_reference']]}/{mark[a['background']]} | "
                     f"{mark[li['is_reference']]}/{mark[li['background']]} | {r['label']} |")
    m = result["meta"]
    lines += ["", f"`{m['command']}` · {m['machine']} · {m['seconds']:.0f} s wall"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON report (default reports/labels.json, with --titles reports/labels-titles.json)")
    ap.add_argument("--titles", action="store_true",
                    help="score labels against NeurIPS titles (dev and held-out halves) instead of the sample")
    ap.add_argument("--show-dev", type=int, default=0, metavar="N",
                    help="with --titles: print the first N dev-split papers' titles and labels")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    t0 = time.perf_counter()
    if args.titles:
        out = args.out or Path("reports/labels-titles.json")
        titles = run_titles()
        titles["meta"] = {"command": "python -m bench.labels --titles", "machine": machine(),
                          "seconds": time.perf_counter() - t0}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(titles, indent=1, ensure_ascii=False))
        print(titles_to_text(titles, args.show_dev))
        return
    args.out = args.out or Path("reports/labels.json")
    result = run()
    result["meta"] = {"command": "python -m bench.labels", "machine": machine(),
                      "seconds": time.perf_counter() - t0}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    print(to_text(result))


if __name__ == "__main__":
    main()
