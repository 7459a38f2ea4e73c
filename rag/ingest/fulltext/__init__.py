"""Full text of papers (issue 31, first slice): where it comes from, how it is cleaned, how it is cut.

Public API::

    FullText                        # the seam: a reader with read() -> RawText (raises Refused)
    PdfText(path, max_pages)        # a PDF file, page by page (pypdfium2)
    ZoteroText(folder, attachment, max_pages)  # Zotero's .zotero-ft-cache of an attachment, else its PDF
    clean(raw) -> Document          # pages mended, headers/footers dropped, references apart
    passages(doc, max_tokens) -> list[Passage]   # section-aware, page span kept
    describe(raw, doc) -> Description            # title, authors, abstract, DOI/arXiv id of a PDF

Nothing here writes to the store: the PDF loader (``rag.ingest.loaders.pdf``) puts a paper's passages on its
record, and ``rag.ingest.passages`` stores them beside its abstract chunk.
"""

from rag.ingest.fulltext.base import Document, FullText, Page, Passage, RawText, Refused, TooManyPages
from rag.ingest.fulltext.clean import clean
from rag.ingest.fulltext.paper import Description, describe
from rag.ingest.fulltext.passage import passages
from rag.ingest.fulltext.pdf import PdfText
from rag.ingest.fulltext.zotero import ZoteroText

__all__ = ["Description", "Document", "FullText", "Page", "Passage", "PdfText", "RawText", "Refused", "TooManyPages",
           "ZoteroText", "clean", "describe", "passages"]
