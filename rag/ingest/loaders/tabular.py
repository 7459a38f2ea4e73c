"""CSV, JSON and JSON Lines with a column mapping.

Without a mapping, columns are recognised by common names, case- and punctuation-insensitively
(see ``ALIASES``), including the column sets of Scopus ("Title", "Authors", "Author full names", "Source title")
and Web of Science ("Article Title", "Author Full Names", "Source Title", "Publication Year") exports, whose
surname-first names ("Gao, Yang", "Gao Y.") become "Yang Gao" / "Y. Gao" so a surname search finds them.
Semantic Scholar and OpenAlex JSON have their nested fields lifted first (see ``scholarly_fields``).
A mapping ``{field: column}`` overrides the columns of the fields it names, e.g.
``{"abstract": "Abstract Note", "title": "Title"}``; fields: title, abstract, authors, year, categories,
doi, url, id, venue. An ``id`` column gives ids ``id:<value>`` (or ``arxiv:``/``doi:`` when the value is one).
"""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

from rag.errors import InputError
from rag.ingest.loaders.arxiv import first_json_object, iter_json_lines
from rag.ingest.loaders.base import Item
from rag.ingest.loaders.common import (
    HEAD_BYTES,
    MAX_LINE_BYTES,
    iter_lines,
    make_paper,
    problem,
    read_head,
    read_text,
    split_authors,
    split_list,
    unescape_entities,
    utf8_problem,
)

log = logging.getLogger(__name__)

ALIASES: dict[str, tuple[str, ...]] = {
    "abstract": ("abstract", "abstracttext", "abstractnote", "paperabstract", "summary", "description", "text"),
    "title": ("title", "papertitle", "articletitle", "documenttitle"),
    # Full names before short ones: WoS and Scopus export both, "Gao, Yang" beats "Gao, Y".
    "authors": ("authorfullnames", "authors", "author", "authornames", "creators"),
    "year": ("year", "publicationyear", "pubyear", "date", "published", "publicationdate"),
    "categories": ("categories", "category", "keywords", "tags", "manualtags", "subjects", "topics",
                   "authorkeywords"),
    "doi": ("doi",),
    "url": ("url", "link", "href"),
    "id": ("id", "paperid", "arxivid", "docid"),
    "venue": ("venue", "journal", "booktitle", "conference", "publicationtitle", "journalref", "sourcetitle"),
}
FIELDS = tuple(ALIASES)
# Web of Science's tab-delimited export ("savedrecs.txt") names its columns by two-letter field tags; used only
# when the header has WoS's PT/TI/AB tags, as two letters alone say too little.
WOS_TAGS: dict[str, tuple[str, ...]] = {
    "abstract": ("ab",), "title": ("ti",), "authors": ("af", "au"), "year": ("py",), "categories": ("de",),
    "doi": ("di",), "venue": ("so",), "id": ("ut",),
}
_FULL_NAMES = ("authorfullnames", "af")  # always "Last, First" names separated by ";"


def _is_wos_tagged(norms: set[str]) -> bool:
    return {"pt", "ti", "ab"} <= norms
# The csv module refuses fields over 128 KiB by default, which would break a file at its first long abstract;
# a field may be as long as a line may be (process-wide, but only ever raised).
csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))
_LIST_KEYS = ("papers", "records", "items", "data", "results", "entries", "documents")


def _norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def resolve_columns(columns: list[str], mapping: dict[str, str] | None, path: Path) -> dict[str, str]:
    """Our field → the source column, from the explicit ``mapping`` first, then the default aliases.

    Raises ``InputError`` for an unknown field, a mapped column that does not exist, or no abstract column.
    """
    available = ", ".join(repr(c) for c in columns) or "(none)"
    chosen: dict[str, str] = {}
    for field, column in (mapping or {}).items():
        if field not in ALIASES:
            raise InputError(f"unknown field {field!r} in the column mapping; fields: {', '.join(FIELDS)}",
                             where=str(path))
        if not isinstance(column, str):
            raise InputError(f"the column mapping for {field!r} must be a column name", where=str(path))
        match = column if column in columns else next(
            (c for c in columns if c.strip().lower() == column.strip().lower()), None)
        if match is None:
            raise InputError(f"the mapping names column {column!r} for {field}, but there is no such column; "
                             f"columns: {available}", where=str(path))
        chosen[field] = match
    chosen = fill_columns(columns, chosen)
    _warn_unmapped(columns, chosen, path)
    if "abstract" not in chosen:
        raise InputError(f"no abstract column (looked for {', '.join(ALIASES['abstract'])}); columns: {available}; "
                         f"pass a mapping such as {{'abstract': '<column>'}}", where=str(path))
    return chosen


def fill_columns(columns: list[str], chosen: dict[str, str]) -> dict[str, str]:
    """``chosen`` plus the fields it lacks that one of ``columns`` names by a default alias (a new dict)."""
    chosen = dict(chosen)
    by_norm: dict[str, str] = {}
    for c in columns:
        by_norm.setdefault(_norm(c), c)
    used = set(chosen.values())
    tagged = _is_wos_tagged(set(by_norm))
    for field, aliases in ALIASES.items():
        if field in chosen:
            continue
        for alias in (*WOS_TAGS.get(field, ()), *aliases) if tagged else aliases:
            col = by_norm.get(alias)
            if col is not None and col not in used:
                chosen[field] = col
                used.add(col)
                break
    return chosen


_LOOKALIKE = {"title": re.compile(r"title"), "authors": re.compile(r"author|creator|writer")}


def _warn_unmapped(columns: list[str], chosen: dict[str, str], path: Path) -> None:
    """Warn once when the title or authors field found no column but some column looks like one."""
    used = set(chosen.values())
    for field, pattern in _LOOKALIKE.items():
        if field in chosen:
            continue
        like = [c for c in columns if c not in used and pattern.search(_norm(c))]
        if like:
            log.warning("%s: no %s column recognised, but %s look%s like one; pass --map %s=%s to use it",
                        path, field, ", ".join(map(repr, like[:3])), "s" if len(like) == 1 else "",
                        field, like[0] if " " not in like[0] else f"'{like[0]}'")


# Scopus appends its author id to full names: "Gao, Yang (57193456789)".
_AUTHOR_ID = re.compile(r"\s*\(\d{5,}\)")
# "Gao Y." / "van der Berg J.-P." / "Li X.Y.": a surname followed by initials (Scopus's short form).
_SURNAME_INITIALS = re.compile(r"^(?P<last>\S.*?)\s+(?P<init>(?:[A-Z][a-z]?\.-?\s?)+)$")


def authors_of(value: Any, full_names: bool = False) -> list[str]:
    """Author names of a tabular cell, with Scopus/WoS surname-first names turned given-name-first.

    ``full_names``: the cell is a Scopus/WoS "Author full names" column, always ``;``-separated
    ``Last, First`` names (so a single "Silva, Maria" is one author, not two).
    """
    if not isinstance(value, str):
        return split_authors(value)
    s = _AUTHOR_ID.sub("", unescape_entities(value))
    if full_names and s.strip() and ";" not in s:
        s += ";"
    sep = ";" if ";" in s else ","
    parts = [p.strip() for p in s.split(sep) if p.strip()]
    if parts and all("," not in p and _SURNAME_INITIALS.match(p) for p in parts):
        flipped = []
        for p in parts:
            m = _SURNAME_INITIALS.match(p)
            assert m is not None
            flipped.append(f"{m['init'].strip()} {m['last']}")
        return split_authors("; ".join(flipped))
    return split_authors(s)


# Mathematics Subject Classification ("53C30") and PACS ("04.20.-q") codes are not topics a reader searches by,
# and they must not pass for arXiv categories.
_SUBJECT_CODE = re.compile(r"^(?:\d\d[A-Z-](?:\d\d|xx)|\d\d\.\d\d\.[-+\w]{1,3})$", re.I)


def categories_of(value: Any) -> list[str]:
    """Categories/keywords of a cell, without subject-classification codes."""
    return [c for c in split_list(value) if not _SUBJECT_CODE.match(c)]


def row_paper(path: Path, line: int, row: dict[str, Any], cols: dict[str, str]) -> Item:
    """One row (column → value) → ``Paper`` or ``RecordProblem``."""
    get = {field: row.get(col) for field, col in cols.items()}
    full = _norm(cols.get("authors", "")) in _FULL_NAMES
    authors = authors_of(get.get("authors"), full_names=full)
    if full and not authors:  # Scopus leaves full names empty on some rows; its short "Authors" column remains
        short = next((v for k, v in row.items() if isinstance(k, str) and _norm(k) in ("authors", "au")), None)
        authors = authors_of(short)
    return make_paper(
        path, line, abstract=get.get("abstract"), title=get.get("title"), authors=authors,
        categories=categories_of(get.get("categories")), year=get.get("year"), venue=get.get("venue"),
        url=get.get("url"), doi=get.get("doi"), kind="id", own_id=get.get("id"))


# ---------------------------------------------------------------- CSV

def _csv_encoding(path: Path) -> str:
    head = read_head(path)
    if utf8_problem(head, final=len(head) < HEAD_BYTES) is None:
        return "utf-8"
    try:
        head.decode("cp1252")
        enc = "cp1252"
    except UnicodeDecodeError:
        enc = "latin-1"
    log.warning("%s is not UTF-8; reading it as %s (re-save it as UTF-8 to be sure of accents)", path, enc)
    return enc


def _delimiter(path: Path, header: str) -> str:
    if path.suffix.lower() == ".tsv":
        return "\t"
    counts = {d: header.count(d) for d in (",", "\t", ";")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


class CsvLoader:
    """Loader for CSV/TSV files with a header row."""

    name = "csv"

    def sniff(self, path: Path, head: str) -> bool:
        """A ``.csv``/``.tsv`` file, or a ``.txt`` whose first line is a delimited header with an abstract column."""
        if path.suffix.lower() in (".csv", ".tsv"):
            return True
        if path.suffix.lower() not in ("", ".txt"):
            return False
        header = next((ln for ln in head.splitlines() if ln.strip()), "")
        cells = [_norm(c) for c in re.split(r"[,\t;]", header)]
        return len(cells) >= 2 and (any(c in ALIASES["abstract"] for c in cells) or _is_wos_tagged(set(cells)))

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Check the header against the mapping now, then stream rows."""
        enc = _csv_encoding(path)
        lines = iter_lines(path, enc, on_error=lambda n: None)
        try:
            header_line = next((t for _, t in lines if t and t.strip()), "")
        finally:
            lines.close()
        delim = _delimiter(path, header_line or "")
        rows = self._rows(path, enc, delim)
        try:
            _, header, _ = next(rows)
        except StopIteration:
            raise InputError("no header row", where=str(path)) from None
        except _Broken as e:
            raise InputError(f"cannot read the CSV header: {e.reason}", where=f"{path}:{e.line}") from None
        finally:
            rows.close()
        cols = resolve_columns(header, mapping, path)
        return self._records(path, enc, delim, header, cols)

    def _rows(self, path: Path, enc: str, delim: str) -> Generator[tuple[int, list[str], bool], None, None]:
        """``(start line, cells, has undecodable bytes)`` per non-blank row."""
        bad: set[int] = set()
        lines = iter_lines(path, enc, keepends=True, on_error=bad.add)
        reader = csv.reader((t or "" for _, t in lines), delimiter=delim)
        try:
            while True:
                start = reader.line_num + 1
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except csv.Error as e:
                    raise _Broken(start, str(e)) from None
                if any(cell.strip() for cell in row):
                    yield start, row, bool(bad) and any(n in bad for n in range(start, reader.line_num + 1))
        finally:
            lines.close()

    def _records(self, path: Path, enc: str, delim: str, header: list[str], cols: dict[str, str]) -> Iterator[Item]:
        rows = self._rows(path, enc, delim)
        try:
            next(rows, None)
            for n, row, bad in rows:
                extra = [c for c in row[len(header):] if c.strip()]
                if bad:
                    yield problem(path, n, f"the row is not valid {enc} text")
                elif extra:
                    yield problem(path, n, f"the row has {len(row)} fields but the header has {len(header)} "
                                           f"(an unquoted delimiter or a stray quote?)")
                else:
                    yield row_paper(path, n, dict(zip(header, row, strict=False)), cols)
        except _Broken as e:
            yield problem(path, e.line, f"the CSV is broken from here on ({e.reason}); the rest was skipped")
        finally:
            rows.close()


class _Broken(Exception):
    def __init__(self, line: int, reason: str) -> None:
        self.line, self.reason = line, reason


# ---------------------------------------------------------------- JSON and JSON Lines

def _inverted_abstract(index: Any) -> str | None:
    """OpenAlex's ``abstract_inverted_index`` ({word: [positions]}) back to text."""
    if not isinstance(index, dict):
        return None
    at: dict[int, str] = {}
    for word, positions in index.items():
        if isinstance(word, str) and isinstance(positions, list):
            at.update((i, word) for i in positions
                      if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 100_000)
    return " ".join(at[i] for i in sorted(at)) or None


def scholarly_fields(record: Any) -> Any:
    """Semantic Scholar and OpenAlex records with their nested fields lifted to plain columns.

    Semantic Scholar: ``externalIds.DOI``/``ArXiv`` → doi/arxivid. OpenAlex: ``abstract_inverted_index`` → abstract,
    ``authorships[].author.display_name`` → authors, ``primary_location.source.display_name`` → venue.
    Columns the record already has are kept.
    """
    if not isinstance(record, dict):
        return record
    out = dict(record)
    ext = record.get("externalIds")
    if isinstance(ext, dict):
        for key, col in (("DOI", "doi"), ("ArXiv", "arxivid")):
            if isinstance(ext.get(key), str) and not out.get(col):
                out[col] = ext[key]
    if "abstract_inverted_index" in record and not out.get("abstract"):
        out["abstract"] = _inverted_abstract(record["abstract_inverted_index"])
    ships = record.get("authorships")
    if isinstance(ships, list) and not out.get("authors"):
        out["authors"] = [a["author"]["display_name"] for a in ships if isinstance(a, dict)
                          and isinstance(a.get("author"), dict) and isinstance(a["author"].get("display_name"), str)]
    loc = record.get("primary_location")
    venue = loc.get("source") if isinstance(loc, dict) else None  # OpenAlex's name for where it was published
    if isinstance(venue, dict) and isinstance(venue.get("display_name"), str) and not out.get("venue"):
        out["venue"] = venue["display_name"]
    return out


def _json_records(data: Any, path: Path) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in _LIST_KEYS:
            if isinstance(data.get(key), list):
                return data[key]
        if any(_norm(k) in ALIASES["abstract"] for k in data):
            return [data]
        if data and all(isinstance(v, dict) for v in data.values()):  # {"key": {...record...}}
            return [{"id": k, **v} if "id" not in v else v for k, v in data.items()]
        keys = ", ".join(list(map(repr, data))[:10])
        raise InputError(f"JSON must be a list of records or an object with a list under "
                         f"{', '.join(map(repr, _LIST_KEYS[:4]))}; found an object with keys {keys}", where=str(path))
    raise InputError(f"JSON must be a list of records, not a {type(data).__name__}", where=str(path))


class JsonLoader:
    """Loader for a JSON document holding a list of records."""

    name = "json"

    def sniff(self, path: Path, head: str) -> bool:
        """A ``.json`` file or text starting with ``[``/``{``."""
        return path.suffix.lower() == ".json" or head.lstrip("\ufeff \t\r\n")[:1] in ("[", "{")

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Parse the whole document now (so errors come before any paper), then yield its records."""
        text = read_text(path)
        try:
            data = json.loads(text)
        except RecursionError:
            raise InputError("JSON nested too deeply to be a list of papers", where=str(path)) from None
        except json.JSONDecodeError as e:
            raise InputError(f"invalid JSON: {e.msg} (column {e.colno})", where=f"{path}:{e.lineno}") from None
        records = [scholarly_fields(r) for r in _json_records(data, path)]
        columns: dict[str, None] = {}
        for r in records:
            if isinstance(r, dict):
                columns.update(dict.fromkeys(r))
        if not columns:
            raise InputError("the JSON holds no records (objects)", where=str(path))
        cols = resolve_columns(list(columns), mapping, path)
        return (row_paper(path, i, r, cols) if isinstance(r, dict)
                else problem(path, i, f"record {i} is a {type(r).__name__}, not an object")
                for i, r in enumerate(records, 1))


# The records of a JSON Lines file whose keys are checked against the mapping before streaming starts.
_HEAD_RECORDS = 100


class JsonlLoader:
    """Loader for JSON Lines: one record object per line, streamed."""

    name = "jsonl"

    def sniff(self, path: Path, head: str) -> bool:
        """A ``.jsonl``/``.ndjson`` file, or ``.json`` whose first two lines are each a JSON object."""
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".ndjson"):
            return True
        lines = [ln.strip() for ln in head.splitlines() if ln.strip()]
        return (first_json_object(head) is not None and len(lines) >= 2 and lines[0].endswith("}")
                and lines[1].startswith("{"))

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Check the keys of the first records against the mapping now, then stream line by line."""
        keys: dict[str, None] = {}
        found, tries = False, 0
        lines = iter_lines(path)
        try:
            for _, line in lines:
                if line is not None and not line.strip():
                    continue
                tries += 1
                try:
                    obj = json.loads(line or "")
                except (ValueError, RecursionError):
                    obj = None
                if isinstance(obj, dict):
                    found = True
                    keys.update(dict.fromkeys(k for k in scholarly_fields(obj) if isinstance(k, str)))
                if tries >= (_HEAD_RECORDS if found else 5):
                    break
        finally:
            lines.close()
        if not found:
            raise InputError("not JSON Lines (no line holds a JSON object)", where=str(path))
        cols = resolve_columns(list(keys), mapping, path)
        return iter_json_lines(path, _RowColumns(cols).paper_of(path))


class _RowColumns:
    """The columns of a JSON Lines file as its records reveal them: records need not share their keys, so a
    field the first record lacks (a title, authors) is looked up again in the later records that have new keys.
    A field once matched keeps its column for the rest of the file."""

    def __init__(self, cols: dict[str, str]) -> None:
        self.cols = cols
        self.seen: set[str] = set()

    def paper_of(self, path: Path) -> Any:
        def build(line: int, obj: dict[str, Any]) -> Item:
            row = scholarly_fields(obj)
            new = [k for k in row if isinstance(k, str) and k not in self.seen]
            if new:
                self.seen.update(new)
                if len(self.cols) < len(FIELDS):
                    self.cols = fill_columns(list(row), self.cols)
            return row_paper(path, line, row, self.cols)
        return build
