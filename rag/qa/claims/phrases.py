"""Phrases the rules and the parsed source share: direction poles of a word, prefixed opposites, passive
denials ("X is neglected"), comparisons ("A is better than B"), equalities ("the same X as B") and idioms.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from rag.analysis import analyze
from rag.qa.claims.lexicon import _ANY_POLE, _BOUNDARY, _COORD, _FILLER, _NOUN_TOO, _OBJECT_START, _POLE_RE
from rag.qa.claims.words import Word, _negated, _prefixed


@lru_cache(maxsize=16384)
def _poles_of(surface: str) -> tuple[tuple[int, int], ...]:
    """The (pole pair, side) a word belongs to: "increases" → ((0, 0),). Most words are of no pole: one match
    against every pole at once says so (matching each pole alone made most of a source's parse)."""
    if not _pole_match(_ANY_POLE, surface):
        return ()
    return tuple((pi, side) for pi, pair in enumerate(_POLE_RE) for side, p in enumerate(pair)
                 if _pole_match(p, surface))


@lru_cache(maxsize=16384)
def _flipped_terms(surface: str) -> frozenset[str]:
    """The terms of the word a negative prefix turns around ("intractable" → tractabl), or none."""
    rest = _prefixed(surface)
    return frozenset(analyze(rest)) if rest else frozenset()


Position = tuple[int, int]  # (sentence, word)

# A passive denial after what it denies: "radiation and convection effects are neglected", "X is not considered".
_PASSIVE_DENIED = {"neglected", "ignored", "omitted", "disregarded", "excluded"}
_PASSIVE_NOT = {"considered", "included", "modelled", "modeled", "treated", "taken"}
_BE = {"is", "are", "was", "were", "been", "be"}


def _passive_denials(ws: Sequence[Word]) -> list[tuple[int, int]]:
    """(where the denying verb is, each content word of its subject): the subject runs back from "are neglected"
    / "is not considered" to the clause's start (at most six words)."""
    out = []
    for v, w in enumerate(ws):
        if v < 2:
            continue
        denied = (w.surface in _PASSIVE_DENIED and ws[v - 1].surface in _BE
                  or w.surface in _PASSIVE_NOT and ws[v - 1].surface == "not" and ws[v - 2].surface in _BE)
        if not denied:
            continue
        start = v - 1 if ws[v - 1].surface in _BE else v - 2
        for h in range(start - 1, max(-1, start - 7), -1):
            s = ws[h].surface
            if s in _BOUNDARY or s in {"that", "which", "where", "while", "whereas", "but"}:
                break
            if ws[h].terms and s not in _FILLER and s not in _COORD:
                out.append((v, h))
    return out


def _as_verb(ws: Sequence[Word], j: int) -> bool:
    """``ws[j]`` is not a noun-or-verb word used as a noun: "rewards the increase" yes, "computing rewards," no."""
    if ws[j].surface not in _NOUN_TOO:
        return True
    return j + 1 < len(ws) and ws[j + 1].surface in _OBJECT_START


def _pole_match(pattern: re.Pattern[str], surface: str) -> bool:
    """The word, or a part of a hyphenated one ("lower-bound"), is of this pole; "non-…" words are not, nor
    "well-" compounds ("well-known", "well-posed" say nothing of quality)."""
    if pattern.fullmatch(surface):
        return True
    parts = surface.split("-")
    return (len(parts) > 1 and parts[0] not in {"non", "un", "in"}
            and any(pattern.fullmatch(p) for p in parts if p != "well"))


_LIKENESS = {"same", "identical", "different", "distinct"}
_DETERMINERS = {"the", "a", "an", "that", "this", "these", "those"}
_RELATING = {"as", "from", "than", "between", "with"}  # and "to" after "identical"


def _attributive(ws: Sequence[Word], j: int) -> bool:
    """``ws[j]`` ("same", "different") only qualifies the noun after it: no relating word ("as", "from", "than"…)
    follows within four words of the clause, and it is not a predicate ("are the same", "is different")."""
    prev = ws[j - 1].surface if j else ""
    if prev in {"is", "are", "was", "were", "be", "been", "remain", "remains"} or (
            prev == "the" and j > 1 and ws[j - 2].surface in {"is", "are", "was", "were", "be", "remain", "remains"}):
        return False
    for k in range(j + 1, min(len(ws), j + 5)):
        s = ws[k].surface
        if s in _BOUNDARY:
            break
        if s in _RELATING or s == "to" and ws[j].surface == "identical":
            return False
    return j + 1 < len(ws) and bool(ws[j + 1].terms)


def _idiom(ws: Sequence[Word], j: int) -> bool:
    """``ws[j]`` is a pole word inside an idiom that has no direction: "as well as", "as well", and "well" before a
    participle ("well known", "well suited", "well understood", "well short of": degree, not quality); "reduces to
    the …" (is equivalent to, not a decrease); and "same" / "different" before a noun with nothing it is compared
    with ("applies the same idea", "different divergences": no "as …", "from …", "than …")."""
    w = ws[j].surface
    if w in _LIKENESS:
        return _attributive(ws, j)
    if re.fullmatch(r"reduc(?:e|es|ed|ing)", w):
        return (j + 2 < len(ws) and ws[j + 1].surface == "to"
                and (ws[j + 2].surface in _DETERMINERS or ws[j + 2].surface.endswith("ing")))
    if w != "well":
        return False
    nxt = ws[j + 1].surface if j + 1 < len(ws) else ""
    return (j > 0 and ws[j - 1].surface == "as" or nxt in {"as", "short", "below", "above", "beyond", "within"}
            or nxt.endswith(("ed", "en", "wn", "ood")))


_MORE = next(i for i, (a, _) in enumerate(_POLE_RE) if a.fullmatch("more"))


def _comparisons(ws: Sequence[Word]) -> list[tuple[frozenset[int], int, int, frozenset[str], frozenset[str]]]:
    """Each "A <comparative> … than B": (where its direction words are, pole pair, side, A's terms, B's terms).
    "more stable" and "less stable" are one pair (stable) on opposite sides; "more effective" is more/less."""
    out: list[tuple[frozenset[int], int, int, frozenset[str], frozenset[str]]] = []
    for t, w in enumerate(ws):
        if w.surface != "than" or t + 1 < len(ws) and ws[t + 1].surface[:1].isdigit():
            continue  # "more than 82 million nodes" is a quantity
        at: list[int] = []
        for c in range(t - 1, max(-1, t - 9), -1):
            if ws[c].surface in _BOUNDARY:
                break
            if _poles_of(ws[c].surface):
                at.append(c)
            elif at:
                break
        if not at:
            continue
        first = min(at)
        content = [c for c in at if _poles_of(ws[c].surface)[0][0] != _MORE]
        pole = _poles_of(ws[content[0]].surface)[0][0] if content else _MORE
        side = sum(_poles_of(ws[c].surface)[0][1] for c in at) % 2 ^ _negated(ws, first)
        before, after = _sides(ws, first, t)
        if before and after:
            out.append((frozenset(at), pole, side, before, after))
    return out


def _sides(ws: Sequence[Word], left: int, right: int) -> tuple[frozenset[str], frozenset[str]]:
    """The terms of the up to 5 words before ``left`` and the up to 3 after ``right``, each side stopping at a
    clause boundary: the two things a comparison or an equality relates."""
    before: set[str] = set()
    for x in range(left - 1, max(-1, left - 6), -1):
        if ws[x].surface in _BOUNDARY:
            break
        before |= ws[x].terms
    after: set[str] = set()
    for x in range(right + 1, min(len(ws), right + 4)):
        if ws[x].surface in _BOUNDARY or ws[x].surface in {"and", "while", "but", "which", "on", "in"}:
            break
        after |= ws[x].terms
    return frozenset(before), frozenset(after)


def _equalities(ws: Sequence[Word]) -> list[tuple[frozenset[str], frozenset[str], frozenset[str], int]]:
    """Each "A … the same <what> as B": (A's terms, what's terms, B's terms, where "same" is)."""
    out = []
    for t, w in enumerate(ws):
        if w.surface not in {"same", "identical"}:
            continue
        k = next((k for k in range(t + 1, min(len(ws), t + 5)) if ws[k].surface in {"as", "to"}), None)
        if k is None or any(ws[x].surface in _BOUNDARY for x in range(t + 1, k)):
            continue
        what = frozenset().union(*(ws[x].terms for x in range(t + 1, k)))
        before, after = _sides(ws, t, k)
        if before and after:
            out.append((before, what, after, t))
    return out
