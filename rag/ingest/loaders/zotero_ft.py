"""The full text of Zotero items, for ``paperchat ingest <Zotero data folder> --full-text``.

Each regular item's attachments are tried in turn, PDFs first (``application/pdf`` or a ``.pdf`` path), then
the others (a web page snapshot has only Zotero's ``.zotero-ft-cache``): the first one whose text can be had
(``rag.ingest.fulltext.ZoteroText``: its PDF, else Zotero's extraction) gives the item's passages, cut and
kept as a PDF's are (``rag.ingest.loaders.pdf.body_passages``). Passages of a text without page breaks carry
page 0, "page unknown": their citations name no page. For an item without an ``abstractNote``, the text also
gives its abstract (its Abstract section, else the start of its first page, else its first passages).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rag.ingest.fulltext import Passage, Refused, ZoteroText, clean, describe, passages
from rag.ingest.loaders.pdf import body_passages

UNKNOWN_PAGE = 0  # a passage's page when its text had no page breaks
_SUMMARY_CHARS = 1200  # an abstract made of the first passages stops after this many characters


@dataclass(frozen=True)
class Attachment:
    """A file attached to an item: its own item key (its folder is ``storage/<key>``), Zotero's path for it
    ("storage:paper.pdf" for a stored file, a full path for a linked one) and its content type."""

    key: str
    path: str | None
    content_type: str | None


@dataclass(frozen=True)
class ItemText:
    """What an item's full text gives: its passages, and an abstract taken from it (with where from)."""

    passages: tuple[Passage, ...]
    abstract: str
    abstract_source: str


def _is_pdf(a: Attachment) -> bool:
    return (a.content_type or "").lower() == "application/pdf" or (a.path or "").lower().endswith(".pdf")


def _abstract(paged: bool, desc_abstract: str, source: str, found: list[Passage]) -> tuple[str, str]:
    if desc_abstract.strip():
        # a text without pages: "the Abstract section of page 1" → "… of the text", "the text of page 1 …" → "the
        # start of the text …"
        return desc_abstract, source if paged else source.replace("text of page 1", "start of the text").replace(
            "page 1", "the text")
    text = ""
    for p in found:
        text = f"{text} {p.text}".strip()
        if len(text) >= _SUMMARY_CHARS:
            break
    return text, "its first passages"


def read_item(folder: Path, attachments: Sequence[Attachment], max_pages: int,
              budget: int) -> tuple[ItemText | None, str]:
    """The full text of an item from its ``attachments`` (under ``folder/storage``) as passages of at most
    ``budget`` tokens, or None and why not ("" when the item has no attachment)."""
    reason = ""
    for a in sorted(attachments, key=lambda a: not _is_pdf(a)):
        try:
            raw = ZoteroText(folder, a.key, a.path, max_pages).read()
        except Refused as e:
            reason = reason or f"{e.reason} ({e.where})"
            continue
        doc = clean(raw)
        found = passages(doc, budget)
        kept = list(body_passages(found)) or found  # a text without headings is all body
        if not raw.paged:
            kept = [replace(p, page_start=UNKNOWN_PAGE, page_end=UNKNOWN_PAGE) for p in kept]
        desc = describe(raw, doc)
        abstract, source = _abstract(raw.paged, desc.abstract or "", desc.abstract_source, kept)
        return ItemText(tuple(replace(p, ordinal=i) for i, p in enumerate(kept)), abstract, source), ""
    return None, reason
