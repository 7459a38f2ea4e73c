"""Text out of a PDF file, page by page, with pypdfium2 (PDFium; chosen by measurement, docs/fulltext.md).

PDFium gives the characters in content order, which is reading order for the two-column layouts measured
(LaTeX, ACM, REVTeX, Springer); it writes ligatures out itself, and marks a hyphen it took for a line-end
hyphenation as U+FFFE (mended in ``rag.ingest.fulltext.clean``). A file PDFium cannot use is refused with
one ``Refused`` (an ``InputError``) naming the file and the reason: it needs a password, it is damaged or not
a PDF, it has more pages than ``ingest.max_pdf_pages``, or it has no text layer (a scan; paperchat does no
OCR). A file encrypted with an empty user password (permissions only) opens as any other.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from rag.ingest.fulltext.base import RawText, Refused, TooManyPages

if TYPE_CHECKING:
    import pypdfium2 as pdfium

log = logging.getLogger(__name__)

NO_TEXT_LAYER = "no text layer: OCR is not available (a scanned PDF; run it through OCR, e.g. ocrmypdf, first)"
# PDFium's load errors (FPDF_GetLastError), as the reader should hear them
_LOAD_ERRORS = {
    2: "cannot open the file",
    3: "the file is damaged or not a PDF (PDFium: data format error)",
    4: "encrypted: it needs a password, and paperchat does not ask for one (save an unprotected copy)",
    5: "encrypted with a security handler PDFium does not support (save an unprotected copy)",
}
_MIN_CHARS_PER_PAGE = 20  # fewer letters than this on average: a scan with a stray caption, not a text layer


class PdfText:
    """The full text of one PDF file (a ``FullText`` reader)."""

    def __init__(self, path: Path, max_pages: int) -> None:
        self.path = path
        self.max_pages = max_pages

    def read(self) -> RawText:
        return self._read(head=0)

    def read_head(self, pages: int = 2) -> RawText:
        """The first ``pages`` pages only, whatever the page limit: enough for a too-long PDF's title, authors and
        abstract (its full text stays refused)."""
        return self._read(head=pages)

    def _read(self, head: int) -> RawText:
        import pypdfium2 as pdfium  # here, not at import: 40 ms that only reading a PDF needs

        where = str(self.path)
        try:
            doc = pdfium.PdfDocument(str(self.path))
        except pdfium.PdfiumError as e:
            reason = _LOAD_ERRORS.get(getattr(e, "err_code", 0), f"cannot read the PDF ({e})")
            raise Refused(reason, where=where) from None
        except OSError as e:
            raise Refused(f"cannot read the file: {e.strerror or e}", where=where) from None
        try:
            n = len(doc)
            if n == 0:
                raise Refused("the PDF has no pages", where=where)
            if head:
                n = min(n, head)
            elif n > self.max_pages:
                raise TooManyPages(f"too many pages: {n}, more than ingest.max_pdf_pages = {self.max_pages} "
                                   "(PAPERCHAT_INGEST__MAX_PDF_PAGES)", where=where)
            pages: list[str] = []
            first: list[tuple[str, float]] = []
            for i in range(n):
                page = doc[i]
                textpage = page.get_textpage()
                try:
                    pages.append(textpage.get_text_range())
                    if i == 0:
                        first = _sized_lines(textpage, pages[0])
                finally:
                    textpage.close()
                    page.close()
            metadata = {k.lower(): v.strip() for k, v in doc.get_metadata_dict(skip_empty=True).items()
                        if isinstance(v, str) and v.strip()}
        except pdfium.PdfiumError as e:
            raise Refused(f"the PDF is damaged: {e}", where=where) from None
        finally:
            doc.close()
        if sum(len(p.strip()) for p in pages) < _MIN_CHARS_PER_PAGE * n:
            raise Refused(NO_TEXT_LAYER, where=where)
        log.debug("%s: %d pages, %d characters", where, n, sum(map(len, pages)))
        return RawText(where, pages, metadata, first_lines=first)


def _sized_lines(textpage: pdfium.PdfTextPage, text: str) -> list[tuple[str, float]]:
    """The page's lines, each with the median height of its letters' boxes (PDFium's loose box: the font's
    ascent to descent, the same for every letter of a font size; the median, so that a large symbol or a
    superscript does not decide). ``text`` is the page's text, one
    character per PDFium character index."""
    out: list[tuple[str, float]] = []
    start = 0
    count = min(textpage.count_chars(), len(text))
    for i in range(count + 1):
        if i < count and text[i] not in "\r\n":
            continue
        line = text[start:i].strip()
        if line:
            heights = sorted(_height(textpage, j) for j in range(start, i) if text[j].isalpha())
            out.append((line, round(heights[len(heights) // 2], 1) if heights else 0.0))
        start = i + 1
    return out


def _height(textpage: pdfium.PdfTextPage, index: int) -> float:
    left, bottom, right, top = textpage.get_charbox(index, loose=True)
    return float(abs(top - bottom))
