"""Paper-level filters (author, category, year, ids) as Chroma ``where`` clauses, and paper listing."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from rag.analysis import fold, name_key
from rag.errors import InputError
from rag.index import rows
from rag.index.store import ChromaStore
from rag.records import StoredPaper


@dataclass
class PaperQuery:
    """What a researcher can restrict papers by. Empty fields restrict nothing."""

    author: str | None = None
    category: str | None = None
    year_from: int | None = None
    year_to: int | None = None
    paper_ids: list[str] = field(default_factory=list)
    collection: str | None = None  # a named collection (rag.index.collections); resolved into paper_ids
    text: str | None = None  # listing only: words that must all appear in label or abstract, accents aside

    def is_empty(self) -> bool:
        return not (self.author or self.category or self.year_from or self.year_to or self.paper_ids
                    or self.collection)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, [], "")}


def parse_year_range(text: str | None, what: str = "--year") -> tuple[int | None, int | None]:
    """``2024`` → (2024, 2024); ``2020-2024``, ``2020-`` and ``-2024`` → open or closed ranges; anything else an
    ``InputError`` naming ``what`` (the option or field it came from)."""
    if not text or not text.strip():
        return None, None
    lo, sep, hi = text.strip().partition("-")
    try:
        if not sep:
            return int(lo), int(lo)
        return (int(lo) if lo.strip() else None), (int(hi) if hi.strip() else None)
    except ValueError:
        raise InputError(f"{what} expects YEAR or FROM-TO, got {text!r}") from None


def scoped(q: PaperQuery, members: frozenset[str]) -> PaperQuery:
    """``q`` with its collection's ``members`` applied: they become the paper ids (those of ``q`` that are
    members, when it names both). ``InputError`` when no paper is left, since an empty ``paper_ids``
    would restrict nothing."""
    ids = sorted(members if not q.paper_ids else members & set(q.paper_ids))
    if not ids:
        raise InputError(f"none of the {len(q.paper_ids)} selected papers is in the collection {q.collection!r}")
    return replace(q, paper_ids=ids)


def to_where(q: PaperQuery) -> dict[str, Any] | None:
    """The Chroma metadata filter for a query (None when it restricts nothing). A collection must have been
    applied first (:func:`scoped`): its name alone selects nothing here."""
    return rows.all_of(rows.has_author(name_key(q.author)) if q.author else None,
                       rows.has_category(name_key(q.category)) if q.category else None,
                       rows.year_from(q.year_from) if q.year_from else None,
                       rows.year_to(q.year_to) if q.year_to else None,
                       rows.ids_in(q.paper_ids) if q.paper_ids else None)


def find_papers(store: ChromaStore, q: PaperQuery, limit: int = 100) -> list[StoredPaper]:
    """Stored papers matching ``q``, sorted by label; the first ``limit``. Rows are streamed page by page
    and only the best ``limit`` are kept, so listing a 100k-paper store does not hold all of it."""
    where = to_where(q)
    found: Iterator[StoredPaper] = (rows.read_paper(md) for md in store.iter_metadata(
        where=rows.all_of(rows.FIRST_CHUNK, where)))
    if q.text:  # "Erdos" finds "Erdős" and the other way round: both sides folded
        words = fold(q.text).split()
        found = (p for p in found if all(w in fold(f"{p.label} {p.abstract}") for w in words))
    return heapq.nsmallest(limit, found, key=lambda p: (p.label.casefold(), p.id))
