"""Zotero libraries read directly: ``zotero.sqlite``, or the Zotero data folder that holds it.

Zotero keeps an exclusive lock on its database while it runs, and may be writing to it at any moment. The
file is therefore never opened in place: it is copied, with its ``-journal``/``-wal`` file if there is one,
to a temporary folder (the copy is retried while the source changes under it), and SQLite reads the copy,
rolling back a half-written transaction or replaying committed WAL frames there. The original is only ever
read as bytes — no lock, no ``-shm``, nothing written next to it. (SQLite's ``immutable=1`` would avoid the
copy but promises SQLite that the file never changes: a write by Zotero during the read could then be seen
half-done, and committed changes still in a ``-wal`` file would be missed.)

What becomes a paper: every regular item — not notes, attachments or annotations, not items in the trash
(``deletedItems``), not RSS feed items — with its title, creators in Zotero's order (authors; all creators
when an item has no author; single-field names as written), ``abstractNote``, the year of ``date``
(Zotero stores "2021-03-00 March 2021"), DOI, URL, the arXiv id (``archiveID`` "arXiv:2101.00001", an
``arXiv: …`` line of ``extra``, an arxiv.org URL, or an arXiv DOI 10.48550/arXiv.…), the venue
(``publicationTitle``, ``proceedingsTitle``, ``conferenceName``, ``bookTitle``, …, ``repository``,
``websiteTitle``), tags (manual and automatic) as categories, and the full paths of its collections,
nested ones as ``Parent/Child``. A ``/`` inside a collection's own name is written ``∕`` (U+2215) so that
it never reads as nesting; collections in Zotero's trash are left out. Items without an abstract are
skipped and reported with their title. Ids: ``arxiv:``/``doi:`` when known, else ``zotero:<item key>``;
a record's line is its ``itemID`` (``zotero.sqlite:123``). Every library in the file (My Library and
groups) is read; a collection path does not name its library. Each item also lists its attachments
(``ZoteroItem.attachments``: key, path, content type).

Full text on (``ingest --full-text``: ``PASSAGE_TOKENS`` > 0), each item's attachments are read as the item
is yielded (``rag.ingest.loaders.zotero_ft``: the PDF in ``storage/<key>/``, else Zotero's
``.zotero-ft-cache``) and its passages ride on the paper; an item without an abstract but with full text is
no longer skipped: its abstract is taken from that text, and a note says so. An item whose attachments give
no text keeps its abstract, with a note naming the reason. Full text off, attachments are never opened.

Schemas: fields and item types are looked up by name, never by id. Tested on the userdata schemas 79
(Zotero 4: names in ``creatorData``, ``sourceItemID``), 107 (Zotero 5) and 124 (Zotero 7: annotation items,
``deletedCollections``). A database whose tables lack a column this reader uses raises one ``InputError``
naming its schema version and suggesting a CSL-JSON or BibTeX export; so does a file that is not a Zotero
database, a truncated or damaged one, or a library without a regular item — always before any record.
"""

from __future__ import annotations

import logging
import re
import shutil
import sqlite3
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from rag.errors import InputError
from rag.ingest.loaders.base import Item, note
from rag.ingest.loaders.common import is_placeholder, make_paper, problem, split_authors, split_list, squash_spaces
from rag.ingest.loaders.pdf import MAX_PDF_PAGES, PASSAGE_TOKENS
from rag.ingest.loaders.zotero_ft import Attachment, read_item
from rag.records import Paper, assign_id, clean_arxiv_id, clean_doi

log = logging.getLogger(__name__)

ZOTERO_DB = "zotero.sqlite"
SQLITE_MAGIC = b"SQLite format 3\x00"
TESTED_SCHEMAS = (79, 107, 124)  # the userdata schema versions tests/zotero_fixture.py builds
SLASH_IN_NAME = "\u2215"  # "∕": a "/" inside one collection's name, so that "/" always means nesting
_SIDECARS = ("-journal", "-wal")
_COPY_ATTEMPTS = 3
_NOT_PAPERS = frozenset({"note", "attachment", "annotation"})
_TITLE = ("title", "caseName", "nameOfAct", "subject")
_DATE = ("date", "dateDecided", "issueDate", "dateEnacted", "filingDate")
_VENUE = ("publicationTitle", "proceedingsTitle", "conferenceName", "bookTitle", "encyclopediaTitle",
          "dictionaryTitle", "blogTitle", "forumTitle", "programTitle", "repository", "websiteTitle",
          "institution", "university")
_FIELDS = frozenset({*_TITLE, *_DATE, *_VENUE, "abstractNote", "DOI", "url", "extra", "archiveID"})
_ARXIV = re.compile(r"(?:arxiv:\s*|arxiv\.org/(?:abs|pdf)/)([a-z\-]+(?:\.[A-Z]{2})?/\d{7}|\d{4}\.\d{4,5})", re.I)
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.I)
_EXTRA_DOI = re.compile(r"^\s*DOI\s*:\s*(\S+)", re.I | re.M)
_EXPORT = ("export the library from Zotero instead (File → Export Library…, as CSL JSON or BibTeX) and "
           "ingest that file")

# Columns this reader uses, by table; ``creators`` is checked apart (its names moved out of ``creatorData``).
_REQUIRED: dict[str, tuple[str, ...]] = {
    "items": ("itemID", "itemTypeID", "key"),
    "itemTypes": ("itemTypeID", "typeName"),
    "itemData": ("itemID", "fieldID", "valueID"),
    "itemDataValues": ("valueID", "value"),
    "fields": ("fieldID", "fieldName"),
    "itemCreators": ("itemID", "creatorID", "orderIndex"),
    "tags": ("tagID", "name"),
    "itemTags": ("itemID", "tagID"),
    "collections": ("collectionID", "collectionName", "parentCollectionID"),
    "collectionItems": ("collectionID", "itemID"),
    "deletedItems": ("itemID",),
}
_NAMES = ("firstName", "lastName", "fieldMode")


@dataclass
class ZoteroItem:
    """One regular item as read from the database."""

    item_id: int
    key: str
    fields: dict[str, str] = field(default_factory=dict)
    creators: list[tuple[str, str]] = field(default_factory=list)  # (name, creator type) in Zotero's order
    tags: list[str] = field(default_factory=list)
    collections: list[str] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)  # for its full text; not part of the paper


def is_sqlite(path: Path) -> bool:
    """``path`` is a file that starts like an SQLite database."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def library_file(path: Path) -> Path:
    """The database of ``path``: the file itself, or ``zotero.sqlite`` in a Zotero data folder."""
    if path.is_dir():
        db = path / ZOTERO_DB
        if not db.is_file():
            raise InputError(f"is a folder without {ZOTERO_DB}; name the Zotero data folder (Zotero → Settings → "
                             "Advanced → Files and Folders) or the zotero.sqlite file itself", where=str(path))
        return db
    if not path.exists():
        raise InputError("file not found", where=str(path))
    return path


# ---------------------------------------------------------------- a consistent copy, the original untouched

def _stamp(db: Path) -> tuple[tuple[int, int] | None, ...]:
    """Size and modification time of the database and its sidecar files (None: absent)."""
    out: list[tuple[int, int] | None] = []
    for p in (db, *(db.with_name(db.name + s) for s in _SIDECARS)):
        try:
            st = p.stat()
            out.append((st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


@contextmanager
def snapshot(db: Path) -> Iterator[Path]:
    """A private copy of ``db`` (and its ``-journal``/``-wal``) taken while neither changed; removed after."""
    with tempfile.TemporaryDirectory(prefix="paperchat-zotero-") as tmp:
        copy = Path(tmp) / ZOTERO_DB
        for attempt in range(1, _COPY_ATTEMPTS + 1):
            before = _stamp(db)
            for f in Path(tmp).iterdir():
                f.unlink()
            try:
                shutil.copyfile(db, copy)
                for suffix, present in zip(_SIDECARS, before[1:], strict=True):
                    if present is not None:
                        shutil.copyfile(db.with_name(db.name + suffix), Path(tmp) / (ZOTERO_DB + suffix))
            except FileNotFoundError:  # a journal deleted between stat and copy: Zotero just committed
                continue
            except OSError as e:
                raise InputError(f"cannot copy the library to a temporary folder to read it: {e.strerror or e}",
                                 where=str(db)) from None
            if _stamp(db) == before:
                break
            log.info("%s: changed while it was copied (attempt %d); copying again", db, attempt)
        else:
            raise InputError(f"the library changed during each of {_COPY_ATTEMPTS} copies; try again when Zotero "
                             "is idle, or close Zotero", where=str(db))
        yield copy


def _check_header(copy: Path, where: str) -> None:
    """Refuse a file that is not an SQLite database, or is shorter than its header says (truncated)."""
    size = copy.stat().st_size
    with open(copy, "rb") as f:
        head = f.read(100)
    if not head.startswith(SQLITE_MAGIC):
        raise InputError(f"is not an SQLite database; a Zotero library is the {ZOTERO_DB} file in the Zotero data "
                         "folder", where=where)
    if len(head) < 100:
        raise InputError(f"the database is truncated ({size} bytes, shorter than an SQLite header); restore it "
                         f"from a backup (Zotero keeps {ZOTERO_DB}.bak beside it)", where=where)
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    if pages and head[24:28] == head[92:96] and size < page_size * pages:  # the header's page count is valid
        raise InputError(f"the database is truncated: {size} bytes of the {page_size * pages} its header "
                         f"announces; restore it from a backup (Zotero keeps {ZOTERO_DB}.bak beside it)", where=where)


# ---------------------------------------------------------------- reading

def _columns(con: sqlite3.Connection) -> dict[str, set[str]]:
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {n: {r[1] for r in con.execute(f'PRAGMA table_info("{n}")')} for n in names}


def _schema_version(con: sqlite3.Connection, tables: dict[str, set[str]]) -> int | None:
    if not {"schema", "version"} <= tables.get("version", set()):
        return None
    rows = con.execute("SELECT version FROM version WHERE schema LIKE 'userdata%'").fetchall()
    versions = [int(v) for (v,) in rows if isinstance(v, int) or (isinstance(v, str) and v.isdigit())]
    return max(versions) if versions else None


def _check_schema(tables: dict[str, set[str]], version: int | None, where: str) -> str:
    """Which creator layout the database has (``creators`` or ``creatorData``); raise when it cannot be read."""
    if version is None and not {"items", "itemData", "fields"} <= set(tables):
        raise InputError(f"is an SQLite database, but not a Zotero library (no version/items/itemData tables); a "
                         f"Zotero library is the {ZOTERO_DB} file in the Zotero data folder", where=where)
    missing = [f"{t}.{c}" if t in tables else t for t, cols in _REQUIRED.items() for c in cols
               if c not in tables.get(t, set()) and (t in tables or c == cols[0])]
    layout = "creators"
    creators = tables.get("creators", set())
    if not set(_NAMES) <= creators:
        if {"creatorDataID"} <= creators and {"creatorDataID", *_NAMES} <= tables.get("creatorData", set()):
            layout = "creatorData"
        else:
            missing.append("creators.firstName/lastName/fieldMode")
    if missing:
        age = ("unknown" if version is None else
               "newer than" if version > max(TESTED_SCHEMAS) else "older than" if version < min(TESTED_SCHEMAS)
               else "between")
        known = ", ".join(map(str, TESTED_SCHEMAS))
        raise InputError(f"Zotero database schema {version if version is not None else '(no version)'} ({age} the "
                         f"versions paperchat reads: {known}) lacks what paperchat reads ({', '.join(missing[:6])}); "
                         f"{_EXPORT}", where=where)
    if version is not None and version > max(TESTED_SCHEMAS):
        log.warning("%s: Zotero database schema %d is newer than paperchat was tested with (%d); its tables have "
                    "what paperchat reads, so it is read", where, version, max(TESTED_SCHEMAS))
    return layout


def _names(con: sqlite3.Connection, tables: dict[str, set[str]], base: str, combined: str, id_col: str,
           name_col: str) -> dict[int, str]:
    """id → name from a lookup table and, when present, its ``…Combined`` twin (custom types and fields)."""
    out: dict[int, str] = {}
    for table in (combined, base):
        if {id_col, name_col} <= tables.get(table, set()):
            rows = con.execute(f"SELECT {id_col}, {name_col} FROM {table}")
            out.update((i, n) for i, n in rows if isinstance(n, str))
    return out


def _collection_paths(rows: list[tuple[int, str, int | None]], trashed: set[int]) -> dict[int, str]:
    """collectionID → "Parent/Child" path; collections in the trash (or under one) have none."""
    by_id = {cid: (name, parent) for cid, name, parent in rows}
    paths: dict[int, str] = {}
    for cid in by_id:
        segments: list[str] = []
        seen: set[int] = set()
        at: int | None = cid
        while at is not None:
            if at in seen or at not in by_id or at in trashed:  # a cycle, a dangling parent, or trashed
                segments = []
                break
            seen.add(at)
            name, at = by_id[at]
            segments.append(squash_spaces(str(name or "")).replace("/", SLASH_IN_NAME) or "(untitled)")
        if segments:
            paths[cid] = "/".join(reversed(segments))
    return paths


def _read(con: sqlite3.Connection, where: str) -> tuple[list[ZoteroItem], int, int | None]:
    """The regular items of the library (and how many items the trash held, and the schema version)."""
    tables = _columns(con)
    version = _schema_version(con, tables)
    layout = _check_schema(tables, version, where)
    field_names = _names(con, tables, "fields", "fieldsCombined", "fieldID", "fieldName")
    type_names = _names(con, tables, "itemTypes", "itemTypesCombined", "itemTypeID", "typeName")
    children = [f"SELECT itemID FROM {t}" for t in ("itemNotes", "itemAttachments", "itemAnnotations", "feedItems")
                if "itemID" in tables.get(t, set())]
    excluded = " UNION ".join(["SELECT itemID FROM deletedItems", *children])
    trashed = con.execute("SELECT COUNT(*) FROM deletedItems").fetchone()[0]
    items: dict[int, ZoteroItem] = {}
    for item_id, key, type_id in con.execute(
            f"SELECT itemID, key, itemTypeID FROM items WHERE itemID NOT IN ({excluded}) ORDER BY itemID"):
        if type_names.get(type_id) not in _NOT_PAPERS:
            items[item_id] = ZoteroItem(item_id, str(key))
    if not items:
        return [], trashed, version
    wanted = [fid for fid, name in field_names.items() if name in _FIELDS]
    marks = ",".join("?" * len(wanted))
    for item_id, fid, value in con.execute(
            f"SELECT d.itemID, d.fieldID, v.value FROM itemData d JOIN itemDataValues v ON v.valueID = d.valueID "
            f"WHERE d.fieldID IN ({marks})", wanted):
        if item_id in items and value is not None:
            items[item_id].fields[field_names[fid]] = str(value)
    names = "c" if layout == "creators" else "cd"
    join = "" if layout == "creators" else " JOIN creatorData cd ON cd.creatorDataID = c.creatorDataID"
    has_types = "creatorTypeID" in tables["itemCreators"] and {"creatorTypeID", "creatorType"} <= tables.get(
        "creatorTypes", set())
    kind = "ct.creatorType" if has_types else "NULL"
    types = " LEFT JOIN creatorTypes ct ON ct.creatorTypeID = ic.creatorTypeID" if has_types else ""
    for item_id, first, last, mode, ctype in con.execute(
            f"SELECT ic.itemID, {names}.firstName, {names}.lastName, {names}.fieldMode, {kind} FROM itemCreators ic "
            f"JOIN creators c ON c.creatorID = ic.creatorID{join}{types} ORDER BY ic.itemID, ic.orderIndex"):
        if item_id in items:
            name = (last or "") if mode == 1 else f"{first or ''} {last or ''}"
            if name.strip():
                items[item_id].creators.append((name, str(ctype or "")))
    for item_id, name in con.execute("SELECT it.itemID, t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID "
                                     "ORDER BY it.itemID, t.name COLLATE NOCASE"):
        if item_id in items and isinstance(name, str):
            items[item_id].tags.append(name)
    trashed_collections = ({cid for (cid,) in con.execute("SELECT collectionID FROM deletedCollections")}
                           if "collectionID" in tables.get("deletedCollections", set()) else set())
    paths = _collection_paths(
        con.execute("SELECT collectionID, collectionName, parentCollectionID FROM collections").fetchall(),
        trashed_collections)
    member: dict[int, set[str]] = defaultdict(set)
    for cid, item_id in con.execute("SELECT collectionID, itemID FROM collectionItems"):
        if item_id in items and cid in paths:
            member[item_id].add(paths[cid])
    for item_id, sets in member.items():
        items[item_id].collections = sorted(sets)
    for parent, key, path, kind in _attachment_rows(con, tables):
        if parent in items:
            items[parent].attachments.append(Attachment(str(key), path, kind))
    return list(items.values()), trashed, version


def _attachment_rows(con: sqlite3.Connection, tables: dict[str, set[str]]) -> list[tuple[int, str, str, str]]:
    """(parent itemID, attachment key, path, content type) of the attachments outside the trash."""
    cols = tables.get("itemAttachments", set())
    parent = next((c for c in ("parentItemID", "sourceItemID") if c in cols), None)  # 107+, 79
    kind = next((f"a.{c}" for c in ("contentType", "mimeType") if c in cols), "NULL")
    if parent is None or "path" not in cols:
        return []
    return con.execute(f"SELECT a.{parent}, i.key, a.path, {kind} FROM itemAttachments a JOIN items i ON "
                       f"i.itemID = a.itemID WHERE a.itemID NOT IN (SELECT itemID FROM deletedItems) "
                       f"ORDER BY a.itemID").fetchall()


def read_library(db: Path) -> list[ZoteroItem]:
    """Every regular item of the Zotero database ``db``, read from a private copy.

    Raises ``InputError`` for a file that is not a Zotero database, a schema without what is read, a truncated
    or damaged database, or a library without a regular item.
    """
    where = str(db)
    with snapshot(db) as copy:
        _check_header(copy, where)
        try:
            with closing(sqlite3.connect(copy)) as con:
                items, trashed, version = _read(con, where)
        except sqlite3.DatabaseError as e:
            raise InputError(f"cannot read the database ({e}): it is damaged or not a Zotero database; restore it "
                             f"from a backup (Zotero keeps {ZOTERO_DB}.bak beside it) or {_EXPORT}",
                             where=where) from None
    if not items:
        what = f" outside the trash ({trashed} there)" if trashed else ""
        raise InputError(f"the Zotero library holds no regular item{what}: nothing to ingest", where=where)
    log.info("%s: Zotero schema %s, %d regular items (%d in the trash left out)", db, version, len(items), trashed)
    return items


# ---------------------------------------------------------------- records

def _first(fields: dict[str, str], names: tuple[str, ...]) -> str | None:
    return next((fields[n] for n in names if (fields.get(n) or "").strip()), None)


def arxiv_of(fields: dict[str, str], doi: str | None) -> str | None:
    """The arXiv id from ``archiveID``, ``extra``, the URL, or an arXiv DOI, in that order."""
    for name in ("archiveID", "extra", "url"):
        m = _ARXIV.search(fields.get(name) or "")
        if m:
            return m.group(1)
    m = _ARXIV_DOI.match(doi or "")
    return clean_arxiv_id(m.group(1)) if m else None


def item_record(db: Path, item: ZoteroItem, budget: int = 0) -> Item:
    """One regular item → ``Paper`` (with its collection paths), or a ``RecordProblem`` naming its title. With
    ``budget`` (full text on: the largest passage, in tokens), the paper carries the passages of its
    attachments' text, and an item without an abstract takes one from that text (noted)."""
    f = item.fields
    title = _first(f, _TITLE)
    named = f"{squash_spaces(title or 'untitled')!r}, Zotero item {item.key}"
    text, why = read_item(db.parent, item.attachments, MAX_PDF_PAGES.get(), budget) if budget else (None, "")
    abstract = f.get("abstractNote")
    extra_doi = _EXTRA_DOI.search(f.get("extra") or "")
    doi = clean_doi(f.get("DOI")) or clean_doi(extra_doi.group(1) if extra_doi else None)
    if abstract is None or not abstract.strip() or is_placeholder(abstract):
        if text is None or not text.abstract.strip():
            missing = f"; no full text either: {why}" if why else ""
            # stored by an earlier run with its full text? then it stays, and in its collections
            pid = assign_id("zotero", item.key, doi=doi, arxiv_id=arxiv_of(f, doi), abstract="")
            return replace(problem(db, item.item_id, f"no abstract: {squash_spaces(title or 'untitled')!r} "
                                                     f"(Zotero item {item.key}){missing}"),
                           keeps=(pid, tuple(item.collections)))
        abstract = text.abstract
        note(db, item.item_id, f"no abstract in Zotero, taken from the full text ({named}): {text.abstract_origin}")
    elif why:
        note(db, item.item_id, f"full text not read, abstract only ({named}): {why}")
    authors = [n for n, kind in item.creators if kind == "author"] or [n for n, _ in item.creators]
    paper = make_paper(db, item.item_id, abstract=abstract, title=title, authors=split_authors(authors),
                       categories=split_list(item.tags), year=_first(f, _DATE), venue=_first(f, _VENUE),
                       url=f.get("url"), doi=doi, arxiv_id=arxiv_of(f, doi), kind="zotero", own_id=item.key)
    if isinstance(paper, Paper):
        paper.collections = list(item.collections)
        if text is not None:
            paper.passages = text.passages
    return paper


class ZoteroLoader:
    """Loader for Zotero databases (``zotero.sqlite``) and Zotero data folders."""

    name = "zotero"

    def sniff(self, path: Path, head: str) -> bool:
        """An SQLite file, or a folder holding ``zotero.sqlite``; whether it has Zotero's tables is checked on
        the copy that is read (the original may be locked by a running Zotero)."""
        return (path.is_dir() and (path / ZOTERO_DB).is_file()) or (path.is_file() and is_sqlite(path))

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Read the whole library now (every error comes before any record), then yield its items in
        ``itemID`` order."""
        db = library_file(path)
        items = read_library(db)
        budget = PASSAGE_TOKENS.get()  # full text on: each item's attachments are read as it is yielded
        return (item_record(db, it, budget) for it in items)
