"""The names a question uses (specific terms: methods, languages, datasets), and which of them a text never mentions.

A question is carried by its specific terms: names, languages, datasets, methods ("Transformer",
"English-German", "WMT14", "AlphaFold", "DPO"). An answer whose evidence mentions none of what such a term
names answers another question ("BLEU on English-French" for one about English-German), so the extractive
answer refuses it and says what is missing.

A specific term is a name the entity pattern finds (acronym, CamelCase, a name with digits, ``rag.qa.evidence``)
or a capitalised word inside a sentence (a proper noun: "Transformer", "German"); a hyphenated compound of them
("English-German") is one term. Matching is by surface form, not stem ("Transformer" is not "transformation"):
case-insensitive, with a plural or possessive ending, punctuation inside a word ignored ("WMT'14" holds "WMT14"),
an acronym found as the initials of consecutive words ("GNNs": "graph neural networks"), and a compound held
when each of its parts is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from rag.analysis import fold
from rag.qa.evidence import ENTITY, question_stopterms

# A word, hyphenated or dashed pieces included ("Prox-SVRG", "English-German", "rank-1").
_QWORD = re.compile(r"[^\W_][\w'\u2019]*(?:[\-\u2010-\u2015][^\W_][\w'\u2019]*)*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\"\u201c(]\s*)$")
_PARTS = re.compile(r"[\-\u2010-\u2015/]")
_WORD = re.compile(r"[^\W_]+(?:['\u2019.\-\u2010-\u2015][^\W_]+)*")


@dataclass(frozen=True)
class SpecificTerm:
    """A term as the question writes it, and its parts (lower case, one per hyphenated piece)."""

    text: str
    parts: tuple[str, ...]


def _parts(text: str) -> tuple[str, ...]:
    out = []
    for piece in _PARTS.split(fold(text)):
        key = re.sub(r"[^0-9a-z]", "", piece)
        if key:
            out.append(key)
    return tuple(out)


def specific_terms(question: str) -> list[SpecificTerm]:
    """The names a question uses, in order, without duplicates (see the module docstring)."""
    stop = question_stopterms()
    found: list[str] = []
    for m in _QWORD.finditer(question):
        word = re.sub(r"['\u2019]s$", "", m.group(0))
        named = bool(ENTITY.search(word)) or any(p[:1].isupper() and p[1:].islower() and len(p) >= 3
                                                 for p in _PARTS.split(word)[1:])
        proper = word[:1].isupper() and not _SENTENCE_START.search(question[:m.start()])
        if named or proper:
            found.append(word)
    out: list[SpecificTerm] = []
    seen: set[tuple[str, ...]] = set()
    for text in found:
        parts = tuple(p for p in _parts(text) if p not in stop)
        if not parts or parts in seen:
            continue
        seen.add(parts)
        out.append(SpecificTerm(text, parts))
    return out


@dataclass(frozen=True)
class TextWords:
    """A text's words as lower-case keys: every word, every hyphen/apostrophe compound joined ("wmt14",
    "englishfrench"), and the sequence of words (for acronyms)."""

    keys: frozenset[str]
    sequence: tuple[str, ...]


@lru_cache(maxsize=4096)
def text_words(text: str) -> TextWords:
    keys: set[str] = set()
    seq: list[str] = []
    for m in _WORD.finditer(fold(text)):
        word = m.group(0)
        pieces = [p for p in re.split(r"['\u2019.\-\u2010-\u2015]", word) if p]
        keys.update(pieces)
        keys.add(re.sub(r"[^0-9a-z]", "", word))
        seq.extend(pieces)
    return TextWords(frozenset(keys), tuple(seq))


def _variants(key: str) -> tuple[str, ...]:
    """A key with and without a plural or possessive ending."""
    out = [key]
    for end in ("es", "s"):
        if key.endswith(end) and len(key) - len(end) >= 2:
            out.append(key[: -len(end)])
    out.append(key + "s")
    return tuple(out)


def _acronym_in(key: str, words: tuple[str, ...]) -> bool:
    """``key`` (an acronym, e.g. "gnn") is the initials of consecutive words ("graph neural network")."""
    n = len(key)
    if n < 2 or n > 6 or not key.isalpha():
        return False
    return any(all(words[i + j][:1] == key[j] for j in range(n)) for i in range(len(words) - n + 1))


def _part_in(part: str, words: TextWords, acronym: bool) -> bool:
    if any(v in words.keys for v in _variants(part)):
        return True
    if acronym:
        base = part[:-1] if part.endswith("s") and len(part) > 2 else part
        return _acronym_in(base, words.sequence)
    return False


def mentioned(term: SpecificTerm, texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` mentions the term: the whole term (joined), or every one of its parts."""
    acronym = term.text.rstrip("s").isupper()
    joined = "".join(term.parts)
    for text in texts:
        words = text_words(text)
        if any(v in words.keys for v in _variants(joined)):
            return True
        if all(_part_in(p, words, acronym) for p in term.parts):
            return True
    return False


def missing_terms(question: str, texts: Iterable[str]) -> list[SpecificTerm]:
    """The question's specific terms that none of ``texts`` mentions."""
    texts = list(texts)
    return [t for t in specific_terms(question) if not mentioned(t, texts)]
