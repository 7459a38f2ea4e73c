"""The opposites family: a word that is the prefixed opposite of the source's about the same thing
("tractable" / "intractable", "convex" / "non-convex").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.qa.claims.lexicon import _BOUNDARY, _COORD, WINDOW
from rag.qa.claims.phrases import _flipped_terms
from rag.qa.claims.source import Source
from rag.qa.claims.words import Word, _context, _negated, _overlap, _quote, _same_word


def _qualified(ws: Sequence[Word], k: int) -> frozenset[str]:
    """The terms of the noun right after ``ws[k]`` (the next word, or the one after it), none if a clause mark or
    "and" / "or" comes first."""
    for x in range(k + 1, min(len(ws), k + 3)):
        if ws[x].surface in _BOUNDARY or ws[x].surface in _COORD:
            return frozenset()
        if ws[x].terms:
            return ws[x].terms
    return frozenset()


def _paired(ws: Sequence[Word], k: int) -> bool:
    """``ws[k]`` stands next to an "and" / "or": one of a pair ("convex and non-convex", "finite or infinite")."""
    return any(0 <= x < len(ws) and ws[x].surface in _COORD for x in (k - 1, k + 1))


def _swapped_qualifier(ws: Sequence[Word], k: int, base: frozenset[str], mine: frozenset[str],
                       source: Source) -> str | None:
    """The statement's word at ``k`` qualifies a noun that the source qualifies only with the word's prefixed
    opposite (``base``: the statement's word is the prefixed one, with ``mine`` its bare terms)."""
    noun = _qualified(ws, k)
    if not noun or _paired(ws, k):
        return None  # "non-convex and convex losses": both, of one noun
    opposite, same = None, False
    for si, j in source.occurrences(mine) + source.occurrences(mine, source.flipped):
        sw = source.words[si]
        flipped = _flipped_terms(sw[j].surface)
        if not _same_word(mine, flipped or sw[j].terms):
            continue
        if _paired(sw, j) and _same_word(noun, _qualified(sw, j + 2) | _qualified(sw, j)):
            same = True  # the source names both forms of the noun
        if not _same_word(noun, _qualified(sw, j)):
            continue
        if bool(flipped) == bool(base) and not _negated(sw, j):
            same = True
        elif bool(flipped) != bool(base) and not _negated(sw, j):
            opposite = (si, j)
    if opposite is None or same:
        return None
    return (f"says \u201c{_quote(ws, k, 1, 1)}\u201d where the abstract says "
            f"\u201c{_quote(source.words[opposite[0]], opposite[1], 1, 1)}\u201d")


def _written_in(surface: str, squashed: str) -> bool:
    """The word is in the source as written, hyphenated or not ("infinite-dimensional" / "infinite dimensional"):
    then it is the source's own word, whatever its prefix."""
    parts = [re.escape(p) for p in surface.split("-") if p]
    return bool(parts) and re.search(r"(?<!\w)" + r"\s*".join(parts) + r"(?!\w)", squashed) is not None


def _prefixed_opposites(ws: tuple[Word, ...], source: Source, ev: int = -1) -> list[str]:
    """"tractable" where the source says only "intractable" about the same words, or the other way round."""
    reasons = []
    wide = 2 * WINDOW
    said = frozenset().union(*(x.terms for x in ws if x.terms))  # every word's terms, and each prefixed word's base
    turned = frozenset().union(*(_flipped_terms(x.surface) for x in ws if x.terms))
    for k, w in enumerate(ws):
        if not w.terms or len(w.surface) < 4 or _negated(ws, k):
            continue
        base = _flipped_terms(w.surface)
        mine = base or w.terms
        others = said - w.terms if base else turned  # a hyphenated word's own parts are not its other form
        if _same_word(mine, others):
            # "finite or countably infinite", "convex and non-convex losses": both, as the direction rule; but
            # each form qualifying its own noun is judged on that noun ("a non-convex objective with convex
            # constraints" where the source says "a convex objective with non-convex constraints")
            why = _swapped_qualifier(ws, k, base, mine, source)
            if why:
                reasons.append(why)
            continue
        if _written_in(w.surface, source.squashed):
            continue
        if base:  # the statement's word is prefixed: the source's bare word is its opposite
            opposite_at = [p for p in source.occurrences(mine)
                           if not _flipped_terms(source.words[p[0]][p[1]].surface)
                           and _same_word(mine, source.words[p[0]][p[1]].terms)]
            same_at = [p for p in source.occurrences(mine, source.flipped)
                       if _same_word(mine, _flipped_terms(source.words[p[0]][p[1]].surface))]
        else:
            opposite_at = [p for p in source.occurrences(mine, source.flipped)
                           if _same_word(mine, _flipped_terms(source.words[p[0]][p[1]].surface))]
            if not opposite_at:
                continue
            same_at = [p for p in source.occurrences(mine)
                       if not _flipped_terms(source.words[p[0]][p[1]].surface)
                       and _same_word(mine, source.words[p[0]][p[1]].terms)]
        opposite_at = [p for p in opposite_at if not _negated(source.words[p[0]], p[1])]
        if not opposite_at:
            continue
        around = _context(ws, k, wide)
        opposite, where = max((_overlap(around, source.context(p, wide)), p) for p in opposite_at)
        same = max((_overlap(around, source.context(p, wide)) for p in same_at), default=-1)
        # Outside the evidence sentence, two words in common around them at least (as for direction words): one
        # shared word ties "variants" to an "invariant measure" elsewhere no more than to anything else.
        if opposite >= (1 if where[0] == ev else 2) and (same <= 0 or opposite >= same + 2):
            reasons.append(f"says \u201c{_quote(ws, k, 1, 1)}\u201d where the abstract says "
                           f"\u201c{_quote(source.words[where[0]], where[1], 1, 1)}\u201d")
    return reasons
