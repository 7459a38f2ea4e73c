"""Read papers from the input formats paperchat supports.

Public API::

    detect_format(path) -> str                      # "listing", "arxiv-jsonl", "arxiv-atom", "bibtex",
                                                    # "csv", "json", "jsonl", "beir", "csl-json", "ris",
                                                    # "medline", "arxiv-oai", "zotero" or "pdf"
    iter_records(path, *, fmt=None, mapping=None)   # streams Paper | RecordProblem
    load(path, *, fmt=None, mapping=None, strict=False) -> LoadResult

A file that cannot be used at all raises one ``InputError`` (before any record where possible); a record
that has to be skipped is a ``RecordProblem`` (``file:line: reason``), or an ``InputError`` with ``strict``.
``mapping`` ({field: column}) applies to csv, json and jsonl; see ``rag.ingest.loaders.tabular``.

``FORMATS`` are the text formats, sniffed from their first 64 KB. A Zotero library (an SQLite file, or a
Zotero data folder holding ``zotero.sqlite``; ``rag.ingest.loaders.zotero``) and a PDF or a folder of PDFs
(``rag.ingest.loaders.pdf``) are recognised before them, by the file's first bytes, and never read as text.
"""

from __future__ import annotations

import contextvars
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from rag.errors import InputError
from rag.ingest.loaders.arxiv import ArxivAtomLoader, ArxivJsonlLoader
from rag.ingest.loaders.base import Item, Loader, LoadResult, RecordProblem
from rag.ingest.loaders.beir import CORPUS, BeirLoader
from rag.ingest.loaders.bibtex import BibtexLoader
from rag.ingest.loaders.common import ABSTRACT_CHARS, check_file, head_text, path_of, require_utf8
from rag.ingest.loaders.csl import CslJsonLoader
from rag.ingest.loaders.listing import ListingLoader
from rag.ingest.loaders.medline import MedlineLoader
from rag.ingest.loaders.oai import ArxivOaiLoader
from rag.ingest.loaders.pdf import MAX_PDF_PAGES, PASSAGE_TOKENS, PdfLoader
from rag.ingest.loaders.ris import RisLoader
from rag.ingest.loaders.tabular import FIELDS, CsvLoader, JsonlLoader, JsonLoader
from rag.ingest.loaders.zotero import ZoteroLoader

__all__ = ["FIELDS", "FORMATS", "LOADERS", "LoadResult", "RecordProblem", "detect_format", "iter_records", "load"]

log = logging.getLogger(__name__)

# Sniffing order: the most specific layouts first.
LOADERS: dict[str, Loader] = {
    loader.name: loader
    for loader in (BeirLoader(), CslJsonLoader(), ArxivJsonlLoader(), JsonlLoader(), ArxivOaiLoader(),
                   ArxivAtomLoader(), BibtexLoader(), RisLoader(), MedlineLoader(), CsvLoader(), JsonLoader(),
                   ListingLoader())
}
FORMATS = tuple(LOADERS)
ZOTERO = ZoteroLoader()  # binary: detected and read apart from the text formats
PDF = PdfLoader()  # binary too
_MAPPED = ("csv", "json", "jsonl")
_SUPPORTED = ("listing (.txt), arxiv-jsonl (arXiv metadata snapshot), arxiv-atom (arXiv API feed), bibtex (.bib), "
              "csv, json, jsonl, beir (corpus.jsonl or its folder), csl-json (Zotero/Mendeley CSL-JSON), "
              "ris (.ris), medline (PubMed .nbib), "
              "arxiv-oai (arXiv OAI-PMH harvest), zotero (zotero.sqlite or the Zotero data folder), "
              "pdf (a PDF file or a folder of PDFs)")


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of ``path``, decided from its extension and its first 64 KB.

    Raises ``InputError`` when the path cannot be read or matches no supported format.
    """
    p = path_of(path)
    if not p.exists():
        raise InputError("file not found", where=str(p))
    if p.is_dir():
        if (p / CORPUS).is_file():
            return "beir"
        if ZOTERO.sniff(p, ""):
            return ZOTERO.name
        if PDF.sniff(p, ""):
            return PDF.name
        raise InputError(f"is a directory, not a file (a BEIR dataset folder must contain {CORPUS}; a Zotero data "
                         "folder, zotero.sqlite; a folder of PDFs, PDF files)", where=str(p))
    if ZOTERO.sniff(p, ""):  # an SQLite database: the Zotero loader says whether it is a Zotero library
        return ZOTERO.name
    if PDF.sniff(p, ""):
        return PDF.name
    if p.name.lower() == "queries.jsonl" and (p.parent / CORPUS).is_file():
        raise InputError(f"is a BEIR queries file, not papers; load the folder or its {CORPUS}", where=str(p))
    head = head_text(check_file(p))
    for name, loader in LOADERS.items():
        if name in ("arxiv-atom", "arxiv-oai") and not head.lstrip("\ufeff \t\r\n").startswith("<"):
            continue
        if loader.sniff(p, head):
            log.debug("%s: detected format %s", p, name)
            return name
    what = "XML but not an Atom feed" if head.lstrip().startswith("<") else "not a format paperchat reads"
    raise InputError(f"cannot tell the format: {what}; supported formats: {_SUPPORTED}", where=str(p))


def iter_records(path: str | os.PathLike[str], *, fmt: str | None = None,
                 mapping: dict[str, str] | None = None, abstract_chars: int | None = None,
                 max_pdf_pages: int | None = None, passage_tokens: int = 0) -> Iterator[Item]:
    """Stream the papers of ``path`` (``Paper``) and the records that had to be skipped (``RecordProblem``).

    Whole-file problems (missing, unreadable, empty, binary, wrong encoding, unparseable, a mapping naming
    a missing column) raise ``InputError`` when this is called, before anything is yielded. Abstracts longer
    than ``abstract_chars`` (default: ``limits.abstract_chars``' default) are cut, with a warning naming
    ``file:line``; a PDF with more pages than ``max_pdf_pages`` (default: ``ingest.max_pdf_pages``' default) is
    refused. With ``passage_tokens`` (full text on), each PDF's paper carries its body as passages of at most
    that many cl100k tokens (``Paper.passages``).
    """
    p = path_of(path)
    if fmt is None:
        fmt = detect_format(p)
    elif fmt not in LOADERS and fmt not in (ZOTERO.name, PDF.name):
        raise InputError(f"unknown format {fmt!r}; supported formats: "
                         f"{', '.join((*FORMATS, ZOTERO.name, PDF.name))}",
                         where=str(p))
    if mapping is not None and not isinstance(mapping, dict):
        raise InputError("the column mapping must be a dict of field → column name", where=str(p))
    if mapping and fmt not in _MAPPED:
        raise InputError(f"a column mapping applies to csv, json and jsonl files, but this is {fmt}; "
                         f"pass fmt='jsonl' (or 'json'/'csv') to read it as plain records with the mapping",
                         where=str(p))
    ctx = contextvars.copy_context()
    if abstract_chars is not None:
        ctx.run(ABSTRACT_CHARS.set, abstract_chars)
    if max_pdf_pages is not None:
        ctx.run(MAX_PDF_PAGES.set, max_pdf_pages)
    ctx.run(PASSAGE_TOKENS.set, passage_tokens)
    if fmt in (ZOTERO.name, PDF.name):  # a database or PDFs, checked by their loader (never as text)
        binary = ZOTERO if fmt == ZOTERO.name else PDF
        return _guard(ctx, ctx.run(binary.iter_records, p, None), p)
    if fmt == "beir" and p.is_dir():
        if not (p / CORPUS).is_file():
            raise InputError(f"is a directory without {CORPUS}", where=str(p))
        head = check_file(p / CORPUS)
    else:
        head = check_file(p)
    if fmt not in ("csv", "arxiv-atom"):  # CSV falls back to cp1252; Atom XML declares its own encoding
        require_utf8(p, head)
    loader = LOADERS[fmt]
    return _guard(ctx, ctx.run(loader.iter_records, p, mapping), p)


def _guard(ctx: contextvars.Context, items: Iterator[Item], path: Path) -> Iterator[Item]:
    """Run every step of the loader in ``ctx`` (which holds the abstract limit) and turn I/O failures in
    mid-stream into one ``InputError``."""
    it = iter(items)
    while True:
        try:
            item = ctx.run(next, it, None)
        except OSError as e:
            raise InputError(f"reading failed: {e.strerror or e}", where=str(path)) from None
        except RecursionError:
            raise InputError("the data is nested too deeply", where=str(path)) from None
        if item is None:
            return
        yield item


def load(path: str | os.PathLike[str], *, fmt: str | None = None, mapping: dict[str, str] | None = None,
         strict: bool = False, abstract_chars: int | None = None, max_pdf_pages: int | None = None,
         passage_tokens: int = 0) -> LoadResult:
    """Load every paper of ``path``. Skipped records are collected in ``problems``; with ``strict=True`` the
    first one raises ``InputError`` naming ``file:line`` and the reason. ``abstract_chars`` and
    ``max_pdf_pages`` and ``passage_tokens`` as in ``iter_records``."""
    p = path_of(path)
    fmt = fmt or detect_format(p)
    result = LoadResult(format=fmt)
    for item in iter_records(p, fmt=fmt, mapping=mapping, abstract_chars=abstract_chars, max_pdf_pages=max_pdf_pages,
                             passage_tokens=passage_tokens):
        if isinstance(item, RecordProblem):
            if strict:
                raise InputError(item.reason, where=f"{item.file}:{item.line}")
            log.debug("skipped %s", item)
            result.problems.append(item)
        else:
            result.papers.append(item)
    if result.problems:
        log.warning("%s: %d papers loaded, %d records skipped (first: %s)", p, len(result.papers),
                    len(result.problems), result.problems[0])
    else:
        log.info("%s: %d papers loaded (%s)", p, len(result.papers), fmt)
    return result
