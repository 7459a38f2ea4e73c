"""Several writers on one store: one paper that two processes stored at once under two ids is merged into one.

A writer stores a record when no stored paper shares its DOI, its arXiv id or (unless the DOIs or arXiv ids
differ) its abstract (``rag.ingest.pipeline``). Two writers given the same paper under two ids (a BEIR corpus's
ids carry the file's name) decide that at the same time, both see nothing stored, and both write. Chroma has no
transactions to prevent that, so it is repaired instead, by a rule every writer applies the same way: after each
batch is written, a writer reads back the stored papers that share a key with the batch's records, and each such
group is reduced to its smallest id, as soon as that paper is complete (all its chunks written). The others are
merged into it: recorded as merged, their chunks deleted (chunk 0 last: a paper whose chunk 0 is left is still
found, and merged again), their collection memberships moved (``rag.index.collections``).

Why it converges: each writer settles after its own write, so of two writers racing on one paper, the one that
settles last sees both copies and merges them; both pick the same survivor. A writer killed at any point leaves
either a paper still findable (merged by the next settle that meets it: its own re-run, or any writer's) or a
merge recorded, which the re-run finishes. Merging never touches a paper that is the smallest of its group but
incomplete (a writer is still writing it, or was killed and its re-run completes it).

A paper stored before a duplicate came along stays the one kept, whatever its id: the later record is skipped
(the pipeline's dedupe), not written, so nothing is merged. Only copies written at the same time are decided by
the smallest id, so a concurrent run can keep another of the equal copies than a sequential one would have; it
keeps the same papers, chunks, memberships and lexical index otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from rag.index import rows
from rag.index.collections import Collections
from rag.index.store import ChromaStore
from rag.records import Paper

log = logging.getLogger(__name__)


class Keys(NamedTuple):
    """What says two records are one paper: a DOI, an arXiv id, the abstract."""

    doi: str
    arxiv_id: str
    abstract_hash: str

    @staticmethod
    def of(p: Paper) -> Keys:
        return Keys(p.doi or "", p.arxiv_id or "", p.abstract_hash)

    @staticmethod
    def stored(md: dict[str, Any]) -> Keys:
        return Keys(md.get(rows.DOI) or "", md.get(rows.ARXIV_ID) or "", md.get(rows.ABSTRACT_HASH) or "")


def distinct(a: Keys, b: Keys) -> bool:
    """Both carry a DOI (or both an arXiv id) and the two differ: two papers, however alike their abstracts
    (publishers reuse one blurb for a book's chapters; a placeholder slips through)."""
    return bool(a.doi and b.doi and a.doi != b.doi) or bool(a.arxiv_id and b.arxiv_id and a.arxiv_id != b.arxiv_id)


def same_paper(a: Keys, b: Keys) -> bool:
    """The dedupe's rule: the same DOI, the same arXiv id, or the same abstract when not ``distinct``."""
    return (bool(a.doi) and a.doi == b.doi) or (bool(a.arxiv_id) and a.arxiv_id == b.arxiv_id) or (
        bool(a.abstract_hash) and a.abstract_hash == b.abstract_hash and not distinct(a, b))


def stored_keys(store: ChromaStore, keys: Iterable[Keys]) -> dict[str, Keys]:
    """paper id → keys of every stored paper (chunk-0 row) sharing a DOI, arXiv id or abstract with ``keys``."""
    wanted = list(keys)
    out: dict[str, Keys] = {}
    for field, values in ((rows.DOI, {k.doi for k in wanted}), (rows.ARXIV_ID, {k.arxiv_id for k in wanted}),
                          (rows.ABSTRACT_HASH, {k.abstract_hash for k in wanted})):
        vals = sorted(v for v in values if v)
        for i in range(0, len(vals), 500):
            flt = rows.all_of(rows.values_in(field, vals[i:i + 500]), rows.FIRST_CHUNK)
            for md in store.iter_metadata(where=flt):
                out[rows.paper_id(md)] = Keys.stored(md)
    return out


def _kept(into: dict[str, str], pid: str) -> str:
    seen = {pid}
    while pid in into and into[pid] not in seen:  # a stored paper only ever goes into a smaller id
        pid = into[pid]
        seen.add(pid)
    return pid


def settle(store: ChromaStore, collections: Collections, records: Sequence[Paper],
           before_delete: Callable[[], None] = lambda: None) -> dict[str, str]:
    """Merge the stored copies of the ``records``' papers (see the module docstring); returns record id → the
    stored paper it now is, for every record whose group was decided (the others keep what the ingest decided).
    ``before_delete`` runs before anything is deleted (the ingest's generation bump)."""
    mine = {p.id: Keys.of(p) for p in records}
    stored = stored_keys(store, mine.values())
    groups = {pid: {q for q, k in stored.items() if same_paper(key, k)} for pid, key in mine.items()}
    members = set().union(*groups.values()) if groups else set()
    states = store.chunk_states(sorted(members | set(mine)))
    complete = {q for q, versions in states.items() if any(have == want for have, want, _ in versions.values())}
    into: dict[str, str] = {}
    canon: dict[str, str] = {}
    for pid, group in groups.items():
        if not group or (kept := min(group)) not in complete:
            continue  # nothing stored, or the survivor is still being written: its writer settles after
        canon[pid] = kept
        if pid != kept:
            into[pid] = kept  # this record's own id: whatever is stored under it goes (an interrupted merge's rest)
        into.update((q, kept) for q in group if q != kept and same_paper(stored[q], stored[kept]))
    into = {a: _kept(into, a) for a in into}
    canon = {pid: _kept(into, kept) for pid, kept in canon.items()}
    if not into:
        return canon
    doomed = [cid for a in into for _, _, cids in states.get(a, {}).values() for cid in cids]

    def delete() -> None:
        if doomed:
            before_delete()
            store.delete(sorted(c for c in doomed if not c.endswith("#0")))
            store.delete(sorted(c for c in doomed if c.endswith("#0")))  # last: the paper is found until gone

    moved = collections.merge(into, delete)
    gone = sorted({rows.paper_of_chunk(c) for c in doomed})
    if gone:
        log.info("merged %d papers another writer stored at the same time (%d chunks deleted, %d memberships "
                 "moved), e.g. %s into %s", len(gone), len(doomed), moved, gone[0], into[gone[0]])
    return canon


def present(store: ChromaStore, paper_ids: list[str]) -> set[str]:
    """Which of these papers have a chunk-0 row stored."""
    return {p.id for p in store.papers(paper_ids)} if paper_ids else set()
