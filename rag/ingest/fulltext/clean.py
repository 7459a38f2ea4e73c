"""Raw page text → clean body pages and the references apart (``clean``).

What is mended, in order: line ends normalised; ligature characters written out (PDFium already does, Zotero's
cache and other extractions may not); spacing accents put back on their letter ("na¨ıve" → "naïve"); words
hyphenated across a line end joined ("re-\\ntrieval" → "retrieval") unless the hyphen is a real one
("state-of-\\nthe-art", "low/mid/high-\\nlevel", "Tracy-\\nWidom" keep it); running headers and footers
dropped (a line repeated at the top or bottom of many pages, digits ignored, so "Page 3" and "Page 4" are one
line; dropped wherever PDFium reads it, except the title's own lines), as are bare page numbers at a page's top
or bottom and arXiv's side stamp; and the references section cut off into ``Document.references``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter

from rag.ingest.fulltext.base import Document, Page, RawText

_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                            "\ufb05": "st", "\ufb06": "st"})
SOFT_HYPHEN = "\ufffe"  # PDFium's mark for a hyphen it took for a line-end hyphenation
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\u00ad\ufeff]")
_SPACING_ACCENT = {"\u00a8": "\u0308", "\u00b4": "\u0301", "`": "\u0300", "\u02c6": "\u0302", "\u02dc": "\u0303",
                   "\u02c7": "\u030c", "\u00b8": "\u0327"}
_ACCENTS = "".join(_SPACING_ACCENT)
# TeX fonts put the accent before its letter ("na¨ıve", "Ren´e"), publishers' fonts often after a vowel ("fu¨r")
_ACCENT_AFTER = re.compile(f"([AEIOUYaeiouy])([{_ACCENTS}])(?![\u0131])")
_ACCENT_BEFORE = re.compile(f"(?<=[A-Za-z])([{_ACCENTS}])([AEIOUYaeiouy\u0131])|(\u02dc)([Nn])|(\u02c7)([CSZcszRr])|"
                            "(\u00b8)([Cc])")
# a word cut at a line end: PDFium's mark, or a hyphen ending a line (text extracted without the mark)
_HYPHENATED = re.compile(r"([A-Za-z\u00c0-\u024f]+)(?:\ufffe\n?|-\n)([A-Za-z\u00c0-\u024f0-9][\w-]*)")
_PAGE_NUMBER = re.compile(r"^(?:page\s+)?[-–—(\[]?\s*(?:\d{1,4}|[ivxlc]{1,7})\s*[-–—)\]]?(?:\s*(?:/|of)\s*\d{1,4})?$",
                          re.I)
_ARXIV_STAMP = re.compile(r"^arXiv:\s*\S+\s+\[[\w.\-]+\]\s+\d{1,2}\s+\w{3}\s+\d{4}$")
_REFERENCES = re.compile(r"^(?:[\dIVX]+\.?\s*)?(?:references(?:\s+and\s+notes)?|bibliography|literature\s+cited|"
                         r"works\s+cited)\s*:?$", re.I)
_AFTER_REFERENCES = re.compile(r"^(?:[A-Z]\.?\s+|[\dIVX]+\.?\s+)?(?:appendix|appendices|supplementary|supporting\s+"
                               r"information)\b", re.I)
_FIRST_ENTRY = re.compile(r"^\[1\]\s+\S")  # a numbered list starting without a heading (REVTeX, APS)
_EDGE = 3  # lines at the top and at the bottom of a page where running headers and footers sit


def mend_characters(text: str) -> str:
    """Ligatures written out, control characters dropped, spacing accents put on their letter, line ends "\\n"."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_LIGATURES)
    text = _CONTROL.sub("", text)
    if any(a in text for a in _SPACING_ACCENT):
        text = _ACCENT_AFTER.sub(lambda m: unicodedata.normalize("NFC", m.group(1) + _SPACING_ACCENT[m.group(2)]),
                                 text)
        text = _ACCENT_BEFORE.sub(_accent_before, text)
    return text


def _accent_before(m: re.Match[str]) -> str:
    accent, letter = (g for g in m.groups() if g is not None)
    return unicodedata.normalize("NFC", letter.replace("\u0131", "i") + _SPACING_ACCENT[accent])


def _mend(m: re.Match[str]) -> str:
    left, right = m.group(1), m.group(2)
    before = m.string[m.start() - 1] if m.start() else ""  # "state-of-\nthe", "low/mid/high-\nlevel"
    real = (right[0].isupper() or right[0].isdigit() or "-" in right or before in ("-", "/")
            or len(left) == 1)  # "n-gram", "k-means", "X-ray"
    return f"{left}{'-' if real else ''}{right}"


def dehyphenate(text: str) -> str:
    """Join words hyphenated across a line end; keep the hyphen of a compound ("state-of-the-art", a right
    part starting with a capital or a digit: "Tracy-Widom", "COVID-19")."""
    return _HYPHENATED.sub(_mend, text).replace(SOFT_HYPHEN, "-")


def _key(line: str) -> str:
    """A line as compared across pages: digits, case, spacing and edge punctuation ignored."""
    return re.sub(r"\s+", " ", re.sub(r"\d+", "#", line)).strip(" ./|-–—").casefold()


def _running(pages: list[list[str]]) -> set[str]:
    """Keys of the lines repeated at the top or the bottom of enough pages to be headers or footers."""
    seen: Counter[str] = Counter()
    for lines in pages:
        edge = {_key(line) for line in lines[:_EDGE] + lines[-_EDGE:]}
        seen.update(k for k in edge if k and k != "#")
    need = max(3, math.ceil(0.3 * len(pages)))
    return {k for k, n in seen.items() if n >= need}


def _body_lines(lines: list[str], running: set[str]) -> list[str]:
    """The page's lines without running headers and footers (anywhere on the page: PDFium may read a footer
    mid-page, as PLOS's first page has it), bare page numbers at its top or bottom, and arXiv's stamp."""
    n = len(lines)
    out = []
    for i, line in enumerate(lines):
        if _key(line) in running or _ARXIV_STAMP.match(line):
            continue
        if (i < _EDGE or i >= n - _EDGE) and _PAGE_NUMBER.match(line):
            continue
        out.append(line)
    return out


def _references_start(pages: list[Page]) -> tuple[int, int, bool] | None:
    """Where the references start: (page index, line index, whether that line is a heading to drop)."""
    heading: tuple[int, int, bool] | None = None
    entry: tuple[int, int, bool] | None = None
    for pi, page in enumerate(pages):
        lines = page.text.split("\n")
        for li, line in enumerate(lines):
            if _REFERENCES.match(line.strip()):
                heading = (pi, li, True)
            elif pi >= len(pages) // 2 and _FIRST_ENTRY.match(line) and any(
                    x.startswith("[2]") for x in lines[li + 1:li + 12]):
                entry = (pi, li, False)
    return heading or entry


def _split_references(pages: list[Page]) -> tuple[list[Page], str]:
    """The pages without the references section, and that section's text (its heading left out). The last
    heading "References" (or "Bibliography", …) counts, else, without such a heading, a last "[1] …" entry
    in the second half of the document (followed by a "[2]"); an appendix after them is body again."""
    at = _references_start(pages)
    if at is None:
        return pages, ""
    body: list[Page] = []
    refs: list[str] = []
    in_refs = False
    for pi, page in enumerate(pages):
        keep: list[str] = []
        for li, line in enumerate(page.text.split("\n")):
            if (pi, li) == at[:2]:
                in_refs = True
                if at[2]:
                    continue
            elif in_refs and len(line) < 80 and _AFTER_REFERENCES.match(line.strip()):
                in_refs = False
            (refs if in_refs else keep).append(line)
        body.append(Page(page.number, "\n".join(keep).strip()))
    return body, "\n".join(refs).strip()


def clean(raw: RawText) -> Document:
    """The cleaned body pages of ``raw`` (page numbers kept) and its references apart."""
    split = [[ln.strip() for ln in mend_characters(p).split("\n") if ln.strip()] for p in raw.pages]
    running = _running(split) if len(split) >= 3 else set()
    if raw.first_lines:  # a journal's running head can be the title itself: the title stays
        top = max(size for _, size in raw.first_lines)
        running -= {_key(line) for line, size in raw.first_lines if size >= top - 0.5}
    pages = [Page(i, dehyphenate("\n".join(_body_lines(lines, running)))) for i, lines in enumerate(split, 1)]
    body, references = _split_references(pages)
    return Document(raw.where, body, references, dict(raw.metadata), raw.paged)
