"""The direction family: a direction word opposite to the source's about the same words ("increases" /
"decreases", "outperforms" / "underperforms"), a denied synonym, or a comparison whose sides are swapped.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.qa.claims.lexicon import _BOUNDARY, WINDOW
from rag.qa.claims.phrases import Position, _as_verb, _comparisons, _idiom, _poles_of
from rag.qa.claims.source import Source
from rag.qa.claims.words import (
    Word,
    _context,
    _negated,
    _overlap,
    _quote,
    _restricted,
    _same_word,
    _shares,
    set_aside,
    words,
)


def direction_reasons(statement: str, source: Source, evidence: str) -> list[str]:
    """A direction word of the statement is the opposite of the source's about the same words, and no
    same-direction word of the source is about as close to them: in the evidence sentence the opposite word
    must share more words around it than any same-direction one, elsewhere two more (and at least two)."""
    ws = words(statement)
    ev = source.evidence_index(evidence)
    wide = 2 * WINDOW
    reasons: list[str] = []
    done: set[int] = set()
    # "A is less stable than B" where the source says "B is more stable than A": the same comparison. B may stand
    # further back in the source than its comparison's side reaches ("the proposed method is shown to diagnose it
    # with fewer samples than existing approaches"): A being the source's other side is enough unless B is too
    # (in words A does not share: "random features" / "transferred features").
    converse = {c for at, pole, side, a, b in _comparisons(ws) for _, sp, sside, sa, sb in source.comparisons
                if sp == pole and sside != side and _shares(a - sa, sb)
                and (_shares(b - sb, sa) or not _shares(b - a - sa, sb)) for c in at}
    for j, w in enumerate(ws):
        for pi, side in _poles_of(w.surface):
            if pi in done or j in converse or set_aside(ws, j) or not _as_verb(ws, j) or _idiom(ws, j):
                continue
            if any((pi, 1 - side) in _poles_of(x.surface) for k, x in enumerate(ws) if not _idiom(ws, k)):
                continue  # "both strong and weak supervision", "memory shrinks as blocks grow": both directions
            around = _context(ws, j, wide)
            same, flip, margin = 0, 0, 1
            where: Position | None = None
            for their_side, pos in source.poles.get(pi, ()):
                sw = source.words[pos[0]]
                agrees = (their_side == side) != set_aside(sw, pos[1])
                n = _overlap(around, source.context(pos, wide))
                if agrees:
                    same = max(same, n)
                elif (n >= 2 or pos[0] == ev and n >= 1) and n > flip:
                    flip, where, margin = n, pos, 1 if pos[0] == ev else 2
            if where is not None and flip >= same + margin:
                done.add(pi)
                reasons.append(f"says \u201c{_quote(ws, j, 1, 2)}\u201d where the abstract says "
                               f"\u201c{_quote(source.words[where[0]], where[1], 1, 2)}\u201d")
    return reasons + _denied_synonyms(ws, source, ev) + _comparison_reasons(ws, source)


def _denied_synonyms(ws: Sequence[Word], source: Source, ev: int) -> list[str]:
    """A negated direction word of the statement ("does not improve accuracy") where the source asserts another
    word of the same side about the same words ("enhances accuracy"). The same word is the negation rule's."""
    wide = 2 * WINDOW
    for j, w in enumerate(ws):
        if not _negated(ws, j) or not _as_verb(ws, j) or _idiom(ws, j):
            continue
        around = _context(ws, j, wide)
        for pi, side in _poles_of(w.surface):
            asserted, other, where = 0, 0, None
            for their_side, pos in source.poles.get(pi, ()):
                sw = source.words[pos[0]]
                n = _overlap(around, source.context(pos, wide))
                if their_side == side and not _negated(sw, pos[1]) and not _restricted(sw, pos[1]):
                    if _same_word(w.terms, sw[pos[1]].terms):
                        asserted = -1  # the negation rule judges the same word
                        break
                    if (n >= 2 or pos[0] == ev and n >= 1) and n > asserted:
                        asserted, where = n, pos
                else:
                    other = max(other, n)
            if where is not None and asserted >= other + 1:
                return [f"says \u201c{_quote(ws, j, 2, 2)}\u201d where the abstract says "
                        f"\u201c{_quote(source.words[where[0]], where[1], 1, 2)}\u201d"]
    return []


def _crossed(a: frozenset[str], b: frozenset[str], sa: frozenset[str], sb: frozenset[str]) -> bool:
    """The statement's two sides share more words with the source's sides crosswise than straight: "A beats B"
    against "B beats A", not against "A' beats B'" whose sides happen to share a word crosswise ("the method …
    than existing approaches" against "our approach … than current methods")."""
    return _overlap(a, sb) + _overlap(b, sa) > _overlap(a, sa) + _overlap(b, sb)


def _comparison_reasons(ws: Sequence[Word], source: Source) -> list[str]:
    """"A is more effective than B" where the source says "B is more effective than A" ("A is less effective than
    B" is left to the direction rule, and "B is less effective than A" is the same comparison), or where it says
    "A has the same <what> as B" and the statement's comparison is about that <what>."""
    said = frozenset().union(*(w.terms for w in ws))
    for _, pole, side, a, b in _comparisons(ws):
        for _, sp, sside, sa, sb in source.comparisons:
            if sp == pole and sside == side and _shares(a - sa, sb) and _shares(b - sb, sa) and _crossed(a, b, sa, sb):
                return [f"compares the other way round from the abstract "
                        f"(\u201c{' '.join(x.surface for x in ws if x.surface not in _BOUNDARY)}\u201d)"]
        if any(sp == pole and _shares(b, sb) for _, sp, _, _, sb in source.comparisons):
            continue  # the source compares them this way too
        for si, (sa, what, sb, j) in source.equalities:
            if what and _shares(what, said) and _shares(a, sa) and _shares(b, sb):
                return [f"compares where the abstract says \u201c{_quote(source.words[si], j, 2, 4)}\u201d"]
    return []
