"""The full text of a Zotero attachment (a ``FullText`` source): Zotero's own extraction when it made one,
else the PDF.

Zotero keeps the text it extracted from an attachment in ``storage/<attachment key>/.zotero-ft-cache``, pages
separated by form feeds. That text is read when present; a cache without page breaks is used only when there
is no PDF to read instead (its page numbers would be unknown: ``RawText.paged`` is False). The PDF is the
attachment's stored file ("storage:paper.pdf"), a linked file's full path, or else the one PDF in its folder.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rag.ingest.fulltext.base import RawText, Refused
from rag.ingest.fulltext.pdf import NO_TEXT_LAYER, PdfText

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
        cache = self.storage / FT_CACHE
        pdf = self.pdf()
        if cache.is_file():
            try:
                text = cache.read_text(encoding="utf-8", errors="replace")
            except OSError as e:
                raise Refused(f"cannot read the file: {e.strerror or e}", where=str(cache)) from None
            paged = "\f" in text
            if text.strip() and (paged or pdf is None):
                pages = text.split("\f")
                while len(pages) > 1 and not pages[-1].strip():
                    pages.pop()
                if len(pages) > self.max_pages:
                    raise Refused(f"too many pages: {len(pages)}, more than ingest.max_pdf_pages = "
                                  f"{self.max_pages} (PAPERCHAT_INGEST__MAX_PDF_PAGES)", where=str(cache))
                return RawText(str(cache), pages, paged=paged)
            log.debug("%s: %s; reading %s instead", cache, "empty" if not text.strip() else "no page breaks", pdf)
        if pdf is not None:
            return PdfText(pdf, self.max_pages).read()
        if cache.is_file():
            raise Refused(NO_TEXT_LAYER, where=str(cache))
        raise Refused(f"no full text: neither {FT_CACHE} nor a PDF file", where=str(self.storage))
