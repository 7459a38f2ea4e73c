"""The cited abstracts parsed once per answer (``Source``): words, values, formulas, folded names and the
indexes of where each term, prefixed opposite, direction word and negation cue stands.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import rag.qa.claims.notation as notation
from rag.analysis import analyze
from rag.qa.claims.forms import _parts, _squash
from rag.qa.claims.lexicon import _BOUNDARY, WINDOW
from rag.qa.claims.phrases import (
    Position,
    _comparisons,
    _equalities,
    _flipped_terms,
    _idiom,
    _passive_denials,
    _poles_of,
)
from rag.qa.claims.words import Word, _context, _head, _is_cue, words


# ---- the source, parsed once ---------------------------------------------------------------------
def _key(term: str) -> str:
    """Index key of a term: terms that ``term_in`` can match share their first five letters (or are equal)."""
    return term[:5]


@dataclass
class Source:
    """The cited abstracts as the rules read them, parsed once per answer and shared by its statements: words,
    values, formulas, folded names, and indexes of where each term, prefixed opposite, direction word and
    negation cue stands."""

    sentences: tuple[str, ...]
    extra: str  # title, label, year: their names and numbers count as the paper's own
    terms: frozenset[str]  # analysed terms of the abstracts, titles and labels, and of their folded symbols
    words: tuple[tuple[Word, ...], ...]  # per sentence
    stated: notation.Values
    derived: notation.Values
    formulas: tuple[tuple[str, ...], ...]
    squashed: str  # folded text for names with digits
    loose_formulas: tuple[tuple[str, ...], ...] = ()  # ``formulas`` read loosely (``notation.loose``)
    index: dict[str, list[Position]] = field(default_factory=dict)  # term key → where a word has that term
    flipped: dict[str, list[Position]] = field(default_factory=dict)  # … has it behind a negative prefix
    poles: dict[int, list[tuple[int, Position]]] = field(default_factory=dict)  # pole pair → (side, where)
    cues: list[tuple[Position, int, frozenset[str], frozenset[str] | None]] = field(default_factory=list)
    comparisons: list[tuple[frozenset[int], int, int, frozenset[str], frozenset[str]]] = field(default_factory=list)
    counts: list[tuple[float, frozenset[str]]] = field(default_factory=list)  # each count and what it counts
    # each "A … the same <what> as B" of a sentence: (sentence, (A, what, B, where "same" is))
    equalities: list[tuple[int, tuple[frozenset[str], frozenset[str], frozenset[str], int]]] = field(
        default_factory=list)
    denied_after: set[Position] = field(default_factory=set)  # subjects of a passive denial ("X is neglected")
    _parts: list[tuple[str, bool]] | None = None

    @classmethod
    def of(cls, sentences: Sequence[str], terms: frozenset[str] = frozenset(), extra: str = "") -> Source:
        """The cited abstracts parsed, shared between answers that cite the same sentences (a paper asked about
        again, a follow-up): parsing them is most of an answer's check (~7 ms a set), and a Source is never
        changed once built (``_parts`` is a lazily filled cache of a pure function of it)."""
        return _parsed_source(tuple(sentences), terms, extra)

    @classmethod
    def build(cls, sentences: Sequence[str], terms: frozenset[str] = frozenset(), extra: str = "") -> Source:
        texts = [*sentences, extra]
        folded = notation.fold_symbols(" ".join(texts))
        stated, derived = notation.source_values(texts)
        formulas = tuple(notation.canonical(f) for t in texts for _, _, f in notation.formula_spans(t))
        every = terms | frozenset(analyze(folded)) | frozenset(t for s in texts for t in analyze(s))
        kept = tuple(f for f in formulas if f)
        src = cls(tuple(sentences), extra, every, tuple(words(s) for s in sentences), stated, derived, kept,
                  _squash(folded), tuple(notation.loose(f) for f in kept))
        for si, sw in enumerate(src.words):
            for j, w in enumerate(sw):
                pos = (si, j)
                for t in w.terms:
                    src.index.setdefault(_key(t), []).append(pos)
                for t in _flipped_terms(w.surface):
                    src.flipped.setdefault(_key(t), []).append(pos)
                for pi, side in () if _idiom(sw, j) else _poles_of(w.surface):
                    src.poles.setdefault(pi, []).append((side, pos))
                if _is_cue(sw, j):
                    head = _head(sw, j)
                    if head is None or sw[head[0]].surface.isdigit():
                        continue
                    h, hterms = head
                    nxt = _head(sw, h) if h + 1 < len(sw) and sw[h + 1].surface not in _BOUNDARY else None
                    src.cues.append((pos, h, hterms, nxt[1] if nxt else None))
            for v, h in _passive_denials(sw):
                src.cues.append(((si, v), h, sw[h].terms, None))
                src.denied_after.add((si, h))
            src.comparisons += _comparisons(sw)
            src.equalities += [(si, e) for e in _equalities(sw)]
        src.counts = [(v, _counted(a, b)) for t in texts for v, a, b in notation.counts(t)]
        return src

    def parts(self) -> list[tuple[str, bool]]:
        if self._parts is None:
            self._parts = _parts([notation.fold_symbols(s) for s in (*self.sentences, self.extra)])
        return self._parts

    def occurrences(self, terms: Iterable[str], table: dict[str, list[Position]] | None = None) -> list[Position]:
        """Where a word shares one of ``terms`` (in ``table``: the term index, or the prefixed-opposite one)."""
        table = self.index if table is None else table
        return sorted({pos for t in terms for pos in table.get(_key(t), ())})

    def context(self, pos: Position, width: int = WINDOW) -> frozenset[str]:
        return _context(self.words[pos[0]], pos[1], width)

    def evidence_index(self, evidence: str) -> int:
        """The evidence sentence's index (-1 when it is none of the source's)."""
        return next((i for i, s in enumerate(self.sentences) if s == evidence), -1)


def _counted(first: str, second: str) -> frozenset[str]:
    """What a number counts: the terms of the two words after it, without verb forms ("5 models using" → model)."""
    return frozenset(t for w in (first, second) if w and not w.endswith(("ing", "ed")) for t in analyze(w))


@lru_cache(maxsize=128)  # ~140 KB per parsed abstract (tracemalloc): ~20-40 MB when full
def _parsed_source(sentences: tuple[str, ...], terms: frozenset[str], extra: str) -> Source:
    return Source.build(sentences, terms, extra)
