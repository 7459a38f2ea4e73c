"""A sentence as the rules read it: ``words`` (surface form and analysed terms), what a negation cue governs
(``_head``), whether a word is negated or restricted, and the context of words around a word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from rag.analysis import analyze
from rag.qa.claims.lexicon import (
    _ADJECTIVE_END,
    _ANY_POLE,
    _BOUNDARY,
    _CARRIER,
    _FILLER,
    _NEG_PREFIX,
    _NEGATED_AFTER,
    _NOT_PREFIXED,
    _PHRASAL,
    _TOKEN,
    CUES,
    DENIAL,
    NEGATION,
    RESTRICTIVE,
    SCOPE,
    SETTING_ASIDE,
    WINDOW,
)
from rag.qa.evidence import term_in


@dataclass(frozen=True)
class Word:
    surface: str  # lower-cased; a boundary mark ("," ";" …) has no terms
    terms: frozenset[str]  # its analysed terms (a stop word has none)


# Verbs of one meaning, so a denial of one is read against an assertion of another ("needs no labels" against
# "requires labels"): each word of a group also carries the group's first word's term.
_SYNONYM_GROUPS = (("require", "need", "necessitate"), ("guarantee", "ensure", "assure"),
                   ("distinguish", "differentiate", "discriminate"), ("use", "employ"))
_SYNONYM = {t: analyze(g[0])[0] for g in _SYNONYM_GROUPS for w in g for t in analyze(w)}


def _terms(surface: str) -> frozenset[str]:
    terms = analyze(surface)
    return frozenset([*terms, *(_SYNONYM[t] for t in terms if t in _SYNONYM)])


_SPELLED_INITIAL = re.compile(r"\((\w)\)(?=\w)")


@lru_cache(maxsize=16384)
def words(text: str) -> tuple[Word, ...]:
    """The text's words, lower-cased, with their analysed terms and clause marks; "doesn't" → "does", "not"."""
    text = text.replace("\u2019", "'").casefold()
    text = _SPELLED_INITIAL.sub(r"\1", text)  # "(S)treaming, (A)synchronous" spell words out: "asynchronous"
    text = _PHRASAL.sub(lambda m: "-".join(m.group(0).split()), text)
    out: list[Word] = []
    for w in _TOKEN.findall(text):
        if w in _BOUNDARY:
            out.append(Word(w, frozenset()))
        elif w.endswith("n't"):
            out += [Word(w[:-3], _terms(w[:-3])), Word("not", frozenset())]
        elif w == "cannot":
            out += [Word("can", frozenset()), Word("cannot", frozenset())]
        else:
            out.append(Word(w, _terms(w)))
    return tuple(out)


def _is_cue(ws: Sequence[Word], i: int) -> bool:
    """``ws[i]`` negates what follows: "not" but not "not only", "no" but not "no less", "rather" before "than"."""
    w = ws[i].surface
    if w not in CUES:
        return False
    nxt = ws[i + 1].surface if i + 1 < len(ws) else ""
    prev = ws[i - 1].surface if i else ""
    if w == "not" and (nxt in {"only", "just", "merely", "necessarily"} or prev in {"or", "if", "whether"}):
        return False
    if w == "no" and nxt in {"less", "more", "longer", "matter", "doubt"}:
        return False
    if w == "rather" and nxt != "than" or w == "instead" and nxt != "of":
        return False
    if w in {"little", "few"} and prev in {"a", "quite", "as", "so", "too"}:
        return False
    return not (w == "nor" and prev == "neither")


_ADVERBIAL = {"general", "practice", "principle", "theory", "particular", "turn", "addition", "fact"}


def _adverbial(ws: Sequence[Word], j: int) -> bool:
    """``ws[j]`` is the noun of an adverbial phrase ("cannot in general be improved", "does not in practice
    need"): it says how the claim holds, not what is denied."""
    return ws[j].surface in _ADVERBIAL and j > 0 and ws[j - 1].surface == "in"


def _head(ws: Sequence[Word], i: int) -> tuple[int, frozenset[str]] | None:
    """The first content word a cue at ``i`` negates, as (index, terms); none past a clause mark."""
    deny = ws[i].surface in DENIAL
    for j in range(i + 1, min(len(ws), i + 1 + SCOPE + 3)):
        w = ws[j].surface
        if w in _BOUNDARY:
            return None
        if w in _FILLER or w in NEGATION or (deny and w in _CARRIER) or _adverbial(ws, j):
            continue
        return (j, ws[j].terms) if ws[j].terms else None
    return None


def _negated(ws: Sequence[Word], j: int) -> bool:
    """A negation cue stands within SCOPE words before ``j``."""
    return any(ws[i].surface in NEGATION and _is_cue(ws, i) for i in range(max(0, j - SCOPE - 1), j))


def set_aside(ws: Sequence[Word], j: int) -> bool:
    """``ws[j]`` is negated, or set aside by a verb within SCOPE words before it ("skips explicit
    orthogonalization" says nothing of what "explicit" is opposite to)."""
    return _negated(ws, j) or any(ws[i].surface in SETTING_ASIDE for i in range(max(0, j - SCOPE - 1), j))


def _prefixed(surface: str) -> str | None:
    """The word a negative prefix turns around ("intractable" → "tractable", "non-convex" → "convex"), if any."""
    m = _NEG_PREFIX.fullmatch(surface)
    if not m or _NOT_PREFIXED.fullmatch(surface) or _NOT_PREFIXED.fullmatch(surface.split("-")[0]):
        return None
    prefix, rest = m.group(1), m.group(2).lstrip("-")
    if prefix.startswith("non"):
        return rest if len(rest) >= 3 else None
    if prefix == "un":
        return rest if len(rest) >= 5 else None
    return rest if len(rest) >= 5 and _ADJECTIVE_END.fullmatch(rest) else None


def _restricted(ws: Sequence[Word], j: int, strict: bool = False) -> bool:
    """The word at ``j`` is denied or restricted: a restrictive word shortly before it ("not only" restricts
    nothing; the negation closest to it counts, and a negation of a negation asserts: "does not fail on"), a
    negating one right after it ("is not needed", "annotation-free"), or a negative prefix of its own.
    ``strict``: denied only; a restriction ("limited", "only", "hard") does not count."""
    closest = -1
    for k in range(max(0, j - WINDOW - 1), j):
        w = ws[k].surface
        if w in NEGATION and _is_cue(ws, k):
            closest = k
        elif (w in RESTRICTIVE and w not in NEGATION and (w not in CUES or _is_cue(ws, k))
              and not (strict and w not in CUES)
              and not (w in {"only", "merely", "solely"} and k and ws[k - 1].surface == "not")):
            return True
    if closest >= 0:
        before = closest - 1
        while before >= 0 and ws[before].surface in _FILLER:
            before -= 1
        if not (before >= 0 and ws[before].surface in NEGATION and _is_cue(ws, before)):
            return True
    for k in range(j + 1, min(len(ws), j + 4)):
        if ws[k].surface in _BOUNDARY:
            break
        if ws[k].surface in _NEGATED_AFTER:
            return True
    surface = ws[j].surface
    return surface.endswith("-free") or _prefixed(surface) is not None


@lru_cache(maxsize=16384)
def _word_terms(surface: str) -> frozenset[str]:
    """A word's terms for comparing contexts: a hyphenated word's parts ("rank-1" → rank), not its joined form,
    and no bare numbers, so one word counts once."""
    return frozenset(t for t in analyze(surface.replace("-", " ")) if not t.isdigit())


@lru_cache(maxsize=65536)
def _context(ws: tuple[Word, ...], j: int, width: int = WINDOW) -> frozenset[str]:
    """Content terms of the ``width`` words either side of ``j``, clause marks not counted (the word itself,
    cues and pole words excluded)."""
    out: set[str] = set()
    for step in (-1, 1):
        k, seen = j + step, 0
        while 0 <= k < len(ws) and seen < width:
            s = ws[k].surface
            if s not in _BOUNDARY:
                seen += 1
                if s not in _FILLER and s not in CUES and not _ANY_POLE.fullmatch(s):
                    out |= _word_terms(s)
            k += step
    return frozenset(out)


def _overlap(a: Iterable[str], b: frozenset[str]) -> int:
    return sum(1 for t in a if term_in(t, b))


def _shares(a: Iterable[str], b: frozenset[str]) -> bool:
    return any(term_in(t, b) for t in a)


def _same_word(a: frozenset[str], b: frozenset[str]) -> bool:
    return any(term_in(t, b) or term_in(u, a) for t in a for u in b)


def _quote(ws: Sequence[Word], j: int, before: int = 2, after: int = 3) -> str:
    return " ".join(w.surface for w in ws[max(0, j - before):j + after + 1] if w.surface not in _BOUNDARY)
