"""PDF files read as papers: ``paperchat ingest paper.pdf`` or a folder of PDFs (its subfolders too).

Each PDF becomes one paper from its own text (``rag.ingest.fulltext``): title, authors and abstract from its
metadata and first page, the arXiv id or DOI found there (so the store links it to the same paper from
another file: a PDF of a stored paper is its duplicate, skipped), id ``pdf:<sha1 of the file>`` always.
The abstract is the PDF's text, and a note says so ("abstract taken from the PDF text (the Abstract section of
page 1)"). With full text on (``PASSAGE_TOKENS`` > 0), the paper also carries its body as passages
(``Paper.passages``), which the ingest stores beside the abstract.

A single PDF that cannot be read raises one ``InputError`` (the file and the reason: it needs a password,
it has no text layer, it is damaged, it has more pages than ``ingest.max_pdf_pages``); in a folder, such a
PDF is a ``RecordProblem`` with the same reason and the other PDFs are read.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from rag.config import IngestSettings
from rag.errors import InputError
from rag.ingest.fulltext import Passage, PdfText, Refused, TooManyPages, clean, describe, passages
from rag.ingest.loaders.base import Item, note
from rag.ingest.loaders.common import make_paper, problem, read_head
from rag.records import Paper, assign_id

log = logging.getLogger(__name__)

PDF_MAGIC = b"%PDF-"
_HEAD = 1024  # the header may follow some junk within the first 1,024 bytes (PDF 32000-1, annex H)
# ingest.max_pdf_pages for the files being read; ``rag.ingest.loaders.iter_records`` sets it
MAX_PDF_PAGES: contextvars.ContextVar[int] = contextvars.ContextVar(
    "max_pdf_pages", default=IngestSettings.model_fields["max_pdf_pages"].default)
# the largest passage (cl100k tokens) when full text is on, 0 when it is off
PASSAGE_TOKENS: contextvars.ContextVar[int] = contextvars.ContextVar("passage_tokens", default=0)


def is_pdf(path: Path) -> bool:
    """A file that starts like a PDF (or is named ``*.pdf``)."""
    if path.suffix.lower() == ".pdf":
        return True
    try:
        return PDF_MAGIC in read_head(path, _HEAD)
    except InputError:
        return False


def pdfs_in(folder: Path) -> list[Path]:
    """The PDF files under ``folder``, in name order."""
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file())


def _file_id(path: Path) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()[:16]


def body_passages(found: list[Passage]) -> tuple[Passage, ...]:
    """The passages worth storing beside the abstract chunk: not the abstract again, nor the front matter before
    the first heading on page 1 (title, authors, affiliations); renumbered from 0."""
    kept = [p for p in found if p.section.strip().rstrip(".").casefold() != "abstract"
            and not (p.section == "" and p.page_start == 1)]
    return tuple(replace(p, ordinal=i) for i, p in enumerate(kept))


def pdf_record(path: Path) -> Item:
    """One PDF → a ``Paper`` (or a ``RecordProblem`` when its text has no usable abstract); raises
    ``Refused`` when the text cannot be had."""
    reader = PdfText(path, MAX_PDF_PAGES.get())
    too_long: TooManyPages | None = None
    try:
        raw = reader.read()
    except TooManyPages as e:  # a book or a proceedings volume: the paper from its first pages, no full text
        too_long = e
        try:
            raw = reader.read_head()
        except Refused:
            raise e from None  # the page limit is the reason to give
    doc = clean(raw)
    desc = describe(raw, doc)
    try:
        own = _file_id(path)
    except OSError as e:
        raise Refused(f"cannot read the file: {e.strerror or e}", where=str(path)) from None
    paper = make_paper(path, 1, abstract=desc.abstract, title=desc.title, authors=desc.authors, year=desc.year,
                       doi=desc.doi, arxiv_id=desc.arxiv_id, kind="pdf", own_id=own)
    if too_long is not None and not isinstance(paper, Paper):
        raise too_long  # its first pages give no paper either: the page limit is the reason to give
    if isinstance(paper, Paper):
        # Always the file's own id, never the arXiv id or DOI: a record of the same paper stored from a richer
        # file (an arXiv dump, Zotero) under that id is then a duplicate the store links to and skips, instead
        # of being overwritten by what the PDF's first page gave (categories and venue lost).
        paper.id = assign_id("pdf", own, doi=None, arxiv_id=None, abstract=paper.abstract)
        note(path, 1, f"abstract taken from the PDF text ({desc.abstract_origin})")
        if too_long is not None:
            note(path, 1, f"{too_long.reason}: stored from its first pages (title, abstract), without its full text")
        elif budget := PASSAGE_TOKENS.get():
            paper.passages = body_passages(passages(doc, budget))
    return paper


class PdfLoader:
    """Loader for PDF files and folders of PDFs (binary: detected and read apart from the text formats)."""

    name = "pdf"

    def sniff(self, path: Path, head: str) -> bool:
        return (path.is_dir() and bool(pdfs_in(path))) or (path.is_file() and is_pdf(path))

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """A file is read now (its error comes before any record); a folder's files one by one, each
        unreadable one yielded as a ``RecordProblem``."""
        if not path.is_dir():
            return iter([pdf_record(path)])
        files = pdfs_in(path)
        if not files:
            raise InputError("is a folder without PDF files", where=str(path))
        return self._each(files)

    def _each(self, files: list[Path]) -> Iterator[Item]:
        for f in files:
            try:
                yield pdf_record(f)
            except Refused as e:
                log.info("skipped %s: %s", f, e.reason)
                yield problem(f, 1, e.reason)
