"""What every reader of full text yields (``RawText``), the cleaned text (``Document``) and its passages
(``Passage``), and the ``FullText`` seam a reader implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from rag.errors import InputError


class Refused(InputError):
    """A file whose full text cannot be had; ``reason`` is the message without the file's name."""

    def __init__(self, reason: str, where: str) -> None:
        self.reason = reason
        super().__init__(reason, where=where)


class TooManyPages(Refused):
    """A PDF longer than ``ingest.max_pdf_pages``: its full text is refused, its first pages can still be read
    (``PdfText.read_head``) for the paper's title and abstract."""


@dataclass(frozen=True)
class RawText:
    """A file's text as its reader extracted it: one string per page (page numbers are positions, 1-based),
    and the document metadata the file carries (``title``, ``author``, … as the file names them)."""

    where: str  # the file read, for messages
    pages: list[str]
    metadata: dict[str, str] = field(default_factory=dict)
    paged: bool = True  # False: the text had no page breaks (one block), so page numbers mean nothing
    # the first page's lines with the height of their letters (points), when the reader knows the layout:
    # the title is the run of the largest lines
    first_lines: list[tuple[str, float]] = field(default_factory=list)


@dataclass(frozen=True)
class Page:
    """One page of cleaned body text; ``number`` is the page's position in the file (1-based)."""

    number: int
    text: str


@dataclass(frozen=True)
class Document:
    """A file's full text after cleaning: the body pages (references left out), the references section
    apart, and the metadata of the file."""

    where: str
    pages: list[Page]
    references: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    paged: bool = True

    @property
    def text(self) -> str:
        """The body as one text, pages joined by blank lines."""
        return "\n\n".join(p.text for p in self.pages if p.text)


@dataclass(frozen=True)
class Passage:
    """A piece of the body sized for retrieval: its text, the section heading it sits under ("" before the
    first heading), the pages it spans and its position in the paper (0-based)."""

    text: str
    section: str
    page_start: int
    page_end: int
    ordinal: int


class FullText(Protocol):
    """A reader of one paper's full text. ``read`` raises ``Refused`` (naming the file and the reason:
    encrypted, no text layer, too many pages, damaged) when the text cannot be had."""

    def read(self) -> RawText: ...
