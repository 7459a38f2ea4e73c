"""Paper-level filters (author, category, year, ids) as Chroma ``where`` clauses, and paper listing."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from rag.analysis import name_key
from rag.index.store import ChromaStore


@dataclass
class PaperQuery:
    """What a researcher can restrict papers by. Empty fields restrict nothing."""

    author: str | None = None
    category: str | None = None
    year_from: int | None = None
    year_to: int | None = None
    paper_ids: list[str] = field(default_factory=list)
    text: str | None = None  # listing only: words that must all appear in label or abstract

    def is_empty(self) -> bool:
        return not (self.author or self.category or self.year_from or self.year_to or self.paper_ids)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, [], "")}


def to_where(q: PaperQuery) -> dict[str, Any] | None:
    """The Chroma metadata filter for a query (None when it restricts nothing)."""
    clauses: list[dict[str, Any]] = []
    if q.author:
        clauses.append({"author_keys": {"$contains": name_key(q.author)}})
    if q.category:
        clauses.append({"category_keys": {"$contains": name_key(q.category)}})
    if q.year_from:
        clauses.append({"year": {"$gte": q.year_from}})
    if q.year_to:
        clauses.append({"year": {"$lte": q.year_to}})
    if q.paper_ids:
        clauses.append({"paper_id": {"$in": list(q.paper_ids)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def paper_from_metadata(md: dict[str, Any]) -> dict[str, Any]:
    """A chunk-0 metadata row → the public paper dict (same keys whatever was stored)."""
    return {
        "id": md["paper_id"], "label": md.get("label", md["paper_id"]), "title": md.get("title"),
        "authors": list(md.get("authors") or []), "categories": list(md.get("categories") or []),
        "year": md.get("year"), "venue": md.get("venue"), "url": md.get("url"), "doi": md.get("doi"),
        "arxiv_id": md.get("arxiv_id"), "abstract": md.get("abstract", ""), "source": md.get("source"),
    }


def find_papers(store: ChromaStore, q: PaperQuery, limit: int = 100) -> list[dict[str, Any]]:
    """Stored papers matching ``q``, sorted by label; the first ``limit``. Rows are streamed page by page
    and only the best ``limit`` are kept, so listing a 100k-paper store does not hold all of it."""
    where = to_where(q)
    rows: Iterator[dict[str, Any]] = (paper_from_metadata(md) for md in store.iter_metadata(
        where={"$and": [{"chunk": 0}, where]} if where else {"chunk": 0}))
    if q.text:
        words = q.text.casefold().split()
        rows = (r for r in rows if all(w in f"{r['label']} {r['abstract']}".casefold() for w in words))
    return heapq.nsmallest(limit, rows, key=lambda r: (r["label"].casefold(), r["id"]))
