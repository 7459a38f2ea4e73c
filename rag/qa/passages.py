"""Full-text evidence in answers: which text of a paper an answer quotes (its abstract or one of its passages),
and the page a citation then points to ("[2, p. 5]").

``choose_evidence`` runs after retrieval: for each hit with candidate passages (``PaperHit.passages``), the
abstract and each passage are scored against the question by the scorer the answer itself uses (each text's
best sentence: embedding cosine plus idf-weighted term overlap); a passage that scores higher than the abstract
becomes the paper's evidence, in ``paper.abstract``, so the generator, the guard and the claim checks read it as
they read an abstract. One paper is still one hit, cited once. ``cite_pages`` runs after verification: a citation
whose evidence is a passage gets its pages and section and its markers in the text name the page; every citation
says whether its paper has full text. A passage whose page is unknown (page 0: a text without page breaks)
is cited without one, its ``page`` null.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from rag.answer import Citation
from rag.qa.evidence import EvidenceIndex, QuestionScorer
from rag.qa.retrieval import PaperHit

_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def choose_evidence(hits: Sequence[PaperHit], index: EvidenceIndex, scorer: QuestionScorer) -> None:
    """Put each hit's best evidence in ``hit.paper.abstract`` (see the module doc); hits without passages keep
    their abstract untouched."""
    for hit in hits:
        if not hit.passages or hit.evidence is not None:
            continue
        variants = [hit.paper] + [replace(hit.paper, abstract=p.text) for p in hit.passages]
        rows = scorer.sentences(index.papers(variants))
        best = [max((s.score for s in row), default=0.0) for row in rows]
        pick = max(range(len(best)), key=lambda i: (best[i], -i))  # a tie keeps the abstract
        if pick:
            hit.abstract, hit.evidence = hit.paper.abstract, hit.passages[pick - 1]
            hit.paper = variants[pick]


def pages(first: int, last: int) -> str:
    """"p. 5" or "pp. 5–6"."""
    return f"p. {first}" if last <= first else f"pp. {first}\u2013{last}"


def cite_pages(text: str, citations: Sequence[Citation], hits: Sequence[PaperHit]) -> str:
    """Set each citation's full-text fields from its hit and return ``text`` with a passage's citations marked
    with their page ("[2]" → "[2, p. 5]"; "[1, 2]" → "[1; 2, p. 5]"). Text and citations of answers without
    passage evidence are returned unchanged (apart from ``coverage``)."""
    by_id = {h.paper_id: h for h in hits}
    paged: dict[int, str] = {}
    for c in citations:
        hit = by_id.get(c.paper_id)
        if hit is None:
            continue
        c.coverage = "full text" if hit.full_text else "abstract only"
        ev = hit.evidence
        if ev is None:
            continue
        c.section, c.passage, c.abstract = ev.ref.section or None, ev.text, hit.abstract or c.abstract
        if ev.ref.page_start > 0:  # 0: a text without page breaks (Zotero's cache of it), cited without a page
            c.page, c.page_end = ev.ref.page_start, ev.ref.page_end
            paged[c.n] = pages(ev.ref.page_start, ev.ref.page_end)
    if not paged:
        return text

    def mark(m: re.Match[str]) -> str:
        numbers = [int(x) for x in re.split(r"\s*,\s*", m.group(1))]
        if not any(n in paged for n in numbers):
            return m.group(0)
        return "[" + "; ".join(f"{n}, {paged[n]}" if n in paged else str(n) for n in numbers) + "]"

    return _MARKER.sub(mark, text)
