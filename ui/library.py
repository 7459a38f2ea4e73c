"""The library as a service, for front ends that are not a page: the HTTP API (``ui.api``) and the MCP server.
Each function takes a ``Library`` (one ``Runtime`` and one ``AnswerChain``) and returns JSON-ready dicts.

Follow-ups without server state: a client sends the whole conversation (OpenAI ``messages``) with every
request. The earlier turns become the chain's history as ``Answer``s rebuilt from the messages, never by
answering the earlier questions again (that would cost an LLM call per turn and could answer differently):
a user message gives the turn's question, the assistant message after it gives its answer text and the
papers it cited: from the structured ``paperchat`` turn when the client sent it back, else from the
references list that ends every answer text (``[n] Title (id: PAPER_ID)``), read back from the store.
That is everything the condense step uses (earlier questions, answer text, cited papers), so a follow-up
resolves exactly as in the chat.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, cast

from rag.answer import Answer, AnswerMode, Citation, closest_line
from rag.config import Settings
from rag.display import author_list
from rag.errors import InputError
from rag.index.collections import check_name
from rag.index.paper_query import PaperQuery, find_papers
from rag.index.store import ChromaStore
from rag.limits import check_question
from rag.qa.chain import AnswerChain
from rag.runtime import Runtime

log = logging.getLogger(__name__)

MAX_LIST = 500  # papers per listing page
_REF = re.compile(r"^\s*\[(\d+)\]\s+.*\(id:\s*([^\s()]+)\)\s*$")
_REF_HEAD = "References:"


@dataclass
class Library:
    """One runtime and its answer chain, shared by every request of a front end."""

    runtime: Runtime
    chain: AnswerChain

    @classmethod
    def open(cls, runtime: Runtime, settings: Settings | None = None) -> Library:
        return cls(runtime, AnswerChain(runtime, settings))

    @property
    def settings(self) -> Settings:
        return self.chain.settings


# ---- filters ------------------------------------------------------------------------------------------
def query_from(filters: dict[str, Any] | None) -> PaperQuery | None:
    """A filters object (author, category, year_from, year_to, paper_ids, collection; ``year`` for one year) as a
    query; None when it restricts nothing. Unknown keys are an ``InputError`` naming them."""
    if not filters:
        return None
    known = {f.name for f in fields(PaperQuery)} - {"text"} | {"year"}
    unknown = sorted(set(filters) - known)
    if unknown:
        raise InputError(f"unknown filter(s) {', '.join(unknown)}: use author, category, year, year_from, "
                         "year_to, paper_ids, collection", where="filters")
    f = dict(filters)
    year = f.pop("year", None)
    if year is not None:
        f.setdefault("year_from", year)
        f.setdefault("year_to", year)
    for key in ("year_from", "year_to"):
        if f.get(key) is not None and not isinstance(f[key], int):
            raise InputError(f"{key} must be an integer year", where="filters")
    ids = f.get("paper_ids") or []
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InputError("paper_ids must be a list of strings", where="filters")
    for key in ("author", "category", "collection"):
        if f.get(key) is not None and not isinstance(f[key], str):
            raise InputError(f"{key} must be a string", where="filters")
    q = PaperQuery(author=f.get("author") or None, category=f.get("category") or None,
                   year_from=f.get("year_from"), year_to=f.get("year_to"), paper_ids=list(ids),
                   collection=(f.get("collection") or "").strip() or None)
    return None if q.is_empty() else q


def resolve(runtime: Runtime, q: PaperQuery | None) -> PaperQuery | None:
    """``q`` with its collection's members as paper ids (``rag.index.paper_query.scoped``), for the routes that
    search or list without the answer chain (which does this itself). An unknown collection is an
    ``InputError`` naming the known ones."""
    if q is None or not q.collection:
        return q
    return cast(PaperQuery, runtime.collections().scope(q))


# ---- collections ---------------------------------------------------------------------------------------
def collection_counts(runtime: Runtime) -> dict[str, int]:
    """Every named collection with its number of papers (case-insensitive order)."""
    return runtime.collections().counts()


def list_collections(lib: Library) -> list[dict[str, Any]]:
    """``paperchat collection list --json``: ``[{"name", "papers"}]``."""
    return [{"name": name, "papers": n} for name, n in collection_counts(lib.runtime).items()]


def stored_ids(runtime: Runtime, paper_ids: Sequence[str]) -> list[str]:
    """The ids of ``paper_ids`` that name stored papers (in the order given, once each)."""
    wanted = list(dict.fromkeys(i for i in paper_ids if i))
    found = {p.id for p in runtime.store.papers(wanted)} if wanted else set()
    return [i for i in wanted if i in found]


def add_to_collection(runtime: Runtime, name: str, paper_ids: Sequence[str]) -> tuple[str, int, int]:
    """Put stored papers in a collection (made if new): (the name as stored, papers added, papers in it now).
    ``InputError`` for a bad name or when no paper is given; nothing is written then."""
    ids = stored_ids(runtime, paper_ids)
    if not ids:
        raise InputError("select papers first: tick them in the table")
    name = check_name(name)
    sets = runtime.collections()
    added = sets.add(name, ids)
    return name, added, len(sets.members(name))


def remove_from_collection(runtime: Runtime, name: str, paper_ids: Sequence[str]) -> tuple[str, int, int]:
    """Take papers out of a collection (never out of the library): (name, papers removed, papers left in it).
    ``InputError`` for an unknown collection or when no paper is given."""
    ids = [i for i in dict.fromkeys(paper_ids) if i]
    if not ids:
        raise InputError("select papers first: tick them in the table")
    name = check_name(name)
    sets = runtime.collections()
    removed = sets.remove(name, ids)
    return name, removed, sets.counts().get(name, 0)


# ---- reading the library -------------------------------------------------------------------------------
def search(lib: Library, query: str, filters: dict[str, Any] | None = None, k: int | None = None) -> dict[str, Any]:
    """The papers retrieval ranks for ``query`` (hybrid BM25 + dense, as answers use), best first, each with
    its fused score and why it matched: its BM25 and dense scores and the best-matching chunk."""
    query = check_question(query, lib.settings.limits)
    if k is not None and not 1 <= k <= 50:
        raise InputError(f"k must be between 1 and 50, got {k}", where="k")
    q = query_from(filters)
    result = lib.chain.retriever.search(query, k=k or lib.settings.retrieval.k, filters=resolve(lib.runtime, q))
    return {
        "query": query,
        "filters": (q or PaperQuery()).as_dict(),
        "results": [{
            "rank": i, "paper": h.paper.to_dict(), "score": round(float(h.score), 6),
            "why": {"bm25": None if h.bm25 is None else round(float(h.bm25), 6),
                    "dense": None if h.dense is None else round(float(h.dense), 6),
                    "matched_text": h.chunk},
        } for i, h in enumerate(result.hits, start=1)],
        "timings": {k_: round(float(v), 2) for k_, v in result.timings.items()},
    }


def list_papers(lib: Library, author: str | None = None, category: str | None = None, year_from: int | None = None,
                year_to: int | None = None, text: str | None = None, offset: int = 0,
                limit: int = 50, collection: str | None = None) -> dict[str, Any]:
    """Stored papers matching the filters, sorted by label: one page (``offset``, ``limit`` ≤ 500); with
    ``collection``, only its papers (an unknown one is an ``InputError`` naming the known ones)."""
    if not 1 <= limit <= MAX_LIST:
        raise InputError(f"limit must be between 1 and {MAX_LIST}, got {limit}", where="limit")
    if offset < 0:
        raise InputError(f"offset must be 0 or more, got {offset}", where="offset")
    q = PaperQuery(author=author or None, category=category or None, year_from=year_from, year_to=year_to,
                   text=text or None, collection=(collection or "").strip() or None)
    found = find_papers(lib.runtime.store, resolve(lib.runtime, q) or q, limit=offset + limit + 1)
    page = found[offset:offset + limit]
    return {"filters": q.as_dict(), "offset": offset, "limit": limit, "has_more": len(found) > offset + limit,
            "papers": [p.to_dict() for p in page]}


def get_paper(lib: Library, paper_id: str) -> dict[str, Any] | None:
    """One stored paper by id, or None."""
    found = lib.runtime.store.papers([paper_id]) if paper_id else []
    return found[0].to_dict() if found else None


def store_stats(store: ChromaStore, settings: Settings, papers: int | None = None) -> dict[str, Any]:
    """The store's figures, one key for each: what ``paperchat stats --json`` and GET /v1/stats print (papers,
    chunks, model, store location and generation) and what the Library tab's line starts from
    (``ui.services.corpus_stats`` adds the catalog's counts). ``papers``: the count when already known (from the
    lexical index), instead of listing the store's ids."""
    return {"papers": len(store.paper_ids()) if papers is None else papers, "chunks": store.count_chunks(),
            "embedding_model": store.model_name, "dim": store.dim, "store_mode": settings.store.mode,
            "store_location": store.location, "chroma_collection": settings.store.chroma_collection,
            "generation": store.generation}


def stats(lib: Library) -> dict[str, Any]:
    """``paperchat stats --json`` for the library's store."""
    return store_stats(lib.runtime.store, lib.runtime.settings)


# ---- answering ----------------------------------------------------------------------------------------
def answer_text(answer: Answer) -> str:
    """The answer for a chat client: the text with its ``[n]`` markers, then (for a refusal) the closest
    papers, then the references list, one ``[n] Title (id: PAPER_ID)`` line per citation (the ids let a
    later request rebuild this turn: ``history_from_messages``)."""
    parts = [answer.answer.strip()]
    if answer.closest:
        parts.append(closest_line(answer))
    if answer.citations:
        refs = []
        flagged = answer.contradicted
        for c in answer.citations:
            meta = ", ".join(x for x in (author_list(c.authors), str(c.year or "")) if x)
            flag = " (contradicted)" if c.n in flagged else ""
            refs.append(f"[{c.n}] {c.title}{f' — {meta}' if meta else ''}{flag} (id: {c.paper_id})")
        parts.append(_REF_HEAD + "\n" + "\n".join(refs))
    return "\n\n".join(parts)


def _citations_from_turn(turn: Any) -> list[Citation] | None:
    """Citations of a structured ``paperchat`` turn sent back by the client (None when absent or malformed)."""
    if not isinstance(turn, dict) or not isinstance(turn.get("citations"), list):
        return None
    names = {f.name for f in fields(Citation)}
    try:
        return [Citation(**{k: v for k, v in c.items() if k in names}) for c in turn["citations"]]
    except (TypeError, AttributeError):
        return None


def _citations_from_text(store: ChromaStore, text: str) -> tuple[str, list[Citation]]:
    """The answer text without its references list, and the papers that list names, read from the store
    (a paper no longer stored is left out)."""
    body, sep, refs = text.rpartition(_REF_HEAD)
    if not sep:
        return text, []
    numbered = [(int(m.group(1)), m.group(2)) for m in map(_REF.match, refs.splitlines()) if m]
    stored = {p.id: p for p in store.papers([pid for _, pid in numbered])} if numbered else {}
    cites = [Citation(n=n, paper_id=pid, title=p.heading, authors=list(p.authors), categories=list(p.categories),
                      year=p.year, abstract=p.abstract, summary="", evidence="", supported=True, url=p.url)
             for n, pid in numbered if (p := stored.get(pid)) is not None]
    return body.strip(), cites


def _content(message: dict[str, Any]) -> str:
    """A message's text: a string, or the text parts of an OpenAI content list."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def history_from_messages(lib: Library, messages: Sequence[dict[str, Any]]) -> tuple[str, list[Answer]]:
    """The question (the last user message) and the earlier turns as ``Answer``s (see the module docstring).
    System messages are ignored: the papers, not the caller, decide what an answer says."""
    turns = [m for m in messages if m.get("role") in ("user", "assistant")]
    if not turns or turns[-1].get("role") != "user":
        raise InputError("the last message must be the user's question", where="messages")
    history: list[Answer] = []
    pending: str | None = None
    for m in turns[:-1]:
        text = _content(m)
        if m["role"] == "user":
            pending = check_question(text, lib.settings.limits) if text.strip() else None
            continue
        if pending is None:  # an assistant message with no question before it (a greeting): nothing to resolve
            continue
        cites = _citations_from_turn(m.get("paperchat"))
        if cites is None:
            body, cites = _citations_from_text(lib.runtime.store, text)
        else:
            body = text.rpartition(_REF_HEAD)[0].strip() or text
        history.append(Answer(question=pending, standalone_question=pending, answer=body,
                              answerable=bool(cites), mode="extractive", citations=cites))
        pending = None
    return _content(turns[-1]), history


def ask(lib: Library, question: str, history: Sequence[Answer] = (), mode: AnswerMode | None = None,
        k: int | None = None, filters: dict[str, Any] | None = None, length: str | None = None, *,
        pin: Sequence[str] = (), exclude: Sequence[str] = ()) -> Answer:
    """One verified, cited turn (``Answer.to_dict()`` is the ``ask --json`` schema); ``length``: brief, normal
    (None) or thorough; ``pin`` and ``exclude`` steer it (rag.qa.why)."""
    return lib.chain.ask(question, history=list(history), k=k, filters=query_from(filters), mode=mode, length=length,
                         pin=pin, exclude=exclude)


def ask_messages(lib: Library, messages: Sequence[dict[str, Any]], mode: AnswerMode | None = None, k: int | None = None,
                 filters: dict[str, Any] | None = None, length: str | None = None, pin: Sequence[str] = (),
                 exclude: Sequence[str] = ()) -> Answer:
    """``ask`` for a whole conversation of chat messages (the last one is the question)."""
    question, history = history_from_messages(lib, messages)
    return ask(lib, question, history, mode, k, filters, length, pin=pin, exclude=exclude)

