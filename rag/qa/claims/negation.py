"""The negation family: a negated word the source asserts (``negation``; a contrast "A instead of B" is
``contrast``), and a word the source denies that the statement asserts (``denial``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.qa.claims.lexicon import _BOUNDARY, CONTRAST, NEGATION, STATEMENT_CUES, WINDOW
from rag.qa.claims.opposites import _prefixed_opposites
from rag.qa.claims.phrases import _passive_denials
from rag.qa.claims.source import Source
from rag.qa.claims.words import (
    Word,
    _context,
    _head,
    _is_cue,
    _overlap,
    _quote,
    _restricted,
    _same_word,
    _shares,
    words,
)


def _followed(ws: Sequence[Word], j: int, terms: frozenset[str]) -> bool:
    """A word with these terms comes within three words after ``j``."""
    return any(ws[k].terms and _same_word(terms, ws[k].terms) for k in range(j + 1, min(len(ws), j + 4)))


_ABSOLUTE = {"whatsoever", "altogether"}


def _absolute(ws: Sequence[Word], i: int, h: int) -> bool:
    """The negation at ``i`` of the word at ``h`` is total ("no feedback at all", "none whatsoever", "not used
    at all"): then a source that only limits the word ("limited feedback", "only once") contradicts it."""
    for k in range(i + 1, min(len(ws), h + 4)):
        w = ws[k].surface
        if w in _BOUNDARY:
            return False
        if w in _ABSOLUTE or w == "at" and k + 1 < len(ws) and ws[k + 1].surface == "all":
            return True
    return False


def _negated_claims(ws: tuple[Word, ...], source: Source, cautions: list[str] | None = None) -> list[str]:
    """A negated word of the statement, where the source says the same thing (the occurrence sharing most words
    around it) without a negation or restriction. A contrast ("uses A instead of B", "rather than B") names what
    the statement sets aside, which a source mentions as the alternative as often as it asserts it: that goes to
    ``cautions`` (when given), not to the reasons."""
    reasons = []
    for i in range(len(ws)):
        if ws[i].surface not in STATEMENT_CUES or not _is_cue(ws, i):
            continue
        head = _head(ws, i)
        if head is None:
            continue
        h, terms = head
        if any(ws[k].surface in NEGATION for k in range(i + 1, h)):
            continue  # "does not fail on": a double negation asserts; the source's cue is checked below
        around = _context(ws, h) - terms
        found = [(_overlap(around, source.context(pos)), pos) for pos in source.occurrences(terms)
                 if _same_word(terms, source.words[pos[0]][pos[1]].terms)]
        if not found:
            continue
        best = max(n for n, _ in found)
        top = [pos for n, pos in found if n == best]
        strict = _absolute(ws, i, h)
        if not any(_restricted(source.words[si], j, strict) or (si, j) in source.denied_after for si, j in top):
            si, j = top[0]
            why = (f"says \u201c{_quote(ws, i, 1, 2)}\u201d where the abstract says "
                   f"\u201c{_quote(source.words[si], j)}\u201d")
            if ws[i].surface in CONTRAST:
                if cautions is not None:
                    cautions.append(why)
            else:
                reasons.append(why)
    return reasons


def _denied_claims(ws: tuple[Word, ...], source: Source, ev: int) -> list[str]:
    """A word the source negates (with the word after it), asserted bare by the statement about the same thing."""
    stated = frozenset().union(*(w.terms for w in ws)) if ws else frozenset()
    wide = 2 * WINDOW
    passive = {h for _, h in _passive_denials(ws)}  # the statement's own "… are neglected"
    for (si, i), j, terms, nxt in source.cues:
        if (nxt is None and si != ev) or not _shares(terms, stated) or (nxt is not None and not _shares(nxt, stated)):
            continue
        # The statement's words in the same order ("bias annotations"), not denied there.
        k = next((k for k, w in enumerate(ws) if w.terms and _shares(terms, w.terms)
                  and (nxt is None or _followed(ws, k, nxt)) and not _restricted(ws, k) and k not in passive), None)
        if k is None:
            continue
        sw = source.words[si]
        around = _context(ws, k, wide) - terms - (nxt or frozenset())
        here = _overlap(around, _context(sw, j, wide))
        if here < 1 and (si != ev or nxt is None):
            continue  # one word in common and nothing around it: a denial about other things
        # The source also asserts it (the same words), about things as close to the statement's (closer, when the
        # denial is in the evidence sentence and the assertion elsewhere): no contradiction.
        if any(_overlap(around, source.context(pos, wide)) >= here + (si == ev and pos[0] != si)
               and not _restricted(source.words[pos[0]], pos[1])
               and (nxt is None or _followed(source.words[pos[0]], pos[1], nxt))
               for pos in source.occurrences(terms)
               if pos != (si, j) and _same_word(terms, source.words[pos[0]][pos[1]].terms)):
            continue
        return [f"says \u201c{_quote(ws, k, 1, 2)}\u201d where the abstract says \u201c{_quote(sw, i, 1, 3)}\u201d"]
    return []


def negation_reasons(statement: str, source: Source, evidence: str) -> list[str]:
    """The statement negates what the source asserts, asserts what the source negates, or uses the prefixed
    opposite of the source's word about the same thing."""
    ws = words(statement)
    return (_negated_claims(ws, source) + _denied_claims(ws, source, source.evidence_index(evidence))
            + _prefixed_opposites(ws, source, source.evidence_index(evidence)))
