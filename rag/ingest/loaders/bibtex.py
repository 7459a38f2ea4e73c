"""BibTeX as Zotero, Google Scholar or JabRef export it, parsed with bibtexparser 2.x.

An entry with an ``abstract`` becomes a ``Paper`` (id ``bib:<citation key>`` unless it has an arXiv id or
DOI); an entry without one, a duplicate key or a block the parser had to abort becomes a ``RecordProblem``
at the entry's line, and the rest of the file still loads.

Lines count from 1 as an editor shows them (``\n`` ends a line; CRLF is one line end). bibtexparser's
``start_line`` counts from 0, and so does the "Parsing of `@article` block (line N) aborted" warning it logs;
that warning is held back while this loader parses, because the ``RecordProblem`` already names the block at
its real line and two numbers one apart for the same entry send the user to the wrong line.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import bibtexparser
from bibtexparser import model

from rag.errors import InputError
from rag.ingest.loaders.base import Item, RecordProblem, note
from rag.ingest.loaders.common import make_paper, problem, read_text, split_authors, split_list

log = logging.getLogger(__name__)

_ENTRY_START = re.compile(r"^\s*@\s*([A-Za-z]+)\s*[{(]\s*([^,\s]*)", re.M)
_ARXIV_IN_TEXT = re.compile(r"(?:arxiv:\s*|arxiv\.org/(?:abs|pdf)/)([a-z\-]+(?:\.[A-Z]{2})?/\d{7}|\d{4}\.\d{4,5})",
                            re.I)


class _HoldSplitterNotices(logging.Filter):
    """Drops bibtexparser.splitter's warning/info records in a thread while this loader parses there.

    Errors pass: the splitter logs them only before raising, and the raise becomes an ``InputError``."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or not getattr(self._local, "holding", False)

    @contextmanager
    def holding(self) -> Iterator[None]:
        before = getattr(self._local, "holding", False)
        self._local.holding = True
        try:
            yield
        finally:
            self._local.holding = before


# Installed once (a filter attached per parse would race between threads); inert outside ``holding()``.
_SPLITTER_NOTICES = _HoldSplitterNotices()
logging.getLogger("bibtexparser.splitter").addFilter(_SPLITTER_NOTICES)


def block_line(block: model.Block) -> int:
    """The 1-based file line a parsed block starts on (bibtexparser's ``start_line`` is 0-based)."""
    return (block.start_line or 0) + 1


def _fields(entry: model.Entry) -> dict[str, str]:
    out: dict[str, str] = {}
    for f in entry.fields:
        key = f.key.lower()
        if key not in out and isinstance(f.value, str):
            out[key] = f.value
    return out


def _arxiv_id(f: dict[str, str]) -> str | None:
    prefix = (f.get("archiveprefix") or f.get("eprinttype") or "").strip().lower()
    if f.get("eprint") and prefix == "arxiv":
        return f["eprint"]
    for key in ("journal", "note", "url", "howpublished", "eprint"):
        m = _ARXIV_IN_TEXT.search(f.get(key) or "")
        if m:
            return m.group(1)
    return None


def entry_paper(path: Path, entry: model.Entry) -> Item:
    """One parsed entry → ``Paper``, or a ``RecordProblem`` when it has no abstract."""
    line = block_line(entry)
    f = _fields(entry)
    if not (f.get("abstract") or "").strip():
        return problem(path, line, f"no abstract in entry '{entry.key}'")
    return make_paper(
        path, line, abstract=f["abstract"], title=f.get("title"),
        authors=split_authors(f.get("author") or f.get("editor"), style="bibtex"),
        categories=split_list(f.get("keywords")), year=f.get("year") or f.get("date"),
        venue=f.get("journal") or f.get("journaltitle") or f.get("booktitle") or f.get("howpublished"),
        url=f.get("url"), doi=f.get("doi"), arxiv_id=_arxiv_id(f), kind="bib", own_id=entry.key)


def _failed(path: Path, block: model.ParsingFailedBlock) -> Iterator[Item]:
    line = block_line(block)
    if isinstance(block, model.DuplicateBlockKeyBlock):
        yield problem(path, line, f"duplicate citation key '{block.key}'; the first entry with it was kept")
        return
    if isinstance(block, model.DuplicateFieldKeyBlock) and isinstance(block.ignore_error_block, model.Entry):
        item = entry_paper(path, block.ignore_error_block)
        if not isinstance(item, RecordProblem):  # a skipped entry is reported for what skipped it
            keys = ", ".join(sorted(block.duplicate_keys))
            note(path, line, f"a field given twice in the entry, the first value used ({keys} in "
                             f"'{block.ignore_error_block.key}')")
        yield item
        return
    if isinstance(block, model.MiddlewareErrorBlock) and isinstance(block.ignore_error_block, model.Entry):
        yield entry_paper(path, block.ignore_error_block)
        return
    m = _ENTRY_START.match(block.raw or "")
    what = f"entry '{m.group(2)}'" if m and m.group(2) else "entry"
    reason = getattr(block.error, "abort_reason", None) or str(block.error) or type(block.error).__name__
    reason = " ".join(str(reason).split())
    yield problem(path, line, f"could not parse {what} (unbalanced braces or quotes?): {reason}")


class BibtexLoader:
    """Loader for ``.bib`` files."""

    name = "bibtex"

    def sniff(self, path: Path, head: str) -> bool:
        """A ``.bib`` file, or text that starts entries with ``@type{key,``."""
        if path.suffix.lower() in (".bib", ".bibtex"):
            return True
        # [ \t]*, not \s*: with re.M, \s* at every line start re-scans all the blank lines after it (a head of
        # 64 KB of newlines took 30 s).
        return bool(re.search(r"^[ \t]*@[ \t]*(article|inproceedings|incollection|misc|book|phdthesis|mastersthesis|"
                              r"techreport|unpublished|online|conference|inbook|report|thesis)\s*[{(]", head,
                              re.I | re.M))

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Parse the whole file (it is needed for ``@string`` macros), then yield entries in file order."""
        text = read_text(path)
        try:
            with _SPLITTER_NOTICES.holding():
                library = bibtexparser.parse_string(text)
        except Exception as e:  # the parser raises only on internal errors; never show a traceback
            raise InputError(f"cannot parse BibTeX: {type(e).__name__}: {e}", where=str(path)) from None
        blocks: list[Any] = [b for b in library.blocks
                             if isinstance(b, (model.Entry, model.ParsingFailedBlock))]
        if not blocks:
            raise InputError("no BibTeX entries found (expected @article{key, ...} blocks)", where=str(path))
        blocks.sort(key=lambda b: b.start_line or 0)
        return self._records(path, blocks)

    def _records(self, path: Path, blocks: list[Any]) -> Iterator[Item]:
        for block in blocks:
            if isinstance(block, model.Entry):
                yield entry_paper(path, block)
            else:
                yield from _failed(path, block)
