"""Named collections of papers (a reading list, the papers of one review, a Zotero collection).

Membership lives in Chroma beside the chunks, in a second Chroma collection (``<store collection>-sets``)
holding one row per (collection, paper): so it works the same embedded and against a ``chroma run``
server, survives re-ingest and ``ingest --rebuild`` (which drop and rewrite chunks, never this), and each
write is an idempotent upsert or delete of whole rows: a run killed at any moment leaves every row either
written or not, and re-running the command finishes the job. A collection exists while it has members;
deleting one never touches the papers. Rows record where they came from (``origin``): papers added by
hand have none; a Zotero library's collections are tagged with the library's path, so a re-ingest of
that library can remove from them what was removed in Zotero (:meth:`Collections.sync`) without touching
collections filled by hand.

Papers merged into another (``rag.ingest.converge``: one paper two writers stored at once under two ids) take
their memberships with them (:meth:`Collections.merge`); a third collection (``<store collection>-merged``)
keeps one row per merged id naming the paper it went into, so a membership written under that id later (by a
writer that had not seen the merge yet) is moved as well (:meth:`Collections.follow_merges`).

Names are free text (spaces, quotes, accents, emoji), at most 200 characters; ``/`` separates the levels
of a nested collection (``Parent/Child``), as Zotero collection paths are written.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import inspect
import logging
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from rag.errors import InputError
from rag.index.store import ChromaStore

log = logging.getLogger(__name__)

NAME = "set"  # metadata keys of a membership row
PAPER = "paper_id"
ORIGIN = "origin"  # the file whose collections the row was synced from ("" for a membership made by hand)
OLD_ORIGIN = "source"  # the same, in rows written before it was named ORIGIN (read, never written)
INTO = "into"  # of a merge row: the paper the row's ``paper_id`` was merged into
MAX_NAME = 200
_PAGE = 5000
_VECTOR = [[1.0]]  # Chroma rows need a vector; membership rows are only ever read by metadata


def check_name(raw: str) -> str:
    """A collection name as stored: stripped, NFC; refused with the reason when unusable."""
    name = unicodedata.normalize("NFC", (raw or "").strip())
    if not name:
        raise InputError("a collection name cannot be empty")
    if len(name) > MAX_NAME:
        raise InputError(f"collection name too long ({len(name)} characters, at most {MAX_NAME}): {name[:40]!r}…")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name):
        raise InputError(f"collection name {name!r} contains control characters; use printable text")
    if name.startswith("/") or name.endswith("/") or "//" in name:
        raise InputError(f"collection name {name!r}: '/' separates nested collections (Parent/Child), so it "
                         "cannot start or end the name or appear twice in a row")
    return name


def resolve_name(raw: str, known: Iterable[str]) -> str:
    """The collection a person means by ``raw``, among the ``known`` names: the exact name; else the one name
    equal to it ignoring case, or whose last part (``Distributed Systems`` of ``Computer Science/Distributed
    Systems``) or trailing parts equal it ignoring case. ``InputError`` listing the candidates when several
    match, or the closest names when none does (one function for every front end: CLI, API, MCP, UI and the
    collections a question names)."""
    name = check_name(raw)
    names = list(dict.fromkeys(known))
    if name in names:
        return name
    want = name.casefold()
    same = [n for n in names if n.casefold() == want]
    if len(same) == 1:
        return same[0]
    tails = same or [n for n in names if n.casefold().endswith("/" + want)]
    if len(tails) == 1:
        return tails[0]
    if tails:
        listed = ", ".join(repr(n) for n in sorted(tails, key=str.casefold))
        raise InputError(f"the collection name {name!r} is ambiguous: it could be {listed}; give the full name")
    if not names:
        raise InputError(f"no collection named {name!r}: there are no collections yet; make one with "
                         "`paperchat collection add NAME --search WORDS` (or --author, --category, --paper-id) "
                         "or `paperchat ingest FILE --collection NAME`")
    folded = {n.casefold(): n for n in names}
    folded.update((n.rsplit("/", 1)[-1].casefold(), n) for n in names if "/" in n)
    close = list(dict.fromkeys(folded[c] for c in difflib.get_close_matches(want, list(folded), n=3, cutoff=0.6)))
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    listed = ", ".join(repr(k) for k in names[:10]) + (" …" if len(names) > 10 else "")
    raise InputError(f"no collection named {name!r}{hint} (collections: {listed}; "
                     "`paperchat collection list` shows them all)")


F = TypeVar("F", bound=Callable[..., Any])


def _guarded(fn: F) -> F:
    """As the store's own methods: reconnect first if the server was lost, and an unreachable server
    becomes the store's ``UpstreamError`` naming host:port."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen(self: Collections, *args: Any, **kwargs: Any) -> Iterator[Any]:
            self.store._reconnect_if_lost()
            try:
                yield from fn(self, *args, **kwargs)
            except Exception as e:
                self.store._raise_lost(e)
        return gen  # type: ignore[return-value]

    @functools.wraps(fn)
    def call(self: Collections, *args: Any, **kwargs: Any) -> Any:
        self.store._reconnect_if_lost()
        try:
            return fn(self, *args, **kwargs)
        except Exception as e:
            self.store._raise_lost(e)
    return call  # type: ignore[return-value]


def _from(origin: str) -> dict[str, Any]:
    """The ``where`` clause of the memberships synced from ``origin``, under the key of either name."""
    return {"$or": [{ORIGIN: origin}, {OLD_ORIGIN: origin}]}


def _membership(name: str, paper_id: str, origin: str) -> dict[str, Any]:
    """A membership row's metadata. The old origin key is set to None, which Chroma reads as "remove": an upsert
    merges metadata, so a row written under the old key would otherwise keep its former origin beside the new."""
    return {NAME: name, PAPER: paper_id, ORIGIN: origin, OLD_ORIGIN: None}


def origin_of(md: Mapping[str, Any]) -> str:
    """A membership row's origin, whichever key it was written under."""
    return str(md.get(ORIGIN, md.get(OLD_ORIGIN, "")))


def _row_id(name: str, paper_id: str) -> str:
    return f"{hashlib.sha1(name.encode()).hexdigest()[:20]}:{paper_id}"


class Collections:
    """The named collections of one store. Cheap to build; every call reads or writes Chroma directly, so
    several processes (or hosts, in server mode) see each other's changes at once."""

    def __init__(self, store: ChromaStore) -> None:
        self.store = store
        self._name = f"{store.settings.store.chroma_collection}-sets"
        self._merged_name = f"{store.settings.store.chroma_collection}-merged"
        self._open: dict[str, tuple[Any, Any]] = {}  # collection name → (client it was opened on, handle)

    def _rows(self, create: bool = False, name: str | None = None) -> Any:
        """The membership collection (or another side collection by ``name``; None when it does not exist and
        ``create`` is false). Reopened when the store reconnected to its server (a new client)."""
        client, name = self.store.client, name or self._name
        opened = self._open.get(name)
        if opened is not None and opened[0] is client:
            return opened[1]
        try:
            kind = "collections" if name == self._name else "merged papers"
            col = (client.get_or_create_collection(name, embedding_function=None, metadata={"paperchat": kind})
                   if create else client.get_collection(name, embedding_function=None))
        except Exception as e:
            if create or not _missing(e):
                raise
            return None
        self._open[name] = (client, col)
        return col

    def _iter(self, where: dict[str, Any] | None = None, name: str | None = None) -> Iterator[dict[str, Any]]:
        col = self._rows(name=name)
        if col is None:
            return
        offset = 0
        while True:
            res = col.get(where=where, include=["metadatas"], limit=_PAGE, offset=offset)
            yield from res["metadatas"]
            if len(res["ids"]) < _PAGE:
                return
            offset += _PAGE

    # ---- reads ---------------------------------------------------------------------------------------
    @_guarded
    def counts(self) -> dict[str, int]:
        """Every collection with its number of papers, by name (case-insensitive order)."""
        out: dict[str, int] = {}
        for md in self._iter():
            out[md[NAME]] = out.get(md[NAME], 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (kv[0].casefold(), kv[0])))

    def names(self) -> list[str]:
        return list(self.counts())

    @_guarded
    def members(self, name: str) -> frozenset[str]:
        """Paper ids of a collection, named as a person types it (:meth:`resolve`); ``InputError`` naming the
        candidates (ambiguous) or the closest known ones (unknown)."""
        found = self._members(check_name(name))
        return found or self._members(self.resolve(name))

    def _members(self, name: str) -> frozenset[str]:
        return frozenset(md[PAPER] for md in self._iter({NAME: name}))

    def resolve(self, name: str) -> str:
        """The stored name of the collection ``name`` means (:func:`resolve_name`)."""
        return resolve_name(name, self.names())

    @_guarded
    def scope(self, q: Any) -> Any:
        """A ``PaperQuery`` with its collection resolved to the stored name and its members as paper ids
        (unchanged without a collection)."""
        from dataclasses import replace

        from rag.index.paper_query import scoped

        if not getattr(q, "collection", None):
            return q
        named = replace(q, collection=self.resolve(q.collection))
        return scoped(named, self._members(named.collection))

    @_guarded
    def of_papers(self, paper_ids: Iterable[str]) -> dict[str, list[str]]:
        """Paper id → the collections it belongs to (sorted), for the papers given that belong to any."""
        ids = sorted(set(paper_ids))
        out: dict[str, list[str]] = {}
        for i in range(0, len(ids), 500):
            for md in self._iter({PAPER: {"$in": ids[i:i + 500]}}):
                out.setdefault(md[PAPER], []).append(md[NAME])
        return {p: sorted(v, key=str.casefold) for p, v in out.items()}

    @_guarded
    def has_origin(self, origin: str) -> bool:
        """Whether any membership came from ``origin`` (a file whose collections are synced)."""
        col = self._rows()
        return col is not None and bool(col.get(where=_from(origin), include=[], limit=1)["ids"])

    def unknown(self, name: str) -> InputError:
        """The error for a name that is not stored (its candidates or the closest names)."""
        try:
            found = resolve_name(name, self.names())
        except InputError as e:
            return e
        return InputError(f"no collection named {name!r}; did you mean {found!r}? (give the full name to change it)")

    # ---- writes --------------------------------------------------------------------------------------
    @_guarded
    def add(self, name: str, paper_ids: Iterable[str], origin: str = "") -> int:
        """Put papers in a collection (made if new). Returns how many were not in it before."""
        name = check_name(name)
        ids = sorted(set(paper_ids))
        if not ids:
            return 0
        col = self._rows(create=True)
        before = self._present(name, ids)
        step = max(1, self.store.max_batch)
        for i in range(0, len(ids), step):
            part = ids[i:i + step]
            col.upsert(ids=[_row_id(name, p) for p in part], embeddings=_VECTOR * len(part),
                       metadatas=[_membership(name, p, origin) for p in part])
        return len(ids) - len(before)

    @_guarded
    def remove(self, name: str, paper_ids: Iterable[str]) -> int:
        """Take papers out of a collection (never out of the library). Returns how many were in it."""
        name = check_name(name)
        if not self._members(name):  # an unknown name is an error, not a silent no-op
            raise self.unknown(name)
        ids = sorted(self._present(name, sorted(set(paper_ids))))
        self._delete([_row_id(name, p) for p in ids])
        return len(ids)

    @_guarded
    def delete(self, name: str) -> int:
        """Delete a collection (its papers stay in the library). Returns how many papers it held."""
        members = self._members(check_name(name))
        if not members:
            raise self.unknown(name)
        self._delete([_row_id(check_name(name), p) for p in members])
        return len(members)

    @_guarded
    def rename(self, old: str, new: str) -> int:
        """Give a collection a new name (merging into ``new`` if that exists). The new rows are written before
        the old ones are deleted, so a run killed in between leaves both names complete, never a half."""
        old, new = check_name(old), check_name(new)
        rows = list(self._iter({NAME: old}))
        if not rows:
            raise self.unknown(old)
        if new == old:
            return len(rows)
        col = self._rows(create=True)
        col.upsert(ids=[_row_id(new, md[PAPER]) for md in rows], embeddings=_VECTOR * len(rows),
                   metadatas=[_membership(new, md[PAPER], origin_of(md)) for md in rows])
        self._delete([_row_id(old, md[PAPER]) for md in rows])
        return len(rows)

    @_guarded
    def sync(self, origin: str, wanted: Mapping[str, Iterable[str]]) -> dict[str, int]:
        """Make the memberships that came from ``origin`` exactly ``wanted`` (name → paper ids): add what is
        new, remove what that file no longer has. Rows from other files and hand-made ones stay."""
        want = {(check_name(n), p) for n, ids in wanted.items() for p in ids}
        have = {(md[NAME], md[PAPER]) for md in self._iter(_from(origin))} if origin else set()
        added = removed = 0
        by_name: dict[str, list[str]] = {}
        for n, p in sorted(want - have):
            by_name.setdefault(n, []).append(p)
        for n, ids in by_name.items():
            added += self.add(n, ids, origin=origin)
        gone = sorted(have - want)
        self._delete([_row_id(n, p) for n, p in gone])
        removed = len(gone)
        if added or removed:
            log.info("collections from %s: %d memberships added, %d removed", origin, added, removed)
        return {"added": added, "removed": removed}

    # ---- merged papers -------------------------------------------------------------------------------
    @_guarded
    def merge(self, into: Mapping[str, str], delete: Callable[[], None]) -> int:
        """Papers merged into others (merged id → kept id): the merge is recorded first, then ``delete`` removes
        the merged papers' rows, then their memberships become the kept papers' (same collection and origin).
        Every step is idempotent, and a run killed after the record is finished by the next one (the papers are
        still stored, so merged again, or :meth:`follow_merges` moves what is left). Returns memberships moved."""
        into = {a: b for a, b in into.items() if a != b}
        if not into:
            return 0
        ids = sorted(into)
        col = self._rows(create=True, name=self._merged_name)
        for i in range(0, len(ids), max(1, self.store.max_batch)):
            part = ids[i:i + max(1, self.store.max_batch)]
            col.upsert(ids=part, embeddings=_VECTOR * len(part), metadatas=[{PAPER: a, INTO: into[a]} for a in part])
        delete()
        return self._move(into)

    @_guarded
    def follow_merges(self, paper_ids: Iterable[str], stored: Callable[[list[str]], set[str]]) -> int:
        """Move the memberships of papers among ``paper_ids`` that were merged into another and are gone
        (``stored`` says which ids are stored): a membership written after the merge moved the others."""
        ids = sorted(set(paper_ids))
        col = self._rows(name=self._merged_name)
        if col is None or not ids:
            return 0
        into: dict[str, str] = {}
        for i in range(0, len(ids), 500):
            res = col.get(ids=ids[i:i + 500], include=["metadatas"])
            into.update((md[PAPER], md[INTO]) for md in res["metadatas"])
        if not into:
            return 0
        present = stored(sorted(set(into) | set(into.values())))
        # a merge row is history: it applies while the merged id is gone and the kept one is there
        return self._move({a: b for a, b in into.items() if a not in present and b in present})

    def _move(self, into: Mapping[str, str]) -> int:
        ids = sorted(into)
        rows = [md for i in range(0, len(ids), 500) for md in self._iter({PAPER: {"$in": ids[i:i + 500]}})]
        if not rows:
            return 0
        col = self._rows(create=True)
        col.upsert(ids=[_row_id(md[NAME], into[md[PAPER]]) for md in rows], embeddings=_VECTOR * len(rows),
                   metadatas=[_membership(md[NAME], into[md[PAPER]], origin_of(md)) for md in rows])
        self._delete([_row_id(md[NAME], md[PAPER]) for md in rows])
        log.info("%d memberships moved to the papers %d merged papers went into", len(rows), len(into))
        return len(rows)

    def _present(self, name: str, ids: list[str]) -> set[str]:
        col = self._rows()
        if col is None or not ids:
            return set()
        out: set[str] = set()
        for i in range(0, len(ids), 500):
            res = col.get(ids=[_row_id(name, p) for p in ids[i:i + 500]], include=["metadatas"])
            out.update(md[PAPER] for md in res["metadatas"])
        return out

    def _delete(self, row_ids: list[str]) -> None:
        col = self._rows()
        if col is None or not row_ids:
            return
        step = max(1, self.store.max_batch)
        for i in range(0, len(row_ids), step):
            col.delete(ids=row_ids[i:i + step])


def _missing(e: Exception) -> bool:
    """Chroma's "collection does not exist" (its exception class moved between versions)."""
    return "does not exist" in str(e) or type(e).__name__ in ("NotFoundError", "InvalidCollectionException")
