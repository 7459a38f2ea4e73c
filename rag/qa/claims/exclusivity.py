"""The exclusivity family: "only X" where the source names X together with another thing.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.qa.claims.lexicon import _BOUNDARY, _CONFINED, _COORD, _FILLER, _MODIFIER, _ONLY, _PHRASE_END, WINDOW
from rag.qa.claims.phrases import Position
from rag.qa.claims.source import Source
from rag.qa.claims.words import Word, _context, _overlap, _quote, _restricted, _shares


def _restriction_heads(ws: Sequence[Word]) -> list[int]:
    """Where a statement restricts to one thing: the content words of the four after "only" / "solely" (not "not
    only", nor "only if" / "only when"), or after "restricted to" / "limited to"."""
    out = []
    for i, w in enumerate(ws):
        if w.surface in _ONLY:
            if i and ws[i - 1].surface in {"not", "if", "the"}:
                continue
        elif not (w.surface in _CONFINED and i + 1 < len(ws) and ws[i + 1].surface == "to"):
            continue
        phrase: list[int] = []
        for k in range(i + 1, min(len(ws), i + 6)):
            s = ws[k].surface
            if s in _BOUNDARY or s in {"if", "when", "once", "after", "before", "than", "one", "single"}:
                break
            if s in _COORD:
                phrase = []  # "only A and B": the statement lists what it restricts to; no single thing
                break
            if phrase and s in _PHRASE_END:
                break  # the phrase is a noun phrase: "only [the signs] of the data", "restricted to [models] with"
            if s in _MODIFIER or s in _FILLER or not ws[k].terms or s[:1].isdigit() or len(s) < 2:
                continue
            phrase.append(k)  # each word of the restricted phrase: "only finite state spaces"
        out += phrase
    return out


def _coordinated(sw: Sequence[Word], j: int) -> int | None:
    """The index of the other member when the word at ``j`` is coordinated with one: "X and Y", "X or Y", "both X
    and Y", "Y and X" (members within two words of the "and" / "or", in the same clause)."""
    for k in range(j + 1, min(len(sw), j + 3)):
        if sw[k].surface in _BOUNDARY:
            break
        if sw[k].surface in _COORD:
            other = next((x for x in range(k + 1, min(len(sw), k + 4)) if sw[x].terms
                          and sw[x].surface not in _MODIFIER), None)
            if other is not None:
                return other
            break
    for k in range(j - 1, max(-1, j - 3), -1):
        if sw[k].surface in _BOUNDARY:
            break
        if sw[k].surface in _COORD:
            other = next((x for x in range(k - 1, max(-1, k - 3), -1) if sw[x].terms
                          and sw[x].surface not in _MODIFIER), None)
            if other is not None:
                return other
            break
    return None


def _restricted_claims(ws: tuple[Word, ...], source: Source, ev: int) -> list[str]:
    """"only X" / "restricted to X" where the source puts X together with another thing the statement leaves out
    ("learns a synthesis dictionary and an analysis dictionary", "both shared-memory and distributed-memory"), at
    the occurrences of X that share most words around them with the statement (at least one in the evidence
    sentence, two elsewhere), all of them coordinated so."""
    said = frozenset().union(*(w.terms for w in ws)) if ws else frozenset()
    for k in _restriction_heads(ws):
        terms = ws[k].terms
        around = _context(ws, k, 2 * WINDOW) - terms
        found: list[tuple[int, bool, Position]] = []
        for si, j in source.occurrences(terms):
            sw = source.words[si]
            if sw[j].terms != terms:
                continue  # the same word ("shared-memory"), not one sharing a part with it ("memory")
            other = _coordinated(sw, j)
            # the other member is something the statement does not name (its own words, not those it shares
            # with X: "distributed-memory" beside "shared-memory")
            paired = (other is not None and not _restricted(sw, j) and sw[other].surface != sw[j].surface
                      and not _shares(sw[other].terms - sw[j].terms, said))
            found.append((_overlap(around, source.context((si, j), 2 * WINDOW)), paired, (si, j)))
        if not found:
            continue
        best = max(n for n, _, _ in found)
        top = [(paired, pos) for n, paired, pos in found if n == best]
        if all(paired for paired, _ in top) and any(best >= (1 if pos[0] == ev else 2) for _, pos in top):
            si, j = top[0][1]
            return [f"says \u201c{_quote(ws, k, 2, 1)}\u201d where the abstract says "
                    f"\u201c{_quote(source.words[si], j, 1, 3)}\u201d"]
    return []
