"""The Chroma row schema: chunk ids, the metadata keys, a Paper written as rows, a row read back as a StoredPaper.

Every chunk of a paper carries the paper's fields (so a ``where`` clause can filter chunks by paper);
chunk 0 also carries the abstract, so reading a paper is reading its chunk-0 row. Chroma refuses None
and empty lists, so an absent field is left out of the row, and reading puts the default back.
Authors and categories are stored as Chroma list values (what ``chromadb`` 1.x stores natively), beside
their folded keys (``author_keys``, ``category_keys``) that filters match with ``$contains``.

This module is the only place that names a metadata key: the store, the lexical index, the ingest
pipeline and the paper filters all read and write rows through it, so the format on disk has one owner.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from rag.analysis import name_key
from rag.records import Paper, StoredPaper

# ---- keys ---------------------------------------------------------------------------------------------
PAPER_ID = "paper_id"
CONTENT_HASH = "content_hash"
CHUNK = "chunk"  # the chunk's index within its paper (0 carries the abstract)
N_CHUNKS = "n_chunks"
LABEL = "label"
ABSTRACT_HASH = "abstract_hash"
ORIGIN = "origin"  # file:line of the record the paper was read from
OLD_ORIGIN = "source"  # the same, as rows written before it was named ORIGIN hold it (read, never written)
LLM_TOKENS = "llm_tokens"
TITLE = "title"
YEAR = "year"
VENUE = "venue"
URL = "url"
DOI = "doi"
ARXIV_ID = "arxiv_id"
AUTHORS = "authors"
CATEGORIES = "categories"
AUTHOR_KEYS = "author_keys"
CATEGORY_KEYS = "category_keys"
ABSTRACT = "abstract"
# passages of a paper's full text (``rag.ingest.fulltext``): further rows of the same paper, with no ``chunk``
# key (so ``FIRST_CHUNK`` and the abstract versioning never see them) and their own version, the text's hash
KIND = "kind"  # "passage" (abstract chunks carry no kind)
PASSAGE_KIND = "passage"
PASSAGE = "passage"  # the passage's position in the paper (0-based)
N_PASSAGES = "n_passages"
PAGE_START = "page_start"
PAGE_END = "page_end"
SECTION = "section"

FIRST_CHUNK: dict[str, Any] = {CHUNK: 0}  # the ``where`` clause that selects one row per paper


# ---- chunk ids ----------------------------------------------------------------------------------------
def chunk_id(paper_id: str, content_hash: str, index: int) -> str:
    """``<paper_id>#<content_hash>#<i>``: the paper id can be read back from the id alone."""
    return f"{paper_id}#{content_hash}#{index}"


def passage_id(paper_id: str, text_hash: str, index: int) -> str:
    """``<paper_id>#<text_hash>#p<i>``: read back like a chunk id, never taken for chunk 0."""
    return f"{paper_id}#{text_hash}#p{index}"


def paper_of_chunk(cid: str) -> str:
    """The paper id inside a chunk id (paper ids may themselves contain ``#``)."""
    return cid.rsplit("#", 2)[0]


# ---- write --------------------------------------------------------------------------------------------
def author_keys(authors: Iterable[str]) -> list[str]:
    """What an author filter matches: every name's folded key and its last word (the surname), sorted."""
    return sorted({k for a in authors for k in (name_key(a), name_key(a).split(" ")[-1]) if k})


def category_keys(categories: Iterable[str]) -> list[str]:
    return sorted({name_key(c) for c in categories if c.strip()})


def chunk_metadata(paper: Paper, content_hash: str, index: int, n_chunks: int, llm_tokens: int) -> dict[str, Any]:
    """The metadata of chunk ``index`` of ``paper``: its fields for filtering and display (no None, no [])."""
    md: dict[str, Any] = {
        PAPER_ID: paper.id, CONTENT_HASH: content_hash, CHUNK: index, N_CHUNKS: n_chunks,
        LABEL: paper.label, ABSTRACT_HASH: paper.abstract_hash, ORIGIN: paper.origin,
        LLM_TOKENS: llm_tokens,
    }
    optional: dict[str, Any] = {
        TITLE: paper.title, YEAR: paper.year, VENUE: paper.venue, URL: paper.url, DOI: paper.doi,
        ARXIV_ID: paper.arxiv_id, AUTHORS: paper.authors or None, CATEGORIES: paper.categories or None,
    }
    optional[AUTHOR_KEYS] = author_keys(paper.authors) or None
    optional[CATEGORY_KEYS] = category_keys(paper.categories) or None
    if index == 0:
        optional[ABSTRACT] = paper.abstract
    md.update({k: v for k, v in optional.items() if v is not None and v != ""})
    return md


def passage_metadata(paper: StoredPaper, text_hash: str, index: int, n_passages: int, page_start: int,
                     page_end: int, section: str, llm_tokens: int) -> dict[str, Any]:
    """The metadata of passage ``index`` of a stored paper: the paper's filter fields (so a filtered search
    finds its passages as it finds its abstract), the pages, the section; no ``chunk`` and no abstract."""
    md: dict[str, Any] = {
        PAPER_ID: paper.id, CONTENT_HASH: text_hash, KIND: PASSAGE_KIND, PASSAGE: index, N_PASSAGES: n_passages,
        PAGE_START: page_start, PAGE_END: page_end, LABEL: paper.label, LLM_TOKENS: llm_tokens,
    }
    optional: dict[str, Any] = {
        SECTION: section, TITLE: paper.title, YEAR: paper.year, ORIGIN: paper.origin,
        AUTHORS: list(paper.authors) or None, CATEGORIES: list(paper.categories) or None,
        AUTHOR_KEYS: author_keys(paper.authors) or None, CATEGORY_KEYS: category_keys(paper.categories) or None,
    }
    md.update({k: v for k, v in optional.items() if v is not None and v != ""})
    return md


def is_passage(md: Mapping[str, Any]) -> bool:
    return md.get(KIND) == PASSAGE_KIND


PASSAGES: dict[str, Any] = {KIND: PASSAGE_KIND}  # the ``where`` clause that selects passage rows


class PassageState(NamedTuple):
    """Where a passage row sits: which version (text hash) of which paper's full text."""

    paper_id: str
    text_hash: str
    n_passages: int


def passage_state(md: Mapping[str, Any]) -> PassageState:
    return PassageState(md[PAPER_ID], md[CONTENT_HASH], int(md[N_PASSAGES]))


class PassageRef(NamedTuple):
    """A passage as retrieval and answers read it: pages and section from its row."""

    page_start: int
    page_end: int
    section: str


def passage_ref(md: Mapping[str, Any]) -> PassageRef:
    return PassageRef(int(md.get(PAGE_START, 0)), int(md.get(PAGE_END, md.get(PAGE_START, 0))),
                      str(md.get(SECTION, "")))


# ---- read ---------------------------------------------------------------------------------------------
def read_paper(md: Mapping[str, Any]) -> StoredPaper:
    """A chunk-0 metadata row → the read-side paper (the same fields whatever was stored)."""
    pid = md[PAPER_ID]
    return StoredPaper(
        id=pid, label=md.get(LABEL, pid), title=md.get(TITLE), authors=tuple(md.get(AUTHORS) or ()),
        categories=tuple(md.get(CATEGORIES) or ()), year=md.get(YEAR), venue=md.get(VENUE), url=md.get(URL),
        doi=md.get(DOI), arxiv_id=md.get(ARXIV_ID), abstract=md.get(ABSTRACT, ""),
        origin=md.get(ORIGIN, md.get(OLD_ORIGIN)))


def paper_id(md: Mapping[str, Any]) -> str:
    return str(md[PAPER_ID])


def is_first_chunk(md: Mapping[str, Any]) -> bool:
    return md.get(CHUNK) == 0


class ChunkState(NamedTuple):
    """Where a row sits in the store's versioning: which version of which paper, and which of its chunks."""

    paper_id: str
    content_hash: str
    chunk: int
    n_chunks: int


def chunk_state(md: Mapping[str, Any]) -> ChunkState:
    return ChunkState(md[PAPER_ID], md[CONTENT_HASH], int(md[CHUNK]), int(md[N_CHUNKS]))


class FilterFields(NamedTuple):
    """What the lexical index keeps of a row for filtering: the version key, year, filter keys, display names."""

    paper_id: str
    version: str  # ``paper_id#content_hash``: analysed terms saved under it are reused while it is unchanged
    year: Any  # as stored: an int, or None (anything else is treated as no year)
    author_keys: list[str]
    category_keys: list[str]
    authors: list[str]
    categories: list[str]


def filter_fields(md: Mapping[str, Any]) -> FilterFields:
    pid = md[PAPER_ID]
    return FilterFields(pid, f"{pid}#{md.get(CONTENT_HASH, '')}", md.get(YEAR),
                        list(md.get(AUTHOR_KEYS) or []), list(md.get(CATEGORY_KEYS) or []),
                        list(md.get(AUTHORS) or []), list(md.get(CATEGORIES) or []))


# ---- where clauses ------------------------------------------------------------------------------------
def all_of(*clauses: dict[str, Any] | None) -> dict[str, Any] | None:
    """The conjunction of the clauses given (None ones skipped); None when there is none."""
    kept = [c for c in clauses if c]
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else {"$and": kept}


def ids_in(paper_ids: Sequence[str]) -> dict[str, Any]:
    return {PAPER_ID: {"$in": list(paper_ids)}}


def values_in(key: str, values: Sequence[str]) -> dict[str, Any]:
    return {key: {"$in": list(values)}}


def has_author(key: str) -> dict[str, Any]:
    """Rows of papers with an author whose folded name (or surname) is ``key`` (see ``author_keys``)."""
    return {AUTHOR_KEYS: {"$contains": key}}


def has_category(key: str) -> dict[str, Any]:
    return {CATEGORY_KEYS: {"$contains": key}}


def year_from(year: int) -> dict[str, Any]:
    return {YEAR: {"$gte": year}}


def year_to(year: int) -> dict[str, Any]:
    return {YEAR: {"$lte": year}}
