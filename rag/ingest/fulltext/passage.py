"""Cleaned body pages → section-aware passages (``passages``).

A heading is a short line on its own: numbered ("3.2 Scaled Dot-Product Attention", "II. MODEL", "A. Proof")
or one of the usual unnumbered ones ("Introduction", "Related work", "Conclusions", …). Each passage holds
whole sentences of one section, at most ``max_tokens`` cl100k tokens (``rag.tokens``, as the abstract chunks
count theirs; a sentence longer than that is cut on words), and the pages its first and last sentence sit on.
Neighbouring passages share no sentence by default (``overlap`` = 0): a shared sentence is embedded twice, and
with one sentence of overlap the shared PDFs gave 554 passages and 95,700 word pieces to embed against 476 and
81,200 without (-15% of ingest's embedding time, which is nearly all of a full-text ingest; docs/benchmarks.md).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from rag import tokens
from rag.ingest.fulltext.base import Document, Passage
from rag.text import split_sentences

DEFAULT_MAX_TOKENS = 200  # fits all-MiniLM-L6-v2's 256 word pieces with the title in front, in most text
_NUMBERED = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){0,3}\.?|[IVX]{1,5}\.|[A-H]\.?(?:\d{1,2}(?:\.\d{1,2})*)?)\s+"
                       r"([A-Z][^\s].*)$")
_NAMED = re.compile(r"^(?:abstract|introduction|related\s+work|background|preliminaries|methods?|methodology|"
                    r"materials\s+and\s+methods|model|approach|experiments?|experimental\s+(?:setup|results)|"
                    r"evaluation|results(?:\s+and\s+discussion)?|discussion|conclusions?(?:\s+and\s+future\s+work)?|"
                    r"summary|limitations|future\s+work|acknowledge?ments?|appendix(?:\s+[A-Z])?)$", re.I)
_MAX_HEADING_WORDS = 9


def heading_of(line: str) -> str | None:
    """The section heading ``line`` is, or None when it is body text."""
    line = line.strip()
    words = line.split()
    if not words or len(words) > _MAX_HEADING_WORDS or len(line) > 90 or line[-1] in ".,;:=":
        return None
    if _NAMED.match(line.rstrip(".")):
        return line
    m = _NUMBERED.match(line)
    if m and sum(c.isalpha() for c in m.group(1)) >= 3 and not re.search(r"[=<>±×∑∫]|\d{3,}", m.group(1)):
        return line
    return None


@dataclass
class _Section:
    heading: str
    text: str
    starts: list[int]  # offset in ``text`` where each page's part begins
    pages: list[int]  # the page numbers of those parts


def sections(doc: Document) -> list[_Section]:
    """The body cut at its headings; lines of a section joined by spaces, pages remembered by offset."""
    out: list[_Section] = [_Section("", "", [], [])]
    for page in doc.pages:
        for line in page.text.split("\n"):
            heading = heading_of(line)
            if heading is not None:
                out.append(_Section(heading, "", [], []))
                continue
            sec = out[-1]
            if not sec.pages or sec.pages[-1] != page.number:
                sec.starts.append(len(sec.text) + (1 if sec.text else 0))
                sec.pages.append(page.number)
            sec.text = f"{sec.text} {line.strip()}" if sec.text else line.strip()
    return [s for s in out if s.text.strip()]


def _page_at(sec: _Section, offset: int) -> int:
    return sec.pages[max(0, bisect.bisect_right(sec.starts, offset) - 1)]


def _pieces(sec: _Section, max_tokens: int) -> list[tuple[str, int, int, int]]:
    """(sentence or piece of one, token count, first page, last page) in order."""
    out: list[tuple[str, int, int, int]] = []
    at = 0
    for sentence in split_sentences(sec.text):
        start = sec.text.find(sentence, at)
        start = at if start < 0 else start
        at = start + len(sentence)
        first, last = _page_at(sec, start), _page_at(sec, max(start, at - 1))
        n = tokens.count_tokens(sentence)
        if n <= max_tokens:
            out.append((sentence, n, first, last))
            continue
        words: list[str] = []
        used = 0
        for word in sentence.split():  # cl100k splits before a space, so words' costs with it add up
            cost = tokens.count_tokens(" " + word)
            if words and used + cost > max_tokens:
                out.append((" ".join(words), used, first, last))
                words, used = [], 0
            words.append(word)
            used += cost
        out.append((" ".join(words), used, first, last))
    return out


def passages(doc: Document, max_tokens: int = DEFAULT_MAX_TOKENS, overlap: int = 0) -> list[Passage]:
    """The body of ``doc`` as passages of whole sentences, section by section (see the module doc)."""
    out: list[Passage] = []
    for sec in sections(doc):
        pieces = _pieces(sec, max_tokens)
        start = 0
        while start < len(pieces):
            end, used = start, 0
            while end < len(pieces) and (end == start or used + pieces[end][1] + 1 <= max_tokens):
                used += pieces[end][1] + 1
                end += 1
            text = " ".join(p[0] for p in pieces[start:end])
            while end > start + 1 and tokens.count_tokens(text) > max_tokens:  # joins can count differently
                end -= 1
                text = " ".join(p[0] for p in pieces[start:end])
            chosen = pieces[start:end]
            out.append(Passage(text, sec.heading, chosen[0][2], chosen[-1][3], len(out)))
            if end >= len(pieces):
                break
            start = max(start + 1, end - overlap)
    return out
