"""Ingest: records → chunks → embeddings → store, idempotent, incremental and crash-safe.

Re-ingesting an unchanged file embeds and writes nothing; a changed record is updated in place
(new version written before the old one is deleted); a run killed at any point and re-run ends
with every paper stored exactly once. Derived indexes (BM25) are synced through ``on_change``. Several
writers may ingest into one store at once: after each batch, the copies of its papers that another writer
stored at the same moment under other ids are merged into one (``rag.ingest.converge``).

Collections: after each file, its papers (duplicates counted as the paper they duplicate) join the
``collection`` given to :meth:`Ingestor.ingest`, and the collections the records name themselves (a
Zotero library's) are synced with that file as their origin, so what left a collection there leaves it
here. A file that fails midway changes no membership.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rag.errors import InputError
from rag.index.collections import Collections, check_name
from rag.index.embeddings import Embedder
from rag.index.rows import ABSTRACT_HASH, ARXIV_ID, DOI, chunk_id, chunk_metadata
from rag.index.store import ChromaStore, ChunkRow
from rag.ingest import loaders
from rag.ingest import passages as full_text
from rag.ingest.chunking import chunk_papers
from rag.ingest.converge import Keys, distinct, present, settle
from rag.ingest.loaders.base import RecordProblem
from rag.ingest.report import counts as problem_counts
from rag.quarantine import evidence_texts
from rag.records import Paper

log = logging.getLogger(__name__)


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    duplicates: int = 0
    skipped: int = 0
    failed: int = 0  # files that could not be ingested at all
    embedded_chunks: int = 0
    embedded_sentences: int = 0  # with ingest.sentence_vectors
    full_text: int = 0  # papers whose full-text passages were written (ingest.full_text)
    embedded_passages: int = 0
    collected: int = 0  # papers that joined a collection (the ``collection`` given, or their file's)
    uncollected: int = 0  # memberships removed because their file no longer has them
    problems: list[str] = field(default_factory=list)
    file_errors: list[str] = field(default_factory=list)
    # the skipped records themselves, for the per-reason summary and the report file (rag.ingest.report)
    skipped_records: list[RecordProblem] = field(default_factory=list)
    report_path: str | None = None  # where the full list of skipped records was written, if anywhere

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated)

    def summary(self) -> str:
        text = (f"added {self.added}, updated {self.updated}, unchanged {self.unchanged}, "
                f"duplicates {self.duplicates}, skipped {self.skipped}, failed {self.failed}")
        if self.full_text:
            text += f"; full text stored for {self.full_text} papers ({self.embedded_passages} passages)"
        return text

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("added", "updated", "unchanged", "duplicates", "skipped", "failed",
                                             "embedded_chunks", "embedded_sentences", "full_text",
                                             "embedded_passages", "collected", "uncollected",
                                             "problems", "file_errors")}
        return out | {"skipped_by_reason": problem_counts(self.skipped_records), "report": self.report_path}


@dataclass
class BatchPlan:
    """What one batch of records asks of the store, decided before anything is embedded."""

    to_write: list[tuple[Paper, str]]  # (paper, content hash) whose chunks must be (re)written
    stale: list[str]  # chunk ids of other versions, deleted once the new version is written
    placed: list[tuple[str, list[str]]]  # (stored paper id, collections the record names) of every record
    added: set[str] = field(default_factory=set)  # ids of the papers counted as added


def paper_rows(papers: list[tuple[Paper, str]], embedder: Embedder, max_tokens: int, overlap: int) -> list[ChunkRow]:
    """Chunk and embed papers (with their content hashes) into the rows the store holds: one function for
    the single-process ingest and the Ray workers (rag.ingest.ray_ingest), so both write the same rows."""
    if not papers:
        return []
    windows = chunk_papers([p for p, _ in papers], embedder.count_tokens, max_tokens, overlap)
    vectors = embedder.embed([c.text for cs in windows for c in cs])
    rows: list[ChunkRow] = []
    for (p, h), cs in zip(papers, windows):
        for c in cs:
            rows.append(ChunkRow(chunk_id(p.id, h, c.index), p.id, c.text, vectors[len(rows)],
                                 chunk_metadata(p, h, c.index, len(cs), c.llm_tokens)))
    return rows


def _distinct(p: Paper, doi: str, arxiv_id: str) -> bool:
    return distinct(Keys.of(p), Keys(doi, arxiv_id, ""))


class Ingestor:
    """Turns files into stored papers. One instance per process; the embedder is loaded once."""

    def __init__(self, store: ChromaStore, embedder: Embedder, max_chunk_tokens: int = 0, overlap: int = 1,
                 on_change: Iterable[Callable[[ChromaStore], None]] = (), progress: bool = True,
                 batch_papers: int = 1024, abstract_chars: int | None = None, sentence_vectors: bool = False,
                 sentence_embedder: Embedder | None = None, max_pdf_pages: int | None = None,
                 passage_tokens: int = 0) -> None:
        self.store, self.embedder = store, embedder
        self.abstract_chars = abstract_chars  # longer abstracts are cut at a sentence end, with a warning
        self.max_pdf_pages = max_pdf_pages  # a longer PDF is refused with its reason
        self.passage_tokens = passage_tokens  # > 0: full text on, PDFs' passages stored (rag.ingest.passages)
        window = embedder.max_tokens
        self.max_tokens = min(max_chunk_tokens, window) if max_chunk_tokens else window
        self.overlap = overlap
        self.on_change = list(on_change)
        self.progress = progress
        self.batch_papers = batch_papers
        self.sentence_vectors = sentence_vectors  # warm the embedding cache with every abstract sentence
        self.sentence_embedder = sentence_embedder or embedder  # ... as answers will score them
        self._seen: dict[str, str] = {}  # doi / arxiv / abstract key → paper id, within this run
        self._ids: dict[str, tuple[str, str]] = {}  # paper id → (doi, arxiv id), within this run
        self._canon: dict[str, str] = {}  # id of a record skipped as a duplicate → id of the paper it duplicates
        self._placed: list[tuple[str, list[str]]] = []  # (stored paper id, collections named) of the current file
        # the file the current one's records name as theirs (a Zotero data folder's zotero.sqlite), resolved:
        # the key its collections are synced under, however the library was named on the command line
        self._origin = ""
        self.collections = Collections(store)
        self._bumped = False  # the generation was bumped before this run's first write

    def ingest(self, paths: Iterable[Path | str], *, fmt: str | None = None, mapping: dict[str, str] | None = None,
               strict: bool = False, collection: str | None = None) -> IngestReport:
        """Ingest files; every paper they hold (stored, unchanged or a duplicate of a stored one) also joins
        ``collection`` when given."""
        report = IngestReport()
        collection = check_name(collection) if collection is not None else None
        self._reset_run()
        for path in map(Path, paths):
            try:
                if strict:  # validate the whole file first so a bad record stores nothing from it
                    loaders.load(path, fmt=fmt, mapping=mapping, strict=True, abstract_chars=self.abstract_chars,
                                 max_pdf_pages=self.max_pdf_pages)
                records = loaders.iter_records(path, fmt=fmt, mapping=mapping, abstract_chars=self.abstract_chars,
                                               max_pdf_pages=self.max_pdf_pages, passage_tokens=self.passage_tokens)
                self._placed, self._origin = [], ""
                self._ingest_items(path, records, report)
                self._file_done(report, collection, origin=self._origin or str(path.resolve()))
            except InputError as e:
                report.failed += 1
                report.file_errors.append(str(e))
                log.error("%s", e)
        self._drain(report)
        if report.changed or report.file_errors or report.problems or self._bumped:
            self.store.bump_generation()
        for hook in self.on_change:
            hook(self.store)
        return report

    def ingest_papers(self, papers: Iterable[Paper], collection: str | None = None) -> IngestReport:
        """Ingest records already in memory (tests, benchmarks, other front ends); with ``collection``, they
        join it (the collections the records name are added to, never synced: there is no file to sync with)."""
        report = IngestReport()
        collection = check_name(collection) if collection is not None else None
        self._reset_run()
        self._ingest_items(Path("<memory>"), iter(papers), report)
        self._file_done(report, collection, origin=None)
        self._drain(report)
        if report.changed or self._bumped:
            self.store.bump_generation()
        for hook in self.on_change:
            hook(self.store)
        return report

    def _reset_run(self) -> None:
        self._seen.clear()
        self._ids.clear()
        self._canon.clear()
        self._placed, self._origin = [], ""
        self._bumped = False

    def _file_done(self, report: IngestReport, collection: str | None, origin: str | None) -> None:
        """A file's records are all written: its memberships (a subclass that writes later defers this)."""
        self._collect(report, collection, origin)

    def _drain(self, report: IngestReport) -> None:
        """Every record is handed over: a subclass that writes elsewhere waits for its writes here."""

    def _collect(self, report: IngestReport, collection: str | None, origin: str | None,
                 placed: list[tuple[str, list[str]]] | None = None) -> None:
        """Memberships of the file just ingested (``placed``, default the current file's): all its papers join
        ``collection``; the collections its records name are synced with ``origin`` (added to, when there is
        none)."""
        if placed is None:
            placed, self._placed = self._placed, []
        ids = list(dict.fromkeys(pid for pid, _ in placed))
        if collection and ids:
            report.collected += self.collections.add(collection, ids)
        wanted: dict[str, list[str]] = {}
        for pid, names in placed:
            for name in names:
                wanted.setdefault(name, []).append(pid)
        if origin is None:
            for name, members in wanted.items():
                report.collected += self.collections.add(name, members)
        elif wanted or self.collections.has_origin(origin):
            changed = self.collections.sync(origin, wanted)
            report.collected += changed["added"]
            report.uncollected += changed["removed"]
        # a paper merged into another after its membership was decided (another writer settled since): follow it
        self.collections.follow_merges(ids, lambda some: present(self.store, some))

    def _before_first_write(self) -> None:
        """Bump the store generation before a run's first write, not only after its last: a run killed in
        between (even one whose rewrite kept the chunk count) leaves derived indexes visibly stale, so the
        next sync rebuilds them instead of trusting a saved (generation, count) that still matches."""
        if not self._bumped:
            self.store.bump_generation()
            self._bumped = True

    def _ingest_items(self, path: Path, items: Iterator[Paper | RecordProblem], report: IngestReport) -> None:
        bar = tqdm(desc=f"ingest {path.name}", unit=" papers", disable=None if self.progress else True, leave=False)
        batch: list[Paper] = []
        try:
            for item in items:
                if isinstance(item, RecordProblem):
                    self._keep_placed(item)
                    report.skipped += 1
                    report.problems.append(str(item))
                    report.skipped_records.append(item)
                    # one line per record only with -v; the run ends with one line per reason instead
                    log.info("skipped %s", item)
                    continue
                batch.append(item)
                if len(batch) >= self.batch_papers:
                    self._write_batch(batch, report)
                    bar.update(len(batch))
                    batch = []
            if batch:
                self._write_batch(batch, report)
                bar.update(len(batch))
        finally:
            bar.close()

    def _keep_placed(self, skipped: RecordProblem) -> None:
        """A record skipped now whose paper is stored (a Zotero item without an abstract, stored before from its
        full text) keeps the memberships its file names: only what the user removed there leaves a collection."""
        if skipped.keeps is not None:
            pid, names = skipped.keeps
            if names and present(self.store, [pid]):
                self._placed.append((pid, list(names)))

    def _dedupe(self, batch: list[Paper], report: IngestReport) -> list[Paper]:
        """Drop papers seen earlier in this run or already stored under another id."""
        fresh: list[Paper] = []
        for p in batch:
            keys = [k for k in (f"doi:{p.doi}" if p.doi else "", f"arxiv:{p.arxiv_id}" if p.arxiv_id else "",
                                f"abs:{p.abstract_hash}") if k]
            other = next((self._seen[k] for k in keys + [f"id:{p.id}"] if k in self._seen
                          and not (k.startswith("abs:") and _distinct(p, *self._ids[self._seen[k]]))), None)
            if other is not None:
                report.duplicates += 1
                log.info("%s: duplicate of %s, skipped", p.origin, other or p.id)
                if other != p.id:
                    self._canon[p.id] = self._canon.get(other, other)
                continue
            for k in keys + [f"id:{p.id}"]:
                self._seen.setdefault(k, p.id)
            self._ids[p.id] = (p.doi or "", p.arxiv_id or "")
            fresh.append(p)
        stored: dict[str, str] = {}
        for fld, vals in ((DOI, [p.doi for p in fresh]), (ARXIV_ID, [p.arxiv_id for p in fresh]),
                          (ABSTRACT_HASH, [p.abstract_hash for p in fresh])):
            for value, pid in self.store.find_by_keys(fld, [v for v in vals if v]).items():
                stored[f"{fld}:{value}"] = pid
        same_abstract = {pid for k, pid in stored.items() if k.startswith(f"{ABSTRACT_HASH}:")}
        known = {sp.id: sp for sp in self.store.papers(sorted(same_abstract))} if same_abstract else {}
        out = []
        for p in fresh:
            hits = {hit for k in (f"{DOI}:{p.doi}", f"{ARXIV_ID}:{p.arxiv_id}") if (hit := stored.get(k))}
            if (hit := stored.get(f"{ABSTRACT_HASH}:{p.abstract_hash}")) and not (
                    (sp := known.get(hit)) and _distinct(p, sp.doi or "", sp.arxiv_id or "")):
                hits.add(hit)
            if hits and p.id not in hits:
                report.duplicates += 1
                log.info("%s: already stored as %s, skipped", p.origin, sorted(hits)[0])
                self._canon[p.id] = sorted(hits)[0]
                continue
            out.append(p)
        return out

    def _settle(self, batch: list[Paper], plan: BatchPlan, report: IngestReport) -> None:
        """After the batch is written: the copies of its papers another writer stored at the same time are merged
        (``rag.ingest.converge``), and the batch's records are placed (and counted) as the papers kept."""
        kept = settle(self.store, self.collections, batch, before_delete=self._before_first_write)
        for p in batch:
            if kept.get(p.id, p.id) != p.id:
                self._canon[p.id] = kept[p.id]
                if p.id in plan.added:  # written, then found stored already: a duplicate after all
                    report.added -= 1
                    report.duplicates += 1
        plan.placed = [(kept.get(p.id, pid), names) for p, (pid, names) in zip(batch, plan.placed, strict=True)]

    def _plan_batch(self, batch: list[Paper], report: IngestReport) -> BatchPlan:
        """Dedupe a batch and compare it with the store: which papers to write, which old chunks to delete.
        Counts added / updated / unchanged / duplicates; changes nothing stored."""
        incoming = [(p.id, p.collections) for p in batch]
        if batch and not self._origin and batch[0].origin_file:
            self._origin = str(Path(batch[0].origin_file).resolve())
        batch = self._dedupe(batch, report)
        states = self.store.chunk_states([p.id for p in batch])
        to_write: list[tuple[Paper, str]] = []
        stale: list[str] = []
        added: set[str] = set()
        for p in batch:
            h = p.content_hash()
            versions = states.get(p.id, {})
            current = versions.get(h)
            complete = current is not None and current[0] == current[1]
            for other_hash, (_, _, ids) in versions.items():
                if other_hash != h:
                    stale.extend(ids)
            if complete and len(versions) == 1:
                report.unchanged += 1
                continue
            if complete:  # new version landed, old one not yet deleted (an earlier run died here)
                report.updated += 1
                continue
            to_write.append((p, h))
            if versions:
                report.updated += 1
            else:
                report.added += 1
                added.add(p.id)
        placed = [(self._canon.get(pid, pid), names) for pid, names in incoming]
        return BatchPlan(to_write, stale, placed, added)

    def _write_passages(self, batch: list[Paper], report: IngestReport) -> None:
        """After the batch's papers are stored: their full-text passages, under the paper each record is stored
        as (a PDF of a paper stored from another file adds its passages to that paper)."""
        todo = self._plan_passages(batch)
        self._store_passages(todo, full_text.rows(todo.to_write, self.embedder), report)

    def _plan_passages(self, batch: list[Paper]) -> full_text.PassagePlan:
        records = {self._canon.get(p.id, p.id): p.passages for p in batch if p.passages}
        return full_text.plan(self.store, records) if records else full_text.PassagePlan([], [])

    def _store_passages(self, todo: full_text.PassagePlan, rows: list[ChunkRow], report: IngestReport) -> None:
        """Write the embedded passages of ``todo``, then delete the versions they replace."""
        if todo.to_write:
            self._before_first_write()
            self.store.upsert(rows)
            report.full_text += len(todo.to_write)
            report.embedded_passages += len(rows)
        if todo.stale:  # only once the new version is whole
            self._before_first_write()
            self.store.delete(todo.stale)

    def _write_batch(self, batch: list[Paper], report: IngestReport) -> None:
        plan = self._plan_batch(batch, report)
        rows: list[ChunkRow] = []
        if plan.to_write:
            rows = paper_rows(plan.to_write, self.embedder, self.max_tokens, self.overlap)
            report.embedded_chunks += len(rows)
            self._before_first_write()
            self.store.upsert(rows)
            if self.sentence_vectors:  # the vectors land in the embedding cache, where answers look first
                sentences = [t for p, _ in plan.to_write for t in evidence_texts(p.abstract)]
                self.sentence_embedder.embed(sentences)
                report.embedded_sentences += len(sentences)
        if plan.stale:
            self._before_first_write()
            self.store.delete(plan.stale)
        self._settle(batch, plan, report)
        self._write_passages(batch, report)
        # after the papers are written: a membership never names a paper that a crash kept out of the store
        self._placed.extend(plan.placed)
        log.info("batch written: %d papers, %d chunks embedded, %d stale chunks deleted", len(plan.to_write),
                 len(rows), len(plan.stale))
