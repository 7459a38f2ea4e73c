"""The scraped "论文检索" listing: a header line, then per paper an optional category line, an author line
and the abstract as one long line (lines usually separated by blank lines). There are no titles or ids.

Lines are told apart by shape, not position: the abstract is the long prose line; the author line is a
comma-separated list of short names; the category is a short title-cased label, often ``"Area · Topic"``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

from rag.errors import InputError
from rag.ingest.loaders.base import Item
from rag.ingest.loaders.common import make_paper, problem, read_text, split_authors, squash_spaces

log = logging.getLogger(__name__)

# Top-level areas of the conference listings this format comes from; the file's own "Area · Topic"
# lines add to these, so a category line without "·" is recognised even where it stands alone.
KNOWN_AREAS = {"applications", "deep learning", "general machine learning", "optimization", "probabilistic methods",
               "reinforcement learning", "social aspects", "theory", "everything else", "neuroscience",
               "cognitive science", "evaluation", "infrastructure"}
_SEP = re.compile(r"\s*[·•]\s*")
_NAME_SEP = re.compile(r"\s*(?:,\s*and\s+|,|\s+and\s+|\s+&\s+)\s*", re.I)
_NAME_WORD = re.compile(r"^[^\W\d_][\w'’.\-]*$")


def _words(line: str) -> list[str]:
    return line.split()


def is_author_line(line: str) -> bool:
    """A comma-separated list of person names (possibly a single name)."""
    if re.search(r"[()\[\]{}$:;?!\"“”=<>/|·•%+*#@\d]", line) or len(line) > 2000:
        return False
    tokens = [t for t in _NAME_SEP.split(line.strip()) if t]
    if not tokens:
        return False
    capitalised = 0
    for t in tokens:
        ws = t.split()
        if not 1 <= len(ws) <= 5 or len(t) > 50 or not all(_NAME_WORD.match(w) for w in ws):
            return False
        if ws[-1].endswith(".") and len(ws[-1].rstrip(".")) > 2 and ws[-1].lower() not in ("jr.", "sr."):
            return False  # "… trees." ends a sentence, names end in initials
        capitalised += any(w[0].isupper() for w in ws)
    return capitalised * 2 >= len(tokens)


def is_prose(line: str) -> bool:
    """The abstract: a long line of running text."""
    if is_author_line(line):
        return False
    n = len(_words(line))
    return n >= 12 or len(line) >= 200 or (n >= 5 and bool(re.search(r"[.!?](\s|$)", line)))


def is_category_line(line: str, vocab: set[str]) -> bool:
    """A category label: ``"Area · Topic"`` or a known area name."""
    return bool(_SEP.search(line)) or squash_spaces(line).lower() in vocab


def is_header_line(line: str) -> bool:
    """A page header such as "论文检索": short and without Latin letters."""
    return len(line) < 40 and not re.search(r"[A-Za-z]", line)


def split_category(line: str) -> list[str]:
    """``"Deep Learning · Large Language Models"`` → ``["Deep Learning", "Large Language Models"]``."""
    return [squash_spaces(p) for p in _SEP.split(line) if squash_spaces(p)]


class ListingLoader:
    """Loader for the scraped listing text format."""

    name = "listing"

    def sniff(self, path: Path, head: str) -> bool:
        """A ``.txt``/``.md`` (or extension-less) file whose lines follow the listing layout."""
        if path.suffix.lower() not in ("", ".txt", ".md", ".text", ".listing"):
            return False
        lines = [ln.strip() for ln in head.splitlines() if ln.strip()]
        if len(head) >= 60000:
            lines = lines[:-1]  # the last line may be cut
        if not lines or lines[0][0] in "{[<@":
            return False
        if lines[0] == "论文检索":
            return True
        for prev, line in zip(lines, lines[1:], strict=False):
            if is_prose(line):
                return is_author_line(prev) or bool(_SEP.search(prev))
        return False

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Parse the whole listing (it is a scraped page, small) and stream papers and problems."""
        text = read_text(path)
        # Lines end at \n only (str.splitlines also breaks at \x0b, \x1c, \u2028…, which would put every
        # later line number off from what an editor shows).
        lines = _join_wrapped([(n, squash_spaces(ln)) for n, ln in enumerate(text.split("\n"), 1) if ln.strip()])
        if not any(is_prose(ln) for _, ln in lines):
            raise InputError("no abstract found: not a listing (expected blocks of category, authors and a long "
                             "abstract line)", where=str(path))
        return self._records(path, lines)

    def _records(self, path: Path, lines: list[tuple[int, str]]) -> Iterator[Item]:
        vocab = set(KNOWN_AREAS)
        for _, ln in lines:
            if _SEP.search(ln) and not is_prose(ln):
                vocab.add(split_category(ln)[0].lower())
        pending: list[tuple[int, str]] = []
        first = True
        for n, ln in lines:
            if not is_prose(ln):
                if is_header_line(ln) and "," not in ln:
                    log.debug("%s:%d: skipping header line %r", path, n, ln)
                else:
                    pending.append((n, ln))
                continue
            yield from self._block(path, pending, (n, ln), vocab, first)
            pending, first = [], False
        if pending:
            yield problem(path, pending[0][0], f"no abstract after {_quote(pending)}")

    def _block(self, path: Path, pending: list[tuple[int, str]], abstract: tuple[int, str], vocab: set[str],
               first: bool) -> Iterator[Item]:
        rest = list(pending)
        authors: list[str] = []
        categories: list[str] = []
        start = abstract[0]
        if rest and not is_category_line(rest[-1][1], vocab):
            start, line = rest.pop()
            authors = split_authors(line)
        if rest and (is_category_line(rest[-1][1], vocab) or "," not in rest[-1][1]):
            start, line = rest.pop()
            categories = split_category(line)
        if rest and first and len(rest) == 1 and rest[0][0] == 1:
            log.debug("%s:1: skipping header line %r", path, rest[0][1])
            rest = []
        if rest:  # lines of an earlier paper whose abstract is missing
            yield problem(path, rest[0][0], f"no abstract after {_quote(rest)}")
        yield make_paper(path, start, abstract=abstract[1], authors=authors, categories=categories)


def _join_wrapped(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Join an abstract wrapped over adjacent lines (no blank line between): a line right after a prose line
    continues it when it is prose too, or when the prose line stopped mid-sentence."""
    out: list[tuple[int, str]] = []
    last_n = -1
    for n, ln in lines:
        if out and n == last_n + 1 and is_prose(out[-1][1]) and (
                is_prose(ln) or (not re.search(r"[.!?:)\]\"”]$", out[-1][1]) and not _SEP.search(ln))):
            out[-1] = (out[-1][0], f"{out[-1][1]} {ln}")
        else:
            out.append((n, ln))
        last_n = n
    return out


def _quote(lines: list[tuple[int, str]]) -> str:
    shown = " / ".join(ln if len(ln) <= 60 else ln[:57] + "..." for _, ln in lines)
    return f"{len(lines)} line(s): {shown!r}"
