"""A PDF without a record becomes a paper: title, authors, abstract and identifiers read from its metadata
and its first page (``describe``).

- title: the file's ``Title`` metadata when it reads as one (not "Microsoft Word - x.doc", not a file name),
  else the largest lines of the first page (the layout's letter heights), else its first line;
- authors: the lines between the title and the abstract that hold only names (footnote marks and e-mail
  addresses dropped; affiliation lines skipped), else the ``Author`` metadata when it names people (it
  often names only who made the file);
- abstract: the text under the first page's "Abstract" heading, up to the next heading; without one, the
  first page's text after the authors, cut at a sentence end. Either way it is the PDF's own text, and the
  loader notes it (``abstract_origin``);
- arXiv id and year: arXiv's side stamp on the first page ("arXiv:1512.03385v1 [cs.CV] 10 Dec 2015");
  DOI: the first DOI on the first page (headers and footers included) or in the metadata. References are
  never searched, so a cited paper's id is not taken for the paper's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag.ingest.fulltext.base import Document, Page, RawText
from rag.ingest.fulltext.clean import mend_characters
from rag.ingest.fulltext.passage import heading_of
from rag.records import clean_arxiv_id, clean_doi

ABSTRACT_MAX_CHARS = 2000
_STAMP = re.compile(r"arXiv:\s*(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(v\d+)?\s+\[[\w.\-]+\]\s+"
                    r"\d{1,2}\s+\w{3}\s+(\d{4})")
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)")
_BAD_TITLE = re.compile(r"^(?:microsoft\s+(?:word|powerpoint)\s*-|untitled|title|document\d*$|slide\s*\d)|"
                        r"\.(?:docx?|tex|dvi|pdf|ps|rtf|odt|indd|qxd)$|^[\w\-]+$", re.I)
_ABSTRACT = re.compile(r"^a\s?b\s?s\s?t\s?r\s?a\s?c\s?t\b[\s.:—–-]*(.*)$", re.I)
_ABSTRACT_END = re.compile(r"^(?:doi\b|keywords?|key\s+words|index\s+terms|citation|received|accepted|published|"
                           r"editors?:|ccs\s+concepts|general\s+terms|categories\s+and\s+subject)\b", re.I)
_AFFILIATION = re.compile(r"\b(?:universit\w*|institut\w*|department|dept|school|college|laborator\w*|lab|research|"
                          r"centre|center|corporation|inc|ltd|gmbh|google|microsoft|facebook|meta|ibm|brain|faculty|"
                          r"academy|hospital|editors?|received|published|technical\s+report)\b|@|https?:|www\.|"
                          r"\b(?:19|20)\d\d\b", re.I)
_MARKS = re.compile(r"(?<=[^\W\d_])(?:ID)?[\d∗*†‡§¶$+#♯♭]+(?=\W|$)|\([^)]*@[^)]*\)|\{[^}]*\}|\S+@\S+|[∗*†‡§¶♯]")
_SEPARATORS = re.compile(r"\s*(?:,|;|&|\band\b|·|•)\s*")
_NAME_WORD = re.compile(r"^[^\W\d_][\w'’\-.]*$")
_PARTICLES = frozenset({"van", "von", "der", "den", "de", "da", "del", "di", "du", "la", "le"})


@dataclass
class Description:
    """What the first page and the metadata say about the paper."""

    title: str | None = None
    authors: list[str] = field(default_factory=list)
    abstract: str = ""
    abstract_origin: str = ""  # "the Abstract section of page 1" or "the text of page 1 (no Abstract heading)"
    doi: str | None = None
    arxiv_id: str | None = None
    year: int | None = None


def _title(raw: RawText, first: list[str]) -> tuple[str | None, int]:
    """The title and the index of its last line in ``first`` (-1 when it is not found there)."""
    meta = " ".join(raw.metadata.get("title", "").split())
    layout = [(line, size) for line, size in raw.first_lines if not _STAMP.search(line) and size > 0]
    lines: list[str] = []
    if layout:
        top = max(size for _, size in layout)
        start = next(i for i, (_, size) in enumerate(layout) if size >= top - 0.5)
        for line, size in layout[start:start + 4]:
            if size < top - 0.5:
                break
            lines.append(line)
    elif first:
        lines = [first[0]]
    found = " ".join(lines)
    title = meta if meta and not _BAD_TITLE.search(meta) and len(meta.split()) >= 2 else found or None
    last = max((i for i, line in enumerate(first) if lines and line == lines[-1]), default=-1)
    return (" ".join(title.split()) if title else None), last


def _meta_authors(raw: RawText) -> list[str]:
    text = " ".join(raw.metadata.get("author", "").split())
    parts = [p for p in re.split(r"\s*(?:;|,|&|\band\b)\s*", text) if p]
    return parts if parts and all(_is_name(p) for p in parts) else []


def _is_name(text: str) -> bool:
    words = text.split()
    return (2 <= len(words) <= 5 and not text.isupper()
            and all((w[0].isupper() and _NAME_WORD.match(w)) or w in _PARTICLES for w in words))


def _names(fragment: str, alone: bool) -> list[str]:
    """One fragment between separators (``alone``: the only one on its line) → names; "Kaiming He Xiangyu
    Zhang" (names set apart by spaces only) is read as given name, initials, family name, repeated."""
    words = fragment.split()
    if _is_name(fragment) and len(words) <= (4 if alone else 3):
        return [fragment]
    out, name = [], []
    for w in words:
        name.append(w)
        if not w.endswith(".") and len(name) >= 2:
            out.append(" ".join(name))
            name = []
    return out if not name and all(_is_name(n) for n in out) else []


def _text_authors(first: list[str], after: int) -> tuple[list[str], int]:
    """Names on the lines after the title, and the index of the first line past them."""
    names: list[str] = []
    i = after + 1
    for i in range(after + 1, min(len(first), after + 25)):
        line = first[i]
        if _ABSTRACT.match(line) or heading_of(line) or len(line) > 120:
            return names, i
        text = _MARKS.sub(" ", line)  # footnote marks and e-mail addresses out ("Yoshua Bengio BENGIOY@…")
        if _AFFILIATION.search(text):
            continue
        fragments = [f for f in _SEPARATORS.split(" ".join(text.split())) if f.strip(" ,.")]
        found = [n for f in fragments for n in _names(f.strip(" ,."), len(fragments) == 1)]
        if fragments and len(found) >= len(fragments):
            names.extend(found)
        elif names and fragments:  # names end where other text starts
            return names, i
    return names, i + 1


def _abstract(first: list[str], start: int, pages: list[Page]) -> tuple[str, str]:
    """The abstract and where it was taken from."""
    for i, line in enumerate(first):
        m = _ABSTRACT.match(line)
        if m:
            return _collect([m.group(1), *first[i + 1:]]), "the Abstract section of page 1"
    text = _collect(first[start:])
    if len(text) < ABSTRACT_MAX_CHARS // 10 and len(pages) > 1:  # a cover page: the text starts on the next
        text = _collect(pages[1].text.split("\n"))
    return text, "the text of page 1 (no Abstract heading)"


def _collect(lines: list[str]) -> str:
    out: list[str] = []
    size = 0
    for line in lines:
        if out and (heading_of(line) or _ABSTRACT_END.match(line)):
            break
        out.append(line)
        size += len(line) + 1
        if size > ABSTRACT_MAX_CHARS:
            break
    text = " ".join(" ".join(out).split())
    if len(text) > ABSTRACT_MAX_CHARS:
        cut = text.rfind(". ", 0, ABSTRACT_MAX_CHARS)
        text = text[:cut + 1] if cut > ABSTRACT_MAX_CHARS // 3 else text[:ABSTRACT_MAX_CHARS]
    return text


def describe(raw: RawText, doc: Document) -> Description:
    """Title, authors, abstract, identifiers and year of the paper in ``raw`` (cleaned as ``doc``)."""
    page_one = mend_characters(raw.pages[0]) if raw.pages else ""
    first = doc.pages[0].text.split("\n") if doc.pages else []
    title, last = _title(raw, first)
    authors, after = _text_authors(first, last) if last >= 0 else ([], 0)
    authors = authors or _meta_authors(raw)  # the metadata often names only who made the file
    abstract, origin = _abstract(first, after, doc.pages)
    stamp = _STAMP.search(page_one)
    doi = next((d for d in (clean_doi(m.group(1).rstrip(".,;)]")) for m in _DOI.finditer(
        " ".join((raw.metadata.get("doi", ""), raw.metadata.get("subject", ""), page_one)))) if d), None)
    return Description(title=title, authors=authors, abstract=abstract, abstract_origin=origin, doi=doi,
                       arxiv_id=clean_arxiv_id(stamp.group(1)) if stamp else None,
                       year=int(stamp.group(3)) if stamp else None)
