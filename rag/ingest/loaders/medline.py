"""PubMed/MEDLINE text (``.nbib``, PubMed's "Save → PubMed format"): tagged lines, one record per ``PMID-``.

A line is a tag padded to four characters, ``- `` and a value (``TI  - ``, ``FAU - ``); a value goes on in
lines indented by six spaces. Read here: PMID, TI, AB, FAU (else AU), DP (year), JT (else TA), LID/AID
``… [doi]``, OT (keywords). The format is simple enough that a small parser beats a dependency. Ids:
``doi:`` when known, else ``pmid:<PMID>``; a problem names the ``file:line`` of the record's PMID.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from rag.errors import InputError
from rag.ingest.loaders.base import Item
from rag.ingest.loaders.common import make_paper, read_text, split_authors, split_list

_TAG = re.compile(r"^([A-Z][A-Z0-9]{0,3})\s*- ?(.*)$")
_HEAD = re.compile(r"^\ufeff?\s*PMID- ")
_DOI = re.compile(r"^(\S+)\s*\[doi\]", re.I)
# MEDLINE's short names: "Gao Y", "van der Berg AM"
_SHORT = re.compile(r"^(?P<last>.+?)\s+(?P<init>[A-Z]{1,3})$")


Fields = dict[str, list[str]]


def _records(text: str) -> Iterator[tuple[int, Fields]]:
    """``(line of PMID, tag → values)`` per record."""
    start, fields, last = 0, Fields(), None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip("\ufeff").rstrip()
        if not line.strip():
            continue
        tag = _TAG.match(line) if not line.startswith(" ") else None
        if tag and tag.group(1) == "PMID":
            if fields:
                yield start, fields
            start, fields = n, Fields()
        if not start:  # text before the first record
            continue
        if tag:
            last = tag.group(1)
            fields.setdefault(last, []).append(tag.group(2).strip())
        elif last is not None and fields.get(last):  # a continuation line
            fields[last][-1] += " " + line.strip()
    if fields:
        yield start, fields


def _first(fields: Fields, *tags: str) -> str | None:
    return next((v for t in tags for v in fields.get(t, []) if v), None)


def _short_name(name: str) -> str:
    m = _SHORT.match(name)
    return f"{'. '.join(m['init'])}. {m['last']}" if m else name


def medline_paper(path: Path, line: int, fields: Fields) -> Item:
    """One MEDLINE record → ``Paper`` or ``RecordProblem``."""
    if fields.get("FAU"):
        authors = split_authors("; ".join(fields["FAU"]))  # "Gao, Yang" → "Yang Gao"
    else:
        authors = split_authors([_short_name(a) for a in fields.get("AU", [])])
    doi = next((m.group(1) for t in ("LID", "AID") for v in fields.get(t, []) if (m := _DOI.match(v))), None)
    pmid = _first(fields, "PMID")
    return make_paper(
        path, line, abstract=_first(fields, "AB"), title=_first(fields, "TI", "BTI"), authors=authors,
        categories=split_list(fields.get("OT", [])), year=_first(fields, "DP", "DEP"),
        venue=_first(fields, "JT", "TA"), doi=doi, kind="pmid", own_id=pmid,
        url=f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/" if pmid and pmid.isdigit() else None)


class MedlineLoader:
    """Loader for PubMed/MEDLINE text."""

    name = "medline"

    def sniff(self, path: Path, head: str) -> bool:
        """A ``.nbib``/``.medline`` file, or text whose first line is ``PMID- ``."""
        return path.suffix.lower() in (".nbib", ".medline") or bool(_HEAD.match(head))

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Read the file now (so an unusable one fails before any paper), then yield record by record."""
        text = read_text(path)
        if not re.search(r"^\ufeff?PMID- ", text, re.M):
            raise InputError("no MEDLINE record (a record starts with 'PMID- ')", where=str(path))
        return (medline_paper(path, line, fields) for line, fields in _records(text))
