"""Why these papers: what put each cited paper in an answer, the close ones left out, and the reader's steering.

Steering (``steer``): a *pinned* paper must be considered, so it joins the candidates (first, in the order
pinned) even when retrieval did not rank it; an *excluded* one is removed before generation, so it is never
cited. Both act on the turn they are given for, and show in the answer's scope (``Answer.filters``: ``pinned``,
``excluded``).

Explanation (``explain``): for each cited paper, the question's words it matches (what BM25 sees of it: title,
authors, categories, abstract), its semantic closeness (the cosine of its closest chunk, and its rank by it),
its place in the fused ranking, and what scoped it (the filters, the collection, a pin); then the retrieved
papers that were not cited, best first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rag.analysis import analyze
from rag.answer import Answer, AppliedFilters, Citation, Why, filter_phrases
from rag.index.lexical import paper_text
from rag.qa.retrieval import PaperHit
from rag.records import StoredPaper

MAX_NOT_CITED = 5  # the close papers left out that an answer lists
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.U)


def steer(hits: list[PaperHit], read: Callable[[list[str]], list[StoredPaper]], pin: Sequence[str],
          exclude: Sequence[str], k: int) -> list[PaperHit]:
    """``hits`` without the excluded papers and cut to ``k``, with the pinned ones first (``read`` when retrieval
    did not find them: ``Retriever.read_papers``; a pinned id not stored is skipped)."""
    banned = set(exclude)
    kept = [h for h in hits if h.paper_id not in banned][:k]
    wanted = [p for p in dict.fromkeys(pin) if p not in banned]
    if not wanted:
        return kept
    found = {h.paper_id: h for h in hits if h.paper_id in wanted}
    missing = [p for p in wanted if p not in found]
    if missing:
        found.update((p.id, PaperHit(p.id, 0.0, paper=p)) for p in read(missing))
    pinned = [found[p] for p in wanted if p in found]
    return pinned + [h for h in kept if h.paper_id not in found]


def scope_filters(filters: AppliedFilters, pin: Sequence[str], exclude: Sequence[str]) -> AppliedFilters:
    """The applied filters with the pinned and excluded ids added when there are any."""
    out = AppliedFilters(**filters)
    if pin:
        out["pinned"] = list(dict.fromkeys(pin))
    if exclude:
        out["excluded"] = list(dict.fromkeys(exclude))
    return out


def matched_words(question: str, hit: PaperHit) -> list[str]:
    """The question's words (as typed, first occurrence, case-folded) whose terms the paper holds."""
    terms = set(analyze(paper_text(hit.paper)))
    out: dict[str, None] = {}
    for word in _WORD.findall(question):
        stems = analyze(word)
        if stems and all(s in terms for s in stems):
            out.setdefault(word.casefold(), None)
    return list(out)


def explain(question: str, hits: Sequence[PaperHit], citations: Sequence[Citation], filters: AppliedFilters,
            pin: Sequence[str]) -> tuple[list[Why], list[Why]]:
    """``(why, not_cited)``: one entry per citation in [n] order, then the uncited hits, best first."""
    scope = [p for p in filter_phrases(filters) if not p.endswith(("pinned", "excluded"))]
    dense_order = sorted((h for h in hits if h.dense is not None), key=lambda h: -float(h.dense or 0.0))
    dense_rank = {h.paper_id: i + 1 for i, h in enumerate(dense_order)}
    pinned = set(pin)

    def entry(rank: int, hit: PaperHit, n: int | None) -> Why:
        return Why(paper_id=hit.paper_id, title=hit.paper.heading, n=n, rank=rank, score=round(float(hit.score), 6),
                   matched=matched_words(question, hit),
                   dense=None if hit.dense is None else round(float(hit.dense), 4),
                   dense_rank=dense_rank.get(hit.paper_id),
                   scope=(["pinned"] if hit.paper_id in pinned else []) + scope)

    ranked = {h.paper_id: (i + 1, h) for i, h in enumerate(hits)}
    why = [entry(*ranked[c.paper_id], c.n) for c in citations if c.paper_id in ranked]
    cited = {c.paper_id for c in citations}
    left = [entry(i + 1, h, None) for i, h in enumerate(hits) if h.paper_id not in cited]
    return why, left[:MAX_NOT_CITED]


def why_line(w: Why) -> str:
    """One short line on a paper: "matches attention, transformer · dense 0.62 (#1) · rank 1 · whole library"."""
    parts = ["matches " + ", ".join(w["matched"]) if w["matched"] else "no question word matched"]
    if w["dense"] is not None:
        parts.append(f"dense {w['dense']:.2f} (#{w['dense_rank']})")
    else:
        parts.append("not found by the dense side")
    parts.append(f"rank {w['rank']}")
    parts.append("; ".join(w["scope"]) or "whole library")
    return " · ".join(parts)


def why_text(why: Sequence[Why], not_cited: Sequence[Why]) -> list[str]:
    """The terminal's "Why these papers" block (``ask --why``): one line per cited paper, one per close paper
    left out."""
    lines = ["", "Why these papers:"]
    lines += [f"  [{w['n']}] {why_line(w)}" for w in why]
    lines += [f"  not cited: {w['title']} ({w['paper_id']}) · {why_line(w)}" for w in not_cited]
    return lines


def steering_command(line: str, pin: list[str], exclude: list[str], last: Answer | None) -> str | None:
    """A chat's ``/pin N|ID`` or ``/exclude N|ID`` (N: a citation of the last answer): the lists updated and
    what changed in words; ``/pin`` or ``/exclude`` alone clears that list. None when ``line`` is not one."""
    name, _, arg = line.strip().partition(" ")
    if name not in ("/pin", "/exclude"):
        return None
    target, other = (pin, exclude) if name == "/pin" else (exclude, pin)
    arg = arg.strip()
    if not arg:
        target.clear()
        return f"({name[1:]} list cleared)"
    paper_id = arg
    if arg.isdigit():
        cited = {c.n: c.paper_id for c in last.citations} if last is not None else {}
        if int(arg) not in cited:
            return f"(no [{arg}] in the last answer: give a cited number or a paper id)"
        paper_id = cited[int(arg)]
    if paper_id in other:
        other.remove(paper_id)
    if paper_id not in target:
        target.append(paper_id)
    return f"({'pinned' if name == '/pin' else 'excluded'} {paper_id} for the next questions)"
