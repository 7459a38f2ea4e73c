"""Text analysis shared by indexing and answering: BM25 terms (Snowball-stemmed, stop-worded), and the folded
forms of author and category names that filters match on.

A leaf: it imports nothing from rag, so the lexical index, the filter catalog, ingest and the question side all
analyse text the same way without importing one another.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any, Literal

TOKEN = re.compile(r"[^\W_]+", re.U)  # a word of a name (the filter catalog and question filters tokenise alike)
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.U)  # a BM25 word: hyphenated and apostrophe forms kept whole

# Lucene's English stop set, the one bm25s ships as ``bm25s.stopwords.STOPWORDS_EN`` (a test keeps them equal):
# kept here so that analysing a question does not import bm25s (and scipy) in a process that only answers.
STOPWORDS = frozenset({"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
                       "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
                       "they", "this", "to", "was", "will", "with"})


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # built on first use: importing this module stays free of the C extension

    return Stemmer.Stemmer("english")


def analyze(text: str) -> list[str]:
    """Lower-cased, accent-free, stop-worded, stemmed terms ("Erdős" is "erdo", as "Erdos"); hyphenated words also
    give their parts."""
    words: list[str] = []
    for w in _WORD.findall(_unaccented(text, "NFD").casefold()):
        if "-" in w or "'" in w:
            parts = [p for p in re.split(r"[-']", w) if p]
            words.extend(parts)
            if len(parts) > 1:
                words.append("".join(parts))
        else:
            words.append(w)
    words = [w for w in words if w not in STOPWORDS]
    return list(_stemmer().stemWords(words))


def _unaccented(text: str, form: Literal["NFD", "NFKD"]) -> str:
    """``text`` without its combining marks, decomposed by ``form``: NFD for BM25 terms (canonical only, composed
    again after, so "10⁵" never becomes "105"), NFKD for names (compatibility forms too: "ﬁ" is "fi")."""
    if text.isascii():
        return text
    s = "".join(c for c in unicodedata.normalize(form, text) if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", s) if form == "NFD" else s


def fold(text: str) -> str:
    """Accent-free, case-folded text: the form names, categories and the listing's search words are matched in."""
    return _unaccented(text, "NFKD").casefold()


def name_key(name: str) -> str:
    """Accent- and case-insensitive form of an author or category name, as stored in a paper's ``author_keys``
    and ``category_keys`` and matched by filters: folded, with dots and hyphens read as spaces."""
    return " ".join(fold(name).replace(".", " ").replace("-", " ").split())
