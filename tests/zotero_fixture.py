"""Zotero databases built with Zotero's real schema, for the Zotero loader's tests.

``build(path, version)`` creates ``path`` with the tables of one Zotero userdata schema version and fills it
with ``LIBRARY``: regular items of several types, creators (single-field names too, editors), tags, nested
collections (one with a "/" in its name), a child note, a standalone note, an attachment, an annotation, an
item in the trash, an item without an abstract, an RSS feed item (schemas with feeds) and a collection in
the trash (schema 124). ``EXPECTED`` is what the loader must make of it.

The table definitions below restate Zotero's, table by table and column by column (names, types, defaults,
keys, indexes), for the tables the loader reads and the ones the fixture fills; the other tables of each
schema are left out. Sources (the schema version is the first line of each ``userdata.sql``):

* 79 (Zotero 4): ``resource/schema/userdata.sql`` "-- 79" and ``resource/schema/system.sql`` (itemTypes,
  fields, creatorTypes) at github.com/orange-vertex/zotero commit d06d6ddd7628c2332d79ab9ee99887913600067a
  (a fork of zotero/zotero). Names live in ``creatorData``; notes and attachments point to their parent with
  ``sourceItemID``; the tag type is on ``tags``; My Library has ``libraryID`` NULL.
* 107 (Zotero 5): ``resource/schema/userdata.sql`` "-- 107" at github.com/zotero/zotero commit
  f7d895ab52ce0e2ebaca37d40925578a912ace39; item type, field and creator type ids and names from
  ``resource/schema/system-107.sql`` at the same commit (the lookup tables' definitions are those of
  ``system.sql``, identical to the 79 ones). Names on ``creators``; ``parentItemID``; the tag type on
  ``itemTags``; ``libraries.type``; feeds.
* 124 (Zotero 7): ``resource/schema/userdata.sql`` "-- 124" at github.com/alexbrainer73/zotero commit
  d848996f9079d33f17c66c3d6d0764d3d4fd7be7 (a fork of zotero/zotero): the lookup tables moved into
  userdata.sql with their ``…Combined`` twins, annotation items (``itemAnnotations``), ``deletedCollections``.
  Item types and fields of this schema come from Zotero's global schema (github.com/zotero/zotero-schema
  ``schema.json``: the ``preprint`` type, ``archiveID``, ``repository``); the global schema carries names, not
  ids, so the ids here are numbered anew (different from 107's) — the loader looks everything up by name.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

VERSIONS = (79, 107, 124)

# ---------------------------------------------------------------- table definitions, per schema version

_LOOKUP = """
CREATE TABLE itemTypes (
    itemTypeID INTEGER PRIMARY KEY,
    typeName TEXT,
    templateItemTypeID INT,
    display INT DEFAULT 1
);
CREATE TABLE fields (
    fieldID INTEGER PRIMARY KEY,
    fieldName TEXT,
    fieldFormatID INT,
    FOREIGN KEY (fieldFormatID) REFERENCES fieldFormats(fieldFormatID)
);
CREATE TABLE creatorTypes (
    creatorTypeID INTEGER PRIMARY KEY,
    creatorType TEXT
);
"""

SCHEMA_79 = _LOOKUP + """
CREATE TABLE version (schema TEXT PRIMARY KEY, version INT NOT NULL);
CREATE INDEX schema ON version(schema);
CREATE TABLE items (
    itemID INTEGER PRIMARY KEY,
    itemTypeID INT NOT NULL,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT,
    key TEXT NOT NULL,
    UNIQUE (libraryID, key),
    FOREIGN KEY (libraryID) REFERENCES libraries(libraryID)
);
CREATE TABLE itemDataValues (valueID INTEGER PRIMARY KEY, value UNIQUE);
CREATE TABLE itemData (
    itemID INT,
    fieldID INT,
    valueID,
    PRIMARY KEY (itemID, fieldID),
    FOREIGN KEY (itemID) REFERENCES items(itemID),
    FOREIGN KEY (fieldID) REFERENCES fields(fieldID),
    FOREIGN KEY (valueID) REFERENCES itemDataValues(valueID)
);
CREATE INDEX itemData_fieldID ON itemData(fieldID);
CREATE TABLE itemNotes (
    itemID INTEGER PRIMARY KEY,
    sourceItemID INT,
    note TEXT,
    title TEXT,
    FOREIGN KEY (itemID) REFERENCES items(itemID),
    FOREIGN KEY (sourceItemID) REFERENCES items(itemID)
);
CREATE INDEX itemNotes_sourceItemID ON itemNotes(sourceItemID);
CREATE TABLE itemAttachments (
    itemID INTEGER PRIMARY KEY,
    sourceItemID INT,
    linkMode INT,
    mimeType TEXT,
    charsetID INT,
    path TEXT,
    originalPath TEXT,
    syncState INT DEFAULT 0,
    storageModTime INT,
    storageHash TEXT,
    FOREIGN KEY (itemID) REFERENCES items(itemID),
    FOREIGN KEY (sourceItemID) REFERENCES items(itemID)
);
CREATE INDEX itemAttachments_sourceItemID ON itemAttachments(sourceItemID);
CREATE TABLE tags (
    tagID INTEGER PRIMARY KEY,
    name TEXT NOT NULL COLLATE NOCASE,
    type INT NOT NULL,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT,
    key TEXT NOT NULL,
    UNIQUE (libraryID, name, type),
    UNIQUE (libraryID, key)
);
CREATE TABLE itemTags (
    itemID INT,
    tagID INT,
    PRIMARY KEY (itemID, tagID),
    FOREIGN KEY (itemID) REFERENCES items(itemID),
    FOREIGN KEY (tagID) REFERENCES tags(tagID)
);
CREATE INDEX itemTags_tagID ON itemTags(tagID);
CREATE TABLE creators (
    creatorID INTEGER PRIMARY KEY,
    creatorDataID INT NOT NULL,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT,
    key TEXT NOT NULL,
    UNIQUE (libraryID, key),
    FOREIGN KEY (creatorDataID) REFERENCES creatorData(creatorDataID)
);
CREATE INDEX creators_creatorDataID ON creators(creatorDataID);
CREATE TABLE creatorData (
    creatorDataID INTEGER PRIMARY KEY,
    firstName TEXT,
    lastName TEXT,
    shortName TEXT,
    fieldMode INT,
    birthYear INT
);
CREATE INDEX creatorData_name ON creatorData(lastName, firstName);
CREATE TABLE itemCreators (
    itemID INT,
    creatorID INT,
    creatorTypeID INT DEFAULT 1,
    orderIndex INT DEFAULT 0,
    PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex),
    FOREIGN KEY (itemID) REFERENCES items(itemID),
    FOREIGN KEY (creatorID) REFERENCES creators(creatorID)
    FOREIGN KEY (creatorTypeID) REFERENCES creatorTypes(creatorTypeID)
);
CREATE TABLE collections (
    collectionID INTEGER PRIMARY KEY,
    collectionName TEXT NOT NULL,
    parentCollectionID INT DEFAULT NULL,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT,
    key TEXT NOT NULL,
    UNIQUE (libraryID, key),
    FOREIGN KEY (parentCollectionID) REFERENCES collections(collectionID)
);
CREATE TABLE collectionItems (
    collectionID INT,
    itemID INT,
    orderIndex INT DEFAULT 0,
    PRIMARY KEY (collectionID, itemID),
    FOREIGN KEY (collectionID) REFERENCES collections(collectionID),
    FOREIGN KEY (itemID) REFERENCES items(itemID)
);
CREATE INDEX itemID ON collectionItems(itemID);
CREATE TABLE deletedItems (itemID INTEGER PRIMARY KEY, dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
CREATE INDEX deletedItems_dateDeleted ON deletedItems(dateDeleted);
CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, libraryType TEXT NOT NULL);
CREATE TABLE annotations (
    annotationID INTEGER PRIMARY KEY,
    itemID INT,
    parent TEXT,
    textNode INT,
    offset INT,
    x INT,
    y INT,
    cols INT,
    rows INT,
    text TEXT,
    collapsed BOOL,
    dateModified DATE,
    FOREIGN KEY (itemID) REFERENCES itemAttachments(itemID)
);
CREATE INDEX annotations_itemID ON annotations(itemID);
"""

# Tables of 107 that 124 keeps unchanged (124 adds an index on itemData.valueID and columns to itemAttachments).
_Z5_ITEMS = """
CREATE TABLE version (schema TEXT PRIMARY KEY, version INT NOT NULL);
CREATE INDEX schema ON version(schema);
CREATE TABLE items (
    itemID INTEGER PRIMARY KEY,
    itemTypeID INT NOT NULL,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL,
    key TEXT NOT NULL,
    version INT NOT NULL DEFAULT 0,
    synced INT NOT NULL DEFAULT 0,
    UNIQUE (libraryID, key),
    FOREIGN KEY (libraryID) REFERENCES libraries(libraryID) ON DELETE CASCADE
);
CREATE INDEX items_synced ON items(synced);
CREATE TABLE itemDataValues (valueID INTEGER PRIMARY KEY, value UNIQUE);
CREATE TABLE itemData (
    itemID INT,
    fieldID INT,
    valueID,
    PRIMARY KEY (itemID, fieldID),
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (fieldID) REFERENCES fieldsCombined(fieldID),
    FOREIGN KEY (valueID) REFERENCES itemDataValues(valueID)
);
CREATE INDEX itemData_fieldID ON itemData(fieldID);
CREATE TABLE itemNotes (
    itemID INTEGER PRIMARY KEY,
    parentItemID INT,
    note TEXT,
    title TEXT,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (parentItemID) REFERENCES items(itemID) ON DELETE CASCADE
);
CREATE INDEX itemNotes_parentItemID ON itemNotes(parentItemID);
CREATE TABLE tags (tagID INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE itemTags (
    itemID INT NOT NULL,
    tagID INT NOT NULL,
    type INT NOT NULL,
    PRIMARY KEY (itemID, tagID),
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (tagID) REFERENCES tags(tagID) ON DELETE CASCADE
);
CREATE INDEX itemTags_tagID ON itemTags(tagID);
CREATE TABLE creators (
    creatorID INTEGER PRIMARY KEY,
    firstName TEXT,
    lastName TEXT,
    fieldMode INT,
    UNIQUE (lastName, firstName, fieldMode)
);
CREATE TABLE itemCreators (
    itemID INT NOT NULL,
    creatorID INT NOT NULL,
    creatorTypeID INT NOT NULL DEFAULT 1,
    orderIndex INT NOT NULL DEFAULT 0,
    PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex),
    UNIQUE (itemID, orderIndex),
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (creatorID) REFERENCES creators(creatorID) ON DELETE CASCADE,
    FOREIGN KEY (creatorTypeID) REFERENCES creatorTypes(creatorTypeID)
);
CREATE INDEX itemCreators_creatorTypeID ON itemCreators(creatorTypeID);
CREATE TABLE collections (
    collectionID INTEGER PRIMARY KEY,
    collectionName TEXT NOT NULL,
    parentCollectionID INT DEFAULT NULL,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL,
    key TEXT NOT NULL,
    version INT NOT NULL DEFAULT 0,
    synced INT NOT NULL DEFAULT 0,
    UNIQUE (libraryID, key),
    FOREIGN KEY (libraryID) REFERENCES libraries(libraryID) ON DELETE CASCADE,
    FOREIGN KEY (parentCollectionID) REFERENCES collections(collectionID) ON DELETE CASCADE
);
CREATE INDEX collections_synced ON collections(synced);
CREATE TABLE collectionItems (
    collectionID INT NOT NULL,
    itemID INT NOT NULL,
    orderIndex INT NOT NULL DEFAULT 0,
    PRIMARY KEY (collectionID, itemID),
    FOREIGN KEY (collectionID) REFERENCES collections(collectionID) ON DELETE CASCADE,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE
);
CREATE INDEX collectionItems_itemID ON collectionItems(itemID);
CREATE TABLE feeds (
    libraryID INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    url TEXT NOT NULL UNIQUE,
    lastUpdate TIMESTAMP,
    lastCheck TIMESTAMP,
    lastCheckError TEXT,
    cleanupReadAfter INT,
    cleanupUnreadAfter INT,
    refreshInterval INT,
    FOREIGN KEY (libraryID) REFERENCES libraries(libraryID) ON DELETE CASCADE
);
CREATE TABLE feedItems (
    itemID INTEGER PRIMARY KEY,
    guid TEXT NOT NULL UNIQUE,
    readTime TIMESTAMP,
    translatedTime TIMESTAMP,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE
);
CREATE TABLE deletedItems (
    itemID INTEGER PRIMARY KEY,
    dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE
);
CREATE INDEX deletedItems_dateDeleted ON deletedItems(dateDeleted);
CREATE TABLE libraries (
    libraryID INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    editable INT NOT NULL,
    filesEditable INT NOT NULL,
    version INT NOT NULL DEFAULT 0,
    storageVersion INT NOT NULL DEFAULT 0,
    lastSync INT NOT NULL DEFAULT 0,
    archived INT NOT NULL DEFAULT 0
);
"""

SCHEMA_107 = _LOOKUP + _Z5_ITEMS + """
CREATE TABLE itemAttachments (
    itemID INTEGER PRIMARY KEY,
    parentItemID INT,
    linkMode INT,
    contentType TEXT,
    charsetID INT,
    path TEXT,
    syncState INT DEFAULT 0,
    storageModTime INT,
    storageHash TEXT,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (parentItemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (charsetID) REFERENCES charsets(charsetID) ON DELETE SET NULL
);
CREATE INDEX itemAttachments_parentItemID ON itemAttachments(parentItemID);
CREATE TABLE annotations (
    annotationID INTEGER PRIMARY KEY,
    itemID INT NOT NULL,
    parent TEXT,
    textNode INT,
    offset INT,
    x INT,
    y INT,
    cols INT,
    rows INT,
    text TEXT,
    collapsed BOOL,
    dateModified DATE,
    FOREIGN KEY (itemID) REFERENCES itemAttachments(itemID) ON DELETE CASCADE
);
CREATE INDEX annotations_itemID ON annotations(itemID);
"""

SCHEMA_124 = _LOOKUP + """
CREATE TABLE itemTypesCombined (
    itemTypeID INT NOT NULL,
    typeName TEXT NOT NULL,
    display INT DEFAULT 1 NOT NULL,
    custom INT NOT NULL,
    PRIMARY KEY (itemTypeID)
);
CREATE TABLE fieldsCombined (
    fieldID INT NOT NULL,
    fieldName TEXT NOT NULL,
    label TEXT,
    fieldFormatID INT,
    custom INT NOT NULL,
    PRIMARY KEY (fieldID)
);
""" + _Z5_ITEMS + """
CREATE INDEX itemData_valueID ON itemData(valueID);
CREATE TABLE itemAttachments (
    itemID INTEGER PRIMARY KEY,
    parentItemID INT,
    linkMode INT,
    contentType TEXT,
    charsetID INT,
    path TEXT,
    syncState INT DEFAULT 0,
    storageModTime INT,
    storageHash TEXT,
    lastProcessedModificationTime INT,
    fileSize INT,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (parentItemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (charsetID) REFERENCES charsets(charsetID) ON DELETE SET NULL
);
CREATE INDEX itemAttachments_parentItemID ON itemAttachments(parentItemID);
CREATE TABLE itemAnnotations (
    itemID INTEGER PRIMARY KEY,
    parentItemID INT NOT NULL,
    type INTEGER NOT NULL,
    authorName TEXT,
    text TEXT,
    comment TEXT,
    color TEXT,
    pageLabel TEXT,
    sortIndex TEXT NOT NULL,
    position TEXT NOT NULL,
    isExternal INT NOT NULL,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (parentItemID) REFERENCES itemAttachments(itemID)
);
CREATE INDEX itemAnnotations_parentItemID ON itemAnnotations(parentItemID);
CREATE TABLE deletedCollections (
    collectionID INTEGER PRIMARY KEY,
    dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL,
    FOREIGN KEY (collectionID) REFERENCES collections(collectionID) ON DELETE CASCADE
);
CREATE INDEX deletedCollections_dateDeleted ON deletedCollections(dateDeleted);
"""

SCHEMAS = {79: SCHEMA_79, 107: SCHEMA_107, 124: SCHEMA_124}

# Ids of system-107.sql (the same in Zotero 4's system.sql); 124 numbers the global schema's names anew.
_TYPES_107 = {"note": 1, "book": 2, "bookSection": 3, "journalArticle": 4, "webpage": 13, "attachment": 14,
              "report": 15, "conferencePaper": 33}
_FIELDS_107 = {"url": 1, "publisher": 8, "publicationTitle": 12, "date": 14, "extra": 22, "DOI": 26,
               "institution": 31, "conferenceName": 84, "abstractNote": 90, "websiteTitle": 91, "title": 110,
               "proceedingsTitle": 114, "bookTitle": 115}
_CREATOR_TYPES_107 = {"author": 1, "contributor": 2, "editor": 3}
_TYPES_124 = {name: i for i, name in enumerate(
    ["annotation", "attachment", "book", "bookSection", "conferencePaper", "journalArticle", "note", "preprint",
     "report", "webpage"], start=201)}
_FIELDS_124 = {name: i for i, name in enumerate(
    ["title", "abstractNote", "publicationTitle", "date", "DOI", "url", "extra", "proceedingsTitle",
     "conferenceName", "bookTitle", "websiteTitle", "institution", "publisher", "repository", "archiveID"],
    start=301)}
_CREATOR_TYPES_124 = {"author": 401, "contributor": 402, "editor": 403}

# ---------------------------------------------------------------- the library, independent of the schema


@dataclass
class Entry:
    """One Zotero item. ``creators``: (first, last, fieldMode, creator type) in Zotero's order."""

    item_id: int
    key: str
    type: str
    fields: dict[str, str] = field(default_factory=dict)
    creators: list[tuple[str, str, int, str]] = field(default_factory=list)
    tags: list[tuple[str, int]] = field(default_factory=list)  # (name, 0 manual / 1 automatic)
    collections: list[int] = field(default_factory=list)
    parent: int | None = None  # notes, attachments, annotations
    trashed: bool = False
    feed: bool = False
    since: int = 79  # the first schema version that has this item's type and fields
    file: str = "tides.pdf"  # an attachment's stored file ("storage:<file>" in storage/<key>/)
    content_type: str = "application/pdf"  # an attachment's


ABS = {
    "tides": "Sparse Gaussian processes forecast sea level at tide gauges from a handful of inducing points, "
             "with periodic kernels for the tidal constituents.",
    "attn": "A transformer that attends only to local windows and a few global tokens matches full attention "
            "on long documents at linear cost.",
    "kernels": "We survey positive definite kernels on manifolds and give conditions under which the Gaussian "
               "kernel stays positive definite on spheres.",
    "web": "A blog post explaining how okapi BM25 ranks documents by term frequency saturation and document "
           "length normalisation.",
    "arxivdoi": "Diffusion models for coastal flooding: a score-based generative model samples storm surge fields "
                "conditioned on wind forcing.",
    "preprint": "Preprint: retrieval-augmented question answering over a personal paper library, with citations "
                "checked against the retrieved abstracts.",
    "trashed": "This article was moved to the trash and must never reach paperchat even though it has an abstract.",
    "feed": "An RSS feed item with an abstract: feeds are not part of the user's library and are not papers.",
}

# Collections: id → (name, parent id). "A/B testing" has a slash in its own name.
COLLECTIONS = {1: ("Oceans", None), 2: ("Tides", 1), 3: ("Storm surge", 2), 4: ("ML", None), 5: ("NLP", 4),
               6: ("Reading list", None), 7: ("A/B testing", 4)}
TRASHED_COLLECTION = (8, "Old drafts")  # schema 124: in deletedCollections

LIBRARY = [
    Entry(1, "TIDES001", "journalArticle",
          {"title": "Sparse Gaussian processes for tide gauges", "abstractNote": ABS["tides"],
           "date": "2019-08-00 August 2019", "DOI": "10.1234/Tides.2019.7", "publicationTitle": "Ocean Modelling",
           "url": "https://example.org/tides"},
          [("Ada", "Lovelace", 0, "author"), ("", "OpenTide Consortium", 1, "author"), ("Ed", "Itor", 0, "editor"),
           ("Grace", "Hopper", 0, "author")],
          [("Gaussian processes", 0), ("oceanography", 1)], [3, 6, 8]),
    Entry(2, "ATTN0002", "conferencePaper",
          {"title": "Local attention for long documents", "abstractNote": ABS["attn"],
           "date": "2021-12-06 2021-12-06", "proceedingsTitle": "Advances in Neural Information Processing Systems",
           "conferenceName": "NeurIPS 2021", "url": "https://arxiv.org/abs/2101.00001v2"},
          [("Ashish", "Vaswani", 0, "author"), ("Noam", "Shazeer", 0, "author")],
          [("transformers", 0), ("Gaussian processes", 0)], [5, 6]),
    Entry(3, "KERN0003", "bookSection",
          {"title": "Kernels on manifolds", "abstractNote": ABS["kernels"], "date": "2020",
           "bookTitle": "Handbook of Kernel Methods",
           "extra": "Citation Key: feragen2020\narXiv: 2102.00002\nDOI: 10.5555/Handbook.Kernels.3"},
          [("Aasa", "Feragen", 0, "author"), ("Søren", "Hauberg", 0, "author")], [], [4, 7]),
    Entry(4, "WEB00004", "webpage",
          {"title": "BM25 explained", "abstractNote": ABS["web"], "date": "2018-03-00 March 2018",
           "websiteTitle": "Search Blog", "url": "https://blog.example.org/bm25"},
          [("", "Search Team", 1, "author")], [("information retrieval", 0)], []),
    Entry(5, "NOABS005", "journalArticle",
          {"title": "A draft without an abstract", "date": "2022", "publicationTitle": "Nowhere"},
          [("Nobody", "Inparticular", 0, "author")], [], [6]),
    Entry(6, "TRASH006", "journalArticle",
          {"title": "A trashed article", "abstractNote": ABS["trashed"], "date": "2017"},
          [("Tom", "Trash", 0, "author")], [("oceanography", 1)], [1], trashed=True),
    Entry(7, "NOTE0007", "note", parent=1),
    Entry(8, "PDF00008", "attachment", {"title": "Full Text PDF", "url": "https://example.org/tides.pdf"}, parent=1),
    Entry(9, "ANNO0009", "annotation", parent=8, since=124),
    Entry(10, "NOTE0010", "note"),  # a standalone note
    Entry(11, "DIFF0011", "journalArticle",
          {"title": "Diffusion models for coastal flooding", "abstractNote": ABS["arxivdoi"],
           "date": "2023-05-02 2023-05-02", "DOI": "10.48550/arXiv.2104.00004", "publicationTitle": "arXiv"},
          [("Wei", "Zhang", 0, "author")], [("generative models", 0)], [2]),
    Entry(12, "FEED0012", "journalArticle", {"title": "A feed item", "abstractNote": ABS["feed"], "date": "2024"},
          [("Fee", "Dreader", 0, "author")], feed=True, since=107),
    Entry(13, "PREP0013", "preprint",
          {"title": "Question answering over a personal library", "abstractNote": ABS["preprint"],
           "date": "2024-02-00 February 2024", "repository": "arXiv", "archiveID": "arXiv:2103.00003",
           "url": "https://doi.org/10.48550/arXiv.2103.00003"},
          [("Lin", "Chen", 0, "author"), ("María", "García", 0, "author")], [("RAG", 0)], [6], since=124),
]

NOTE_HTML = "<div class=\"zotero-note\"><p>My notes: this looks like an abstract but is a note.</p></div>"


@dataclass(frozen=True)
class Expected:
    """What the loader must make of one regular item."""

    title: str
    authors: list[str]
    year: int
    doi: str | None
    arxiv_id: str | None
    venue: str
    categories: list[str]
    collections: list[str]
    id: str


EXPECTED: dict[int, Expected] = {
    1: Expected("Sparse Gaussian processes for tide gauges", ["Ada Lovelace", "OpenTide Consortium", "Grace Hopper"],
                2019, "10.1234/tides.2019.7", None, "Ocean Modelling", ["Gaussian processes", "oceanography"],
                ["Oceans/Tides/Storm surge", "Reading list"], "doi:10.1234/tides.2019.7"),
    2: Expected("Local attention for long documents", ["Ashish Vaswani", "Noam Shazeer"], 2021, None, "2101.00001",
                "Advances in Neural Information Processing Systems", ["Gaussian processes", "transformers"],
                ["ML/NLP", "Reading list"], "arxiv:2101.00001"),
    3: Expected("Kernels on manifolds", ["Aasa Feragen", "Søren Hauberg"], 2020, "10.5555/handbook.kernels.3",
                "2102.00002", "Handbook of Kernel Methods", [], ["ML", "ML/A\u2215B testing"], "arxiv:2102.00002"),
    4: Expected("BM25 explained", ["Search Team"], 2018, None, None, "Search Blog", ["information retrieval"], [],
                "zotero:WEB00004"),
    11: Expected("Diffusion models for coastal flooding", ["Wei Zhang"], 2023, "10.48550/arxiv.2104.00004",
                 "2104.00004", "arXiv", ["generative models"], ["Oceans/Tides"], "arxiv:2104.00004"),
    13: Expected("Question answering over a personal library", ["Lin Chen", "María García"], 2024, None, "2103.00003",
                 "arXiv", ["RAG"], ["Reading list"], "arxiv:2103.00003"),
}
NO_ABSTRACT = {5: "A draft without an abstract"}


def expected(version: int) -> dict[int, Expected]:
    """The papers a library built with ``version`` holds, by itemID."""
    return {i: e for i, e in EXPECTED.items() if next(x for x in LIBRARY if x.item_id == i).since <= version}


# ---------------------------------------------------------------- writing one schema


class _Writer:
    def __init__(self, con: sqlite3.Connection, version: int) -> None:
        self.con, self.version = con, version
        new = version >= 124
        self.types = _TYPES_124 if new else _TYPES_107
        self.fields = _FIELDS_124 if new else _FIELDS_107
        self.creator_types = _CREATOR_TYPES_124 if new else _CREATOR_TYPES_107
        self.values: dict[str, int] = {}
        self.creators: dict[tuple[str, str, int], int] = {}
        self.tags: dict[tuple[str, int], int] = {}
        self.user_library: int | None = None if version < 107 else 1

    def lookups(self) -> None:
        c = self.con
        c.executemany("INSERT INTO itemTypes VALUES (?, ?, NULL, 1)", [(i, n) for n, i in self.types.items()])
        c.executemany("INSERT INTO fields VALUES (?, ?, NULL)", [(i, n) for n, i in self.fields.items()])
        c.executemany("INSERT INTO creatorTypes VALUES (?, ?)", [(i, n) for n, i in self.creator_types.items()])
        if self.version >= 124:  # what Zotero fills at startup from the global schema and the (empty) custom tables
            c.executemany("INSERT INTO itemTypesCombined VALUES (?, ?, 1, 0)", [(i, n) for n, i in self.types.items()])
            c.executemany("INSERT INTO fieldsCombined VALUES (?, ?, NULL, NULL, 0)",
                          [(i, n) for n, i in self.fields.items()])
        c.execute("INSERT INTO version VALUES ('userdata', ?)", (self.version,))
        if self.version < 107:
            c.execute("INSERT INTO version VALUES ('system', 32)")
        else:
            c.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (1, 'user', 1, 1)")
            c.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (2, 'feed', 0, 0)")
            c.execute("INSERT INTO feeds (libraryID, name, url) VALUES (2, 'arXiv cs.IR', 'https://example.org/rss')")

    def value(self, v: str) -> int:
        if v not in self.values:
            self.values[v] = len(self.values) + 1
            self.con.execute("INSERT INTO itemDataValues VALUES (?, ?)", (self.values[v], v))
        return self.values[v]

    def creator(self, first: str, last: str, mode: int) -> int:
        k = (first, last, mode)
        if k not in self.creators:
            cid = self.creators[k] = len(self.creators) + 1
            if self.version < 107:
                self.con.execute("INSERT INTO creatorData (creatorDataID, firstName, lastName, shortName, fieldMode) "
                                 "VALUES (?, ?, ?, '', ?)", (cid, first, last, mode))
                self.con.execute("INSERT INTO creators (creatorID, creatorDataID, libraryID, key) "
                                 "VALUES (?, ?, NULL, ?)", (cid, cid, f"CRTR{cid:04d}"))
            else:
                self.con.execute("INSERT INTO creators VALUES (?, ?, ?, ?)", (cid, first, last, mode))
        return self.creators[k]

    def tag(self, item_id: int, name: str, kind: int) -> None:
        if self.version < 107:  # the type belongs to the tag; a name may exist twice, manual and automatic
            if (name, kind) not in self.tags:
                tid = self.tags[(name, kind)] = len(self.tags) + 1
                self.con.execute("INSERT INTO tags (tagID, name, type, libraryID, key) VALUES (?, ?, ?, NULL, ?)",
                                 (tid, name, kind, f"TAG{tid:05d}"))
            self.con.execute("INSERT INTO itemTags VALUES (?, ?)", (item_id, self.tags[(name, kind)]))
        else:
            if (name, 0) not in self.tags:
                tid = self.tags[(name, 0)] = len(self.tags) + 1
                self.con.execute("INSERT INTO tags VALUES (?, ?)", (tid, name))
            self.con.execute("INSERT INTO itemTags VALUES (?, ?, ?)", (item_id, self.tags[(name, 0)], kind))

    def collections(self) -> None:
        rows = dict(COLLECTIONS)
        if self.version >= 124:
            rows[TRASHED_COLLECTION[0]] = (TRASHED_COLLECTION[1], None)
        for cid, (name, parent) in rows.items():
            self.con.execute("INSERT INTO collections (collectionID, collectionName, parentCollectionID, libraryID, "
                             "key) VALUES (?, ?, ?, ?, ?)", (cid, name, parent, self.user_library, f"COLL{cid:04d}"))
        if self.version >= 124:
            self.con.execute("INSERT INTO deletedCollections (collectionID) VALUES (?)", (TRASHED_COLLECTION[0],))

    def item(self, e: Entry) -> None:
        c, v = self.con, self.version
        library = 2 if e.feed else self.user_library
        c.execute("INSERT INTO items (itemID, itemTypeID, libraryID, key, dateAdded, dateModified) "
                  "VALUES (?, ?, ?, ?, '2024-01-02 03:04:05', '2024-01-02 03:04:05')",
                  (e.item_id, self.types[e.type], library, e.key))
        for name, val in e.fields.items():
            c.execute("INSERT INTO itemData VALUES (?, ?, ?)", (e.item_id, self.fields[name], self.value(val)))
        # insert creators last-first, so that only orderIndex gives their order
        for order, (first, last, mode, kind) in reversed(list(enumerate(e.creators))):
            c.execute("INSERT INTO itemCreators VALUES (?, ?, ?, ?)",
                      (e.item_id, self.creator(first, last, mode), self.creator_types[kind], order))
        for name, kind in e.tags:
            self.tag(e.item_id, name, kind)
        for order, cid in enumerate(e.collections):
            if cid in COLLECTIONS or v >= 124:
                c.execute("INSERT INTO collectionItems VALUES (?, ?, ?)", (cid, e.item_id, order))
        parent = "sourceItemID" if v < 107 else "parentItemID"
        if e.type == "note":
            c.execute(f"INSERT INTO itemNotes (itemID, {parent}, note, title) VALUES (?, ?, ?, 'My notes')",
                      (e.item_id, e.parent, NOTE_HTML))
        elif e.type == "attachment":
            mime = "mimeType" if v < 107 else "contentType"
            c.execute(f"INSERT INTO itemAttachments (itemID, {parent}, linkMode, {mime}, path) "
                      "VALUES (?, ?, 0, ?, ?)", (e.item_id, e.parent, e.content_type, f"storage:{e.file}"))
            if v < 124:  # Zotero 4/5 annotations: rows on an attachment, not items
                c.execute("INSERT INTO annotations (itemID, parent, textNode, offset, x, y, cols, rows, text, "
                          "collapsed, dateModified) VALUES (?, 'p', 0, 0, 10, 10, 20, 5, 'see eq. 3', 0, "
                          "'2024-01-02')", (e.item_id,))
        elif e.type == "annotation":
            c.execute("INSERT INTO itemAnnotations (itemID, parentItemID, type, authorName, text, comment, color, "
                      "pageLabel, sortIndex, position, isExternal) VALUES (?, ?, 1, '', 'highlighted text that is "
                      "long enough to pass for an abstract if it were read', 'a comment', '#ffd400', '3', "
                      "'00002|000123|00456', '{\"pageIndex\":2,\"rects\":[[1,2,3,4]]}', 0)", (e.item_id, e.parent))
        if e.trashed:
            c.execute("INSERT INTO deletedItems (itemID, dateDeleted) VALUES (?, '2024-02-03 04:05:06')", (e.item_id,))
        if e.feed:
            c.execute("INSERT INTO feedItems (itemID, guid) VALUES (?, ?)", (e.item_id, f"urn:feed:{e.item_id}"))


def build(path: Path, version: int, entries: list[Entry] | None = None, page_size: int | None = None) -> Path:
    """Create the Zotero database ``path`` with schema ``version`` holding ``entries`` (default ``LIBRARY``,
    the items the version has)."""
    assert version in SCHEMAS, version
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as con:
        if page_size:
            con.execute(f"PRAGMA page_size = {page_size}")
        con.executescript(SCHEMAS[version])
        w = _Writer(con, version)
        w.lookups()
        w.collections()
        for e in LIBRARY if entries is None else entries:
            if e.since <= version:
                w.item(e)
    con.close()
    return path
