"""The full text of a Zotero attachment (a ``FullText`` source): its PDF, else the text Zotero extracted.

The PDF is read first: it knows its pages (a citation names the page), the size of its first page's letters
(the title) and which hyphens end a line, and it is read whole, where Zotero stops indexing at its "maximum
pages to index" (100 by default). The PDF is the attachment's stored file ("storage:paper.pdf"), a linked
file's full path, or else the one PDF in its folder. When there is no PDF, or it cannot be read (a scan
without a text layer, a password, a damaged file, too many pages), Zotero's own extraction in
``storage/<attachment key>/.zotero-ft-cache`` is read instead: pages split at form feeds when it has them;
without them it is one block whose page numbers are unknown (``RawText.paged`` is False). An attachment that
is not a PDF (a web page snapshot) has only that cache.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rag.ingest.fulltext.base import RawText, Refused
from rag.ingest.fulltext.pdf import PdfText

log = logging.getLogger(__name__)

FT_CACHE = ".zotero-ft-cache"
_STORED = "storage:"


class ZoteroText:
    """The full text of one attachment of a Zotero data folder (``folder`` holds ``zotero.sqlite`` and
    ``storage/``); ``path`` is Zotero's path of the attachment's file (``Attachment.path``)."""

    def __init__(self, folder: Path, key: str, path: str | None, max_pages: int) -> None:
        self.storage = folder / "storage" / key
        self.path = path
        self.max_pages = max_pages

    def pdf(self) -> Path | None:
        """The attachment's PDF file, when there is one."""
        if self.path and self.path.startswith(_STORED):
            candidate = self.storage / self.path[len(_STORED):]
        elif self.path:
            candidate = Path(self.path)
        else:
            candidate = None
        if candidate is not None and candidate.suffix.lower() == ".pdf" and candidate.is_file():
            return candidate
        found = sorted(self.storage.glob("*.pdf")) if self.storage.is_dir() else []
        return found[0] if len(found) == 1 else None

    def read(self) -> RawText:
        pdf = self.pdf()
        refused: Refused | None = None
        if pdf is not None:
            try:
                return PdfText(pdf, self.max_pages).read()
            except Refused as e:
                refused = e
        cached = self.cache()
        if cached is not None:
            if refused is not None:
                log.info("%s: %s; read Zotero's %s instead", pdf, refused.reason, FT_CACHE)
            return cached
        if refused is not None:
            raise refused
        if (self.storage / FT_CACHE).is_file():
            raise Refused(f"Zotero's {FT_CACHE} is empty and there is no PDF", where=str(self.storage / FT_CACHE))
        raise Refused(f"no full text: neither {FT_CACHE} nor a PDF file", where=str(self.storage))

    def cache(self) -> RawText | None:
        """Zotero's extracted text, or None when there is none (no file, or only white space)."""
        cache = self.storage / FT_CACHE
        if not cache.is_file():
            return None
        try:
            text = cache.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise Refused(f"cannot read the file: {e.strerror or e}", where=str(cache)) from None
        if not text.strip():
            return None
        paged = "\f" in text
        pages = text.split("\f")
        while len(pages) > 1 and not pages[-1].strip():
            pages.pop()
        if len(pages) > self.max_pages:
            raise Refused(f"too many pages: {len(pages)}, more than ingest.max_pdf_pages = {self.max_pages} "
                          "(PAPERCHAT_INGEST__MAX_PDF_PAGES)", where=str(cache))
        return RawText(str(cache), pages, paged=paged)
