"""RIS, the tagged export of EndNote, Mendeley, Zotero and most publishers, parsed with rispy.

Each record runs from ``TY  - `` to ``ER  - ``; the file is cut into records here so a problem names the
``file:line`` of its ``TY`` line, and each record is parsed by rispy. Fields: title (TI/T1), authors (AU/A1,
surname-first "Gao, Yang" turned "Yang Gao"), year (PY/Y1/DA), abstract (AB/N2), DOI (DO), URL (UR),
venue (T2/JF/JO), keywords (KW). Ids: ``doi:`` when known, else ``ris:<ID>``, else a content hash.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import rispy

from rag.errors import InputError
from rag.ingest.loaders.base import Item
from rag.ingest.loaders.common import make_paper, problem, read_text, split_authors, split_list

_TAG = re.compile(r"^([A-Z][A-Z0-9])  -(?: |$)")
_HEAD = re.compile(r"^\ufeff?TY  - ", re.M)


def _first(rec: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = rec.get(key)
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, str) and v.strip()), None)
        if isinstance(value, str) and value.strip():
            return value
    return None


def ris_paper(path: Path, line: int, rec: dict[str, Any]) -> Item:
    """One parsed RIS record → ``Paper`` or ``RecordProblem``."""
    names = [n for key in ("first_authors", "authors") for n in rec.get(key) or [] if isinstance(n, str)]
    return make_paper(
        path, line, abstract=_first(rec, "abstract", "notes_abstract"),
        title=_first(rec, "title", "primary_title"), authors=split_authors("; ".join(names)),
        categories=split_list(rec.get("keywords")), year=_first(rec, "year", "publication_year", "date"),
        venue=_first(rec, "secondary_title", "alternate_title3", "journal_name", "alternate_title1"),
        url=_first(rec, "urls"), doi=_first(rec, "doi"), kind="ris", own_id=_first(rec, "id"))


def _chunks(text: str) -> Iterator[tuple[int, list[str]]]:
    """``(line of TY, lines)`` per record; lines outside records are ignored."""
    start, lines = 0, list[str]()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip("\ufeff")
        tag = _TAG.match(line)
        if tag and tag.group(1) == "TY":
            if lines:  # a TY without the ER of the record before
                yield start, lines
            start, lines = n, [line]
        elif lines:
            lines.append(line)
            if tag and tag.group(1) == "ER":
                yield start, lines
                lines = []
    if lines:
        yield start, lines


class RisLoader:
    """Loader for RIS files."""

    name = "ris"

    def sniff(self, path: Path, head: str) -> bool:
        """A ``.ris`` file, or text whose first tagged line is ``TY  - ``."""
        return path.suffix.lower() == ".ris" or bool(_HEAD.match(head.lstrip("\ufeff \t\r\n")))

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Read the file now (so an unreadable one fails before any paper), then parse record by record."""
        text = read_text(path)
        if not _HEAD.search(text):
            raise InputError("no RIS record (a record starts with 'TY  - ')", where=str(path))
        return self._records(path, text)

    def _records(self, path: Path, text: str) -> Iterator[Item]:
        for line, lines in _chunks(text):
            if not _TAG.match(lines[-1]) or not lines[-1].startswith("ER"):
                lines = [*lines, "ER  - "]
            try:
                parsed = rispy.loads("\n".join(lines) + "\n")
            except (ValueError, KeyError, IndexError, TypeError) as e:
                yield problem(path, line, f"unreadable RIS record: {e}")
                continue
            if not parsed:
                yield problem(path, line, "empty RIS record")
                continue
            yield ris_paper(path, line, parsed[0])
